"""Suspending a turn into JSON-ready data and restoring it, in any process.

A turn suspends while its nucleus is writing a reply (a mutation waits for a decision).
The snapshot keeps everything the report will need (the input chain's results and
decision, earlier output attempts, usage, steps, escalation) and where the current reply
stands (its guidance and the text written and shown so far), so that the restored turn
finishes exactly as the uninterrupted one would have, with one TurnReport.

Orbital annotations are kept when they are JSON-ready; anything else is dropped (and
logged by key), because a snapshot may be read by another process.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chatomon._engine.decisions import InputRuling
from chatomon.errors import TurnStateError
from chatomon.schemas import (
    InputDecision,
    Message,
    NucleusStep,
    OrbitalResult,
    OutputAttempt,
    OutputDecision,
    PlannedTurnReport,
    TokenUsage,
    TurnPause,
)
from chatomon.turn import Turn

if TYPE_CHECKING:
    from chatomon.atom import Atom

__all__ = ["SNAPSHOT_VERSION", "ReplyProgress", "restore_turn", "snapshot_turn"]

logger = logging.getLogger("chatomon")

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class ReplyProgress:
    """Where the reply being written stands.

    Attributes:
        guidance: The guidance of this attempt.
        reset: Whether the next shown chunk must tell the client to reset.
        written: The text the nucleus wrote so far in this attempt.
        released: The part of it already shown to the user.
        halted: Whether a prefix check failed, so nothing more is shown until the end.
    """

    guidance: tuple[str, ...]
    reset: bool = False
    written: str = ""
    released: str = ""
    halted: bool = False


def snapshot_turn(turn: Turn, progress: ReplyProgress) -> dict[str, Any]:
    """The JSON-ready state of a turn whose nucleus suspends during a reply.

    The turn is "suspended" afterwards: it neither finishes nor aborts (no report), the
    turn restored from the snapshot does.
    """
    ruling = turn._input
    if ruling is None or turn.report is not None:
        raise TurnStateError(
            "only a turn whose input was checked and that has not finished can suspend",
            state=turn.state,
            operation="suspend",
        )
    turn._suspended = True
    return {
        "version": SNAPSHOT_VERSION,
        "atom": turn.atom.name,
        "text": turn.text,
        "history": [m.model_dump(mode="json") for m in turn.history],
        "conversation_id": turn.conversation_id,
        "turn_id": turn.turn_id,
        "started_at": turn.started_at.isoformat(),
        "elapsed_ms": (time.perf_counter() - turn._started) * 1000,
        "annotations": _json_ready(turn._annotations),
        "input_decision": ruling.decision.model_dump(mode="json"),
        "input_final_action": ruling.final_action,
        "input_results": _dump(turn._input_results),
        "input_not_run": list(turn._input_not_run),
        "attempts": _dump(turn._attempts),
        "last_output": _dump_one(turn._last_output),
        "ending": turn._ending,
        "escalated": turn._escalated,
        "usage": turn._usage.model_dump(mode="json"),
        "steps": _dump(turn._steps),
        "pauses": _dump(turn._pauses),
        "planned": _dump_one(turn._planned),
        # Tool results are JSON-ready by the tool contract; default=str keeps a stray value.
        "tool_results": json.loads(json.dumps(turn._tool_results, default=str)),
        "current_message": turn.current_message.model_dump(mode="json"),
        "progress": {
            "guidance": list(progress.guidance),
            "reset": progress.reset,
            "written": progress.written,
            "released": progress.released,
            "halted": progress.halted,
        },
    }


def restore_turn(atom: Atom, data: Mapping[str, Any]) -> tuple[Turn, ReplyProgress]:
    """The turn a snapshot describes, ready for its nucleus to continue the reply.

    Raises:
        TurnStateError: For a snapshot of another version or of another atom.
    """
    if data.get("version") != SNAPSHOT_VERSION or data.get("atom") != atom.name:
        raise TurnStateError(
            f"cannot resume a turn of atom {data.get('atom')!r} (snapshot version "
            f"{data.get('version')!r}) with atom {atom.name!r} (version {SNAPSHOT_VERSION})",
            state="suspended",
            operation="resume",
        )
    turn = Turn(
        atom,
        data["text"],
        history=[Message.model_validate(m) for m in data["history"]],
        conversation_id=data["conversation_id"],
        turn_id=data["turn_id"],
    )
    turn.started_at = datetime.fromisoformat(data["started_at"])
    # The report's duration counts active time: the wait for the decision is not in it.
    turn._started = time.perf_counter() - data["elapsed_ms"] / 1000
    turn._annotations = dict(data["annotations"])
    turn._input = InputRuling(
        InputDecision.model_validate(data["input_decision"]), data["input_final_action"]
    )
    turn._input_results = tuple(OrbitalResult.model_validate(r) for r in data["input_results"])
    turn._input_not_run = tuple(data["input_not_run"])
    turn._attempts = [OutputAttempt.model_validate(a) for a in data["attempts"]]
    last = data["last_output"]
    turn._last_output = None if last is None else OutputDecision.model_validate(last)
    turn._ending = data["ending"]
    turn._escalated = data["escalated"]
    turn._usage = TokenUsage.model_validate(data["usage"])
    turn._steps = [NucleusStep.model_validate(s) for s in data["steps"]]
    turn._pauses = [TurnPause.model_validate(p) for p in data["pauses"]]
    planned = data.get("planned")  # absent from turns suspended before planned turns existed
    turn._planned = None if planned is None else PlannedTurnReport.model_validate(planned)
    # Absent from turns suspended before output orbitals saw tool results.
    turn._tool_results = list(data.get("tool_results", ()))
    turn._current_message = Message.model_validate(data["current_message"])
    progress = data["progress"]
    return turn, ReplyProgress(
        guidance=tuple(progress["guidance"]),
        reset=progress["reset"],
        written=progress["written"],
        released=progress["released"],
        halted=progress["halted"],
    )


def _dump(models: Any) -> list[Any]:
    return [m.model_dump(mode="json") for m in models]


def _dump_one(model: Any) -> Any:
    return None if model is None else model.model_dump(mode="json")


def _json_ready(annotations: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in annotations.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            logger.warning("annotation %r is not JSON-ready and is not kept across a suspend", key)
            continue
        kept[key] = value
    return kept
