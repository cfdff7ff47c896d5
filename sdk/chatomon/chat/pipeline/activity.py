"""What a chat turn did, told to listeners: signals, audit sinks, metrics.

`ChatService` delivers an `Activity` for each step that matters to observers. Listeners
are sync or async callables; one that raises is logged (by type, never its message, which
may quote content) and never breaks the turn.

| kind                     | payload                                                 |
|--------------------------|---------------------------------------------------------|
| `message_received`       | `text`: the accepted user message                       |
| `assistant_message`      | `text`, `final_action`: the final reply of a turn       |
| `tool_called`            | `id`, `name`, `args`, `result`: every completed tool call |
| `mutation_executed`      | `id`, `mutation`, `input`, `result` (see below)          |
| `confirmation_requested` | `id`, `mutation`, `input`, `approver`, `expires_at`      |
| `confirmation_resolved`  | `id`, `status`, `decided_by`, `reason`                   |
| `turn_finished`          | `status`, `final_action`, `duration_ms`, `usage`, `report` |
| `error`                  | `code`, `message` (public), `exception` (or None)        |
| `planned`                | `event` and the allowlisted fields of a planned audit event |

A mutation's `result["status"]` is "executed", "unchanged" (its preview changed nothing:
nothing was written and nobody was asked), "rejected", "timed_out" or "error".

Listeners run on the event loop of the turn, in the order given, each awaited before the
next: a sync listener must not block (one that needs the ORM returns an awaitable, e.g.
through `asgiref.sync.sync_to_async`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Activity", "ActivityKind", "ActivityListener", "deliver"]

logger = logging.getLogger(__name__)

ActivityKind = Literal[
    "message_received",
    "assistant_message",
    "tool_called",
    "mutation_executed",
    "confirmation_requested",
    "confirmation_resolved",
    "turn_finished",
    "error",
    "planned",
]


@dataclass(frozen=True, slots=True)
class Activity:
    """One observable step of a chat turn.

    Attributes:
        kind: What happened (see the module's table).
        conversation_id: The conversation, as a string.
        turn_id: The turn.
        actor: Who asked (the end user, also when staff or expiry resumed the turn).
        payload: The kind's fields.
    """

    kind: ActivityKind
    conversation_id: str
    turn_id: str
    actor: Any
    payload: Mapping[str, Any] = field(default_factory=dict)


ActivityListener = Callable[[Activity], Awaitable[None] | None]
"""Receives every Activity of a service's turns."""


async def deliver(listeners: Sequence[ActivityListener], activity: Activity) -> None:
    """Give `activity` to every listener; a failing listener is logged and skipped."""
    for listener in listeners:
        try:
            result = listener(activity)
            if inspect.isawaitable(result):
                await result
        except Exception as error:  # noqa: BLE001 - observers never break a turn
            _failed(listener, activity, error)


def _failed(listener: ActivityListener, activity: Activity, error: Exception) -> None:
    logger.error(
        "chat activity listener %s failed on %s with %s",
        getattr(listener, "__qualname__", type(listener).__name__),
        activity.kind,
        type(error).__name__,
    )
