"""The seed's four chat signals, sent for every transport with Django's robust delivery.

- `chat_message_received(text)`: an accepted user message;
- `chat_tool_called(call_id, name, args, result)`: a completed server-side tool call;
- `chat_mutation_executed(call_id, mutation, input, result)`: a mutation's outcome,
  immediately or after its confirmation: inspect `result["status"]` ("executed",
  "rejected", "timed_out", "error");
- `chat_error(code, message, exception)`: a transport or provider failure.

Every signal also receives `user` (the asking actor), `conversation_id` and `turn_id`; the
sender is `ChatService`. A receiver that raises is logged and does not affect the turn or
the other receivers.

```python
from django.dispatch import receiver
from chatomon.django.signals import chat_mutation_executed

@receiver(chat_mutation_executed)
def notify(sender, *, mutation, result, user, **kwargs):
    if result["status"] == "executed":
        ...
```
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal

from chatomon.chat.activity import Activity
from chatomon.chat.service import ChatService

__all__ = [
    "chat_error",
    "chat_message_received",
    "chat_mutation_executed",
    "chat_tool_called",
    "send_activity",
    "send_chat_error",
]

chat_message_received = Signal()
"""An accepted user message with user and conversation context."""
chat_tool_called = Signal()
"""A completed server-side tool call with arguments and result."""
chat_mutation_executed = Signal()
"""A mutation's outcome, immediate or after its confirmation; inspect `result["status"]`."""
chat_error = Signal()
"""A transport or provider failure with server-side context."""


def send_activity(activity: Activity) -> None:
    """A ChatService activity listener: sends the signal the activity stands for, if any."""
    context = {
        "user": activity.actor,
        "conversation_id": activity.conversation_id,
        "turn_id": activity.turn_id,
    }
    payload = activity.payload
    if activity.kind == "message_received":
        _send(chat_message_received, text=payload["text"], **context)
    elif activity.kind == "tool_called":
        _send(
            chat_tool_called,
            call_id=payload["id"],
            name=payload["name"],
            args=payload["args"],
            result=payload["result"],
            **context,
        )
    elif activity.kind == "mutation_executed":
        _send(
            chat_mutation_executed,
            call_id=payload["id"],
            mutation=payload["mutation"],
            input=payload["input"],
            result=payload["result"],
            **context,
        )
    elif activity.kind == "error":
        _send(
            chat_error,
            code=payload["code"],
            message=payload["message"],
            exception=payload["exception"],
            **context,
        )


def send_chat_error(
    code: str,
    message: str,
    *,
    exception: BaseException | None = None,
    user: Any = None,
    conversation_id: str | None = None,
    turn_id: str | None = None,
) -> None:
    """Send `chat_error` for a failure outside a turn (a transport's, say)."""
    _send(
        chat_error,
        code=code,
        message=message,
        exception=exception,
        user=user,
        conversation_id=conversation_id,
        turn_id=turn_id,
    )


def _send(signal: Signal, **kwargs: Any) -> None:
    # send_robust: a receiver's exception is caught (and logged by Django), never raised.
    signal.send_robust(sender=ChatService, **kwargs)
