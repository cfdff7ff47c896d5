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
from chatomon.django.audit.signals import chat_mutation_executed

@receiver(chat_mutation_executed)
def notify(sender, *, mutation, result, user, **kwargs):
    if result["status"] == "executed":
        ...
```
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal

from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.activity import Activity

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


# activity kind -> the signal it is sent as, and its keyword arguments (payload key -> name).
_SIGNALLED: dict[str, tuple[Signal, dict[str, str]]] = {
    "message_received": (chat_message_received, {"text": "text"}),
    "tool_called": (
        chat_tool_called,
        {"id": "call_id", "name": "name", "args": "args", "result": "result"},
    ),
    "mutation_executed": (
        chat_mutation_executed,
        {"id": "call_id", "mutation": "mutation", "input": "input", "result": "result"},
    ),
    "error": (chat_error, {"code": "code", "message": "message", "exception": "exception"}),
}


def send_activity(activity: Activity) -> None:
    """A ChatService activity listener: sends the signal the activity stands for, if any."""
    signalled = _SIGNALLED.get(activity.kind)
    if signalled is None:
        return
    signal, names = signalled
    _send(
        signal,
        user=activity.actor,
        conversation_id=activity.conversation_id,
        turn_id=activity.turn_id,
        **{name: activity.payload[key] for key, name in names.items()},
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
