"""The events a turn yields to the surface that runs it.

Events are small frozen objects with the `type` names of the chat event contract and a
`to_dict()` that gives the JSON-ready mapping surfaces send. Clients ignore fields they do
not know, so events may carry more than the contract's minimum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from chatomon.schemas import Message, TurnReport

__all__ = ["TextChunk", "TurnDone", "TurnSuspended"]


@dataclass(frozen=True, slots=True)
class TextChunk:
    """One fragment of the reply the user sees.

    Attributes:
        content: The text fragment.
        reset: True on the first fragment after text that the output chain rejected once
            it had already been shown (possible only with streaming output orbitals):
            the client discards what it showed of this turn's reply before appending.
    """

    type: ClassVar[Literal["text_chunk"]] = "text_chunk"
    content: str
    reset: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The wire form: `{"type": "text_chunk", "content": ...}` (plus `reset` when set)."""
        data: dict[str, Any] = {"type": self.type, "content": self.content}
        if self.reset:
            data["reset"] = True
        return data


@dataclass(frozen=True, slots=True)
class TurnDone:
    """The last event of a turn that produced an answer.

    Attributes:
        reply: The full text sent to the user (authoritative over the chunks).
        report: The TurnReport of the turn.
        history: The conversation as the next turn should receive it.
    """

    type: ClassVar[Literal["done"]] = "done"
    reply: str
    report: TurnReport
    history: tuple[Message, ...]

    def to_dict(self) -> dict[str, Any]:
        """The wire form: type, turn id, final action and reply; never the whole report."""
        return {
            "type": self.type,
            "turn_id": self.report.turn_id,
            "final_action": self.report.final_action,
            "reply": self.reply,
        }


@dataclass(frozen=True, slots=True)
class TurnSuspended:
    """The last event of a turn whose nucleus must wait (for a mutation's confirmation).

    Nothing is reported yet: the turn continues with `Atom.resume(snapshot)` on an atom
    whose nucleus is rebuilt from `state`, and its one TurnReport is written when it
    finishes.

    Attributes:
        snapshot: JSON-ready state of the turn (orbital results, attempts, usage, ...).
        state: The nucleus' JSON-ready state (`NucleusSuspend.state`).
        user_message: The user message as history records it (the placeholder when blocked).
    """

    type: ClassVar[Literal["suspended"]] = "suspended"
    snapshot: Mapping[str, Any]
    state: Mapping[str, Any]
    user_message: str
