"""The tool loop's events, with the `type` names and fields of the chat event contract.

`TextChunk` and the engine's `done` come from `chatomon.events`; these are the events a
data turn adds. Their wire forms are built in one place, `chatomon.chat.pipeline.wire`:
a tool call's and a tool result's from their `to_dict()` (the contract's fields, before
redaction), a confirmation's from the record it becomes (`confirmation_event`) or, with
no store, from the event itself (`asked_confirmation_event`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from chatomon.chat.tools.results import is_tool_error

__all__ = ["ConfirmMutation", "ToolCallStarted", "ToolResult"]


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model requested a server-side tool: `{"type": "tool_call", "id", "name", "args"}`.

    Attributes:
        task_id: The planned task that made the call (planned turns only; on the wire too).
    """

    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    args: Mapping[str, Any]
    task_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form (with `task_id` in a planned turn)."""
        data = {"type": self.type, "id": self.id, "name": self.name, "args": dict(self.args)}
        return _with_task(data, self.task_id)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool ran: `{"type": "tool_result", "id", "name", "result"}`.

    Attributes:
        task_id: The planned task that made the call (planned turns only; on the wire too).
    """

    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    result: Any
    task_id: str | None = None

    @property
    def is_error(self) -> bool:
        """Whether the result is a tool error the model should correct."""
        return is_tool_error(self.result)

    def to_dict(self) -> dict[str, Any]:
        """The wire form (with `task_id` in a planned turn)."""
        data = {"type": self.type, "id": self.id, "name": self.name, "result": self.result}
        return _with_task(data, self.task_id)


@dataclass(frozen=True, slots=True)
class ConfirmMutation:
    """A mutation waits for approval (on the wire: `confirm_mutation`, built by the pipeline).

    Attributes:
        id: The confirmation id (the tool call's id).
        mutation: The mutation name.
        input: The validated input.
        preview: What would change (field, before, after; or the new values).
        approver: "client" (the end user decides) or "staff" (a staff member does).
    """

    type: ClassVar[str] = "confirm_mutation"
    id: str
    mutation: str
    input: Mapping[str, Any]
    preview: Any = None
    approver: str = "client"


def _with_task(data: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    # Tool-loop events keep the contract's exact shape; planned ones name their task.
    if task_id is not None:
        data["task_id"] = task_id
    return data
