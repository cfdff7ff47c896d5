"""What a run observed of a case, turn by turn, and what a judge concludes about it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chatomon.evals.cases import EvalCase
from chatomon.schemas import TokenUsage, TurnReport

__all__ = ["CaseObservation", "TurnObservation", "Verdict"]

_DECISIONS = {"approved": "approve", "rejected": "reject"}


@dataclass(frozen=True)
class Verdict:
    """One judge's conclusion about a case; a failing one says why."""

    judge: str
    passed: bool
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.judge}: {'passed' if self.passed else 'FAILED'}" + (
            f" ({self.reason})" if self.reason else ""
        )


@dataclass(frozen=True)
class TurnObservation:
    """What one user turn did, taken from its events.

    Attributes:
        user: The user message.
        answer: The final reply ("" when the turn ended without one).
        events: Every event of the turn, including those after a confirmation.
        tool_calls: `{id, name, args}` (and `task_id` in a planned turn) per tool call.
        tool_results: `{id, name, result}` (and `task_id`) per tool result.
        confirmations: Each `confirm_mutation` event with the `decision` taken
            ("approve", "reject", "expired", or None when it was never answered).
        error: The `error` event that ended the turn, if one did.
        report: The turn's TurnReport, when the run could read it.
    """

    user: str
    answer: str = ""
    events: tuple[dict[str, Any], ...] = ()
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_results: tuple[dict[str, Any], ...] = ()
    confirmations: tuple[dict[str, Any], ...] = ()
    error: dict[str, Any] | None = None
    report: TurnReport | None = None

    @classmethod
    def from_events(
        cls, user: str, events: Iterable[Mapping[str, Any]], report: TurnReport | None = None
    ) -> TurnObservation:
        """Build the observation from a turn's ChatService events (run and resumes)."""
        seen = [dict(event) for event in events]
        decided = {
            event["id"]: _DECISIONS.get(event.get("status", ""), event.get("status"))
            for event in seen
            if event.get("type") == "confirmation_resolved"
        }
        pick = ("id", "name", "args", "result", "task_id")
        calls = tuple(
            {k: e[k] for k in pick if k in e} for e in seen if e.get("type") == "tool_call"
        )
        results = tuple(
            {k: e[k] for k in pick if k in e} for e in seen if e.get("type") == "tool_result"
        )
        confirmations = tuple(
            {**event, "decision": decided.get(event.get("id"))}
            for event in seen
            if event.get("type") == "confirm_mutation"
        )
        done = [event for event in seen if event.get("type") == "done"]
        errors = [event for event in seen if event.get("type") == "error"]
        if done and isinstance(done[-1].get("reply"), str):
            answer = done[-1]["reply"]
        else:
            answer = "".join(
                str(e.get("content", "")) for e in seen if e.get("type") == "text_chunk"
            )
        return cls(
            user=user,
            answer=answer,
            events=tuple(seen),
            tool_calls=calls,
            tool_results=results,
            confirmations=confirmations,
            error=errors[-1] if errors else None,
            report=report,
        )


@dataclass(frozen=True)
class CaseObservation:
    """A case as it ran: its turns, how long it took, and what it used.

    Attributes:
        case: The case.
        turns: One observation per user turn, in order.
        duration_ms: Wall time of the whole case.
        usage: Tokens of every provider round of the case.
        provider_rounds: How many completions the provider played.
    """

    case: EvalCase
    turns: tuple[TurnObservation, ...]
    duration_ms: float = 0.0
    usage: TokenUsage = field(default_factory=TokenUsage)
    provider_rounds: int = 0
