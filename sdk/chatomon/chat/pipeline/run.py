"""The state of one turn while the pipeline drives it.

Who asked, where the turn is stored, and the conversation items it collects from its
events (`TurnItems`, also saved with a suspended turn so its resumption stores the rest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from chatomon.chat.events import ConfirmMutation, ToolCallStarted, ToolResult
from chatomon.chat.store.records import MessageItem, Owner
from chatomon.events import TurnDone
from chatomon.providers.base import ToolCall

__all__ = ["TurnItems", "TurnRun"]


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


@dataclass
class TurnRun:
    """One turn being driven: who asked, where it is stored, what it collected."""

    owner: Owner
    conversation_id: UUID
    turn_id: str
    actor: Any
    text: str
    items: TurnItems = field(default_factory=TurnItems)
    publish: bool = False
    """Whether the turn's events also go to the publisher (a turn resumed by a decision
    or an expiry, which the asker's sockets must see)."""
    pending: ConfirmMutation | None = None
    position: int | None = None
    """Where the turn's items are expected to start in the conversation, when known."""

    @property
    def ids(self) -> dict[str, str]:
        """The ids every event of the turn carries."""
        return {"conversation_id": str(self.conversation_id), "turn_id": self.turn_id}
