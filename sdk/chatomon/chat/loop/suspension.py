"""What the tool loop counts during a reply, and its JSON form for a suspended turn.

When a mutation waits for a decision the loop suspends: its messages so far, its counters
and the waiting call are saved (`LoopState.to_dict`) with the pending confirmation, and a
loop built with `LoopResume` continues from them in any process once the decision is in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from chatomon.chat.prompts import REJECTED_RESULT, TIMED_OUT_RESULT
from chatomon.data.mutation_runs import change_summary
from chatomon.providers.base import Message, ToolCall

__all__ = [
    "LoopResume",
    "LoopState",
    "Outcome",
    "PendingCall",
    "declined_result",
]

Outcome = Literal["approved", "rejected", "expired", "cancelled"]
"""How a waiting mutation was decided."""


@dataclass(frozen=True, slots=True)
class PendingCall:
    """The mutate call that waits, with the text the model wrote alongside it."""

    call: ToolCall
    answer: str
    mutation: str
    input: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "call": self.call.to_dict(),
            "answer": self.answer,
            "mutation": self.mutation,
            "input": dict(self.input),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingCall:
        """The call `to_dict` saved."""
        return cls(
            call=ToolCall.from_dict(data["call"]),
            answer=data["answer"],
            mutation=data["mutation"],
            input=dict(data["input"]),
        )


@dataclass
class LoopState:
    """What the loop counts while one reply is written."""

    rounds: int = 0
    retries: int = 0
    mutations: int = 0
    tool_calls: int = 0
    recovered: bool = False
    messages: list[Message] = field(default_factory=list)

    def to_dict(self, pending: PendingCall) -> dict[str, Any]:
        """JSON-ready form, with the call that waits."""
        return {
            "rounds": self.rounds,
            "retries": self.retries,
            "mutations": self.mutations,
            "tool_calls": self.tool_calls,
            "recovered": self.recovered,
            "messages": [m.to_dict() for m in self.messages],
            "pending": pending.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoopState:
        """The state `to_dict` saved (without the pending call)."""
        return cls(
            rounds=data["rounds"],
            retries=data["retries"],
            mutations=data["mutations"],
            tool_calls=data["tool_calls"],
            recovered=data["recovered"],
            # from_dict also reads states saved earlier (`name`, no `tool_result`).
            messages=[Message.from_dict(m) for m in data["messages"]],
        )


@dataclass(frozen=True, slots=True)
class LoopResume:
    """Where a resumed loop starts: the saved state and the decision on its mutation.

    Attributes:
        state: `LoopState.to_dict(...)` as saved when the loop suspended.
        outcome: The decision: "approved" runs the mutation; anything else gives the model
            the declined result.
        preview: What the mutation would have changed, as its confirmation showed it
            (the declined result says so).
    """

    state: Mapping[str, Any]
    outcome: Outcome
    preview: Any = None

    @property
    def pending(self) -> PendingCall:
        """The call that waited."""
        return PendingCall.from_dict(self.state["pending"])


def declined_result(
    mutation: str, outcome: Outcome, preview: Any, sensitive: Callable[[str], bool]
) -> dict[str, Any]:
    """The tool result the model sees for a mutation that was not approved.

    A rejection names what was not changed (`change_summary` of the preview), never the
    values of a field `sensitive` (the service's redaction rule) says to keep.
    """
    if outcome == "expired":
        return {
            "status": "timed_out",
            "mutation": mutation,
            "reason": "confirmation_timed_out",
            "message": TIMED_OUT_RESULT,
        }
    change = change_summary(preview, sensitive)
    message = REJECTED_RESULT.format(change=f" ({change})" if change else "")
    return {"status": "rejected", "mutation": mutation, "message": message}
