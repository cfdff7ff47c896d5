"""Private helpers of `ChatService`: event dicts, text history, and the items a turn stores."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon.chat.events import ToolCallStarted, ToolResult
from chatomon.chat.store.records import MessageItem, PendingConfirmation
from chatomon.events import TurnDone
from chatomon.providers.base import Message as ProviderMessage
from chatomon.providers.base import ToolCall
from chatomon.schemas import Message

__all__ = [
    "GENERIC_ERROR_MESSAGE",
    "TERMINAL_TYPES",
    "UNAVAILABLE_MESSAGE",
    "TurnItems",
    "confirmation_event",
    "done_event",
    "error_event",
    "resolved_event",
    "text_history",
]

GENERIC_ERROR_MESSAGE = "Something went wrong. Please try again."
UNAVAILABLE_MESSAGE = "This confirmation is no longer available."
"""The message of `confirmation_unavailable`: unknown, foreign, decided or expired."""
TERMINAL_TYPES = frozenset({"done", "error", "confirm_mutation"})
"""The event types that end a turn's stream (a confirm_mutation suspends the turn)."""


def error_event(code: str, message: str, **fields: Any) -> dict[str, Any]:
    """An `error` event: a stable code and a message safe to show."""
    return {"type": "error", "code": code, "message": message, **fields}


def done_event(done: TurnDone, conversation_id: str) -> dict[str, Any]:
    """The `done` event: the engine's wire form plus usage and the conversation id."""
    usage = done.report.usage
    return {
        **done.to_dict(),
        "conversation_id": conversation_id,
        "escalated": done.report.escalated,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }


def confirmation_event(confirmation: PendingConfirmation, preview: Any) -> dict[str, Any]:
    """The `confirm_mutation` event; `id` is the public confirmation id to resolve."""
    return {
        "type": "confirm_mutation",
        "id": str(confirmation.id),
        "call_id": confirmation.call_id,
        "mutation": confirmation.mutation,
        "input": dict(confirmation.input),
        "preview": preview,
        "approver": confirmation.approver,
        "expires_at": confirmation.expires_at.isoformat(),
        "conversation_id": str(confirmation.conversation_id),
    }


def resolved_event(confirmation: PendingConfirmation) -> dict[str, Any]:
    """The `confirmation_resolved` event: how a confirmation was decided, and by whom."""
    return {
        "type": "confirmation_resolved",
        "id": str(confirmation.id),
        "status": confirmation.status,
        "mutation": confirmation.mutation,
        "decided_by": confirmation.decided_by,
        "reason": confirmation.reason,
    }


def text_history(messages: Iterable[ProviderMessage]) -> list[Message]:
    """The built context as user/assistant text, the history the Atom's orbitals read.

    Native tool messages become assistant context text and a summary an assistant line;
    the tool loop itself receives the native messages.
    """
    history: list[Message] = []
    for message in messages:
        if message.role == "user":
            history.append(Message(role="user", content=message.content))
        elif message.role == "tool":
            text = f"[Earlier result of tool {message.name or 'unknown'}: {message.content}]"
            history.append(Message(role="assistant", content=text))
        elif message.role == "system":
            history.append(Message(role="assistant", content=f"[{message.content}]"))
        else:
            history.append(Message(role="assistant", content=_assistant_text(message)))
    return [m for m in history if m.content]


def _assistant_text(message: ProviderMessage) -> str:
    calls = ", ".join(
        f"{c.name}({json.dumps(dict(c.arguments), default=str)})" for c in message.tool_calls
    )
    return " ".join(p for p in (message.content, f"[Called {calls}]" if calls else "") if p)


@dataclass
class TurnItems:
    """The conversation items one turn adds, collected from its events.

    A turn that suspends stores what it has so far (`take_stored`) and saves the open
    tool call group (`to_dict`), so the turn that resumes it stores only the rest.
    """

    tool_items: list[MessageItem] = field(default_factory=list)
    user_stored: bool = False
    _calls: list[ToolCall] = field(default_factory=list)

    def observe(self, event: object) -> None:
        """Record a tool call or result event; other events are ignored."""
        if isinstance(event, ToolCallStarted):
            self._calls.append(ToolCall(id=event.id, name=event.name, arguments=event.args))
        elif isinstance(event, ToolResult):
            if self._calls:
                # Results follow every call of their completion: the group is complete.
                self.tool_items.append(MessageItem.calls(self._calls))
                self._calls = []
            self.tool_items.append(MessageItem.tool_result(event.id, event.name, event.result))

    def arguments_of(self, call_id: str) -> Mapping[str, Any]:
        """The arguments of a call of this turn (empty when unknown)."""
        for item in reversed(self.tool_items):
            for call in item.tool_calls:
                if call.id == call_id:
                    return call.arguments
        return {}

    def take_stored(self, text: str, user_message: str) -> list[MessageItem]:
        """The items to store now that the turn suspends; later ones come at its end."""
        taken = [] if self.user_stored else [_user_item(text, user_message)]
        taken += self.tool_items
        self.tool_items, self.user_stored = [], True
        return taken

    def finished(self, text: str, done: TurnDone) -> Sequence[MessageItem]:
        """Every item of the answered turn not stored yet: user message, tool rows, reply."""
        reply = [*self.tool_items, MessageItem.assistant(done.reply)]
        if self.user_stored:
            return reply
        users = [m for m in done.history if m.role == "user"]
        return [_user_item(text, users[-1].content if users else text), *reply]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form of what a resumed turn needs: the open call group."""
        return {"user_stored": self.user_stored, "calls": [c.to_dict() for c in self._calls]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnItems:
        """The items `to_dict` saved."""
        calls = [ToolCall.from_dict(c) for c in data["calls"]]
        return cls(user_stored=data["user_stored"], _calls=calls)


def _user_item(text: str, stored: str) -> MessageItem:
    """The user message as stored: the text, or only the placeholder that replaced it."""
    return MessageItem.user(text) if stored == text else MessageItem.blocked_user(stored)
