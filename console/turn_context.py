"""The conversation around a turn, as much of it as the turn's capture level lets staff read.

Conversation text is stored for the assistant's context whatever ``capture_content`` says,
but that setting decides what the audit trail — and so the console — may show: the text
of the messages only with ``"full"``; otherwise their kinds, tool names and a notice.

The page shows the conversation as bubbles, and each tool call as a card holding its
arguments and, folded in from the item that stored it, its result (a result is stored in
the item's ``result``; its ``content`` is empty). Message texts, arguments and results pass
the project's redaction rule (`chatomon.django.audit.rule`), as the report beside them did
(a token in a message is masked in both); a payload longer than `PAYLOAD_CHARS` is
cut there, the whole of it a download away (`tool_payload`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import ChatMessage, Turn
from chatomon.redaction import Redaction

__all__ = [
    "PAYLOAD_CHARS",
    "ContextItem",
    "Payload",
    "ToolCard",
    "content_visible",
    "tool_payload",
    "turn_context",
]

PAYLOAD_CHARS = 4000


@dataclass(frozen=True)
class Payload:
    """A tool call's arguments or result as indented JSON, cut at `PAYLOAD_CHARS`."""

    text: str
    truncated: bool

    @classmethod
    def of(cls, value: Any) -> Payload:
        """The payload of a (redacted) value."""
        text = json.dumps(value, indent=2, sort_keys=True, default=str)
        if len(text) <= PAYLOAD_CHARS:
            return cls(text, truncated=False)
        return cls(text[:PAYLOAD_CHARS], truncated=True)


@dataclass
class ToolCard:
    """One tool call of the conversation and, once stored, its result."""

    call_id: str
    name: str
    arguments: Payload | None  # None: withheld by capture_content
    result: Payload | None = None
    has_result: bool = False


@dataclass
class ContextItem:
    """One bubble of the conversation, or a group of tool cards."""

    kind: str  # "user", "assistant", "tools", or another stored kind
    text: str | None  # None: withheld by capture_content
    blocked: bool = False
    tools: list[ToolCard] = field(default_factory=list)

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the tools called."""
        return tuple(card.name for card in self.tools)


def content_visible(turn: Turn) -> bool:
    """Whether the turn's report was written with the full text (capture_content="full")."""
    report = turn.report or {}
    return bool(report.get("capture_content") == "full")


def _rows(turn: Turn, limit: int) -> list[ChatMessage]:
    items = ChatMessage.objects.filter(conversation_id=turn.conversation_id)
    if turn.finished_at is not None:
        items = items.filter(created_at__lte=turn.finished_at)
    return list(reversed(items.order_by("-position")[:limit]))


def turn_context(turn: Turn, *, limit: int = 12) -> list[ContextItem]:
    """The last `limit` items of the conversation up to the end of `turn`, oldest first."""
    visible = content_visible(turn)
    rule = current_redaction()
    entries: list[ContextItem] = []
    cards: dict[str, ToolCard] = {}
    for row in _rows(turn, limit):
        if row.kind == "tool_calls":
            group = [_card(call, visible, rule) for call in row.tool_calls or ()]
            cards.update((card.call_id, card) for card in group)
            entries.append(ContextItem("tools", None, tools=group))
        elif row.kind == "tool_result":
            card = cards.get(row.call_id or "")
            if card is None:  # its call is older than the items shown: a card of its own
                card = ToolCard(row.call_id or "", row.name or "?", None)
                entries.append(ContextItem("tools", None, tools=[card]))
            if visible:
                card.result, card.has_result = Payload.of(rule.value(row.result)), True
        else:
            text = rule.text(row.content) if visible else None
            entries.append(ContextItem(row.kind, text, blocked=row.blocked))
    return entries


def _card(call: Any, visible: bool, rule: Redaction) -> ToolCard:
    arguments = Payload.of(rule.value(call.get("arguments"))) if visible else None
    return ToolCard(str(call.get("id", "")), str(call.get("name", "?")), arguments)


def tool_payload(turn: Turn, call_id: str) -> dict[str, Any] | None:
    """The whole (redacted) arguments and result of one tool call of the turn's conversation.

    None when the text is withheld (capture_content) or the call is not the conversation's.
    """
    if not content_visible(turn):
        return None
    items = ChatMessage.objects.filter(conversation_id=turn.conversation_id)
    rule = current_redaction()
    payload: dict[str, Any] = {}
    for row in items.filter(kind="tool_calls"):
        for call in row.tool_calls or ():
            if str(call.get("id")) == call_id:
                payload = {"name": call.get("name"), "arguments": rule.value(call.get("arguments"))}
    if not payload:
        return None
    result = items.filter(kind="tool_result", call_id=call_id).first()
    if result is not None:
        payload["result"] = rule.value(result.result)
    return payload
