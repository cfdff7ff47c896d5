"""The conversation around a turn, as much of it as the turn's capture level lets staff read.

Conversation text is stored for the assistant's context whatever ``capture_content`` says,
but that setting decides what the audit trail — and so the console — may show: the text
of the messages only with ``"full"``; otherwise their kinds, tool names and a notice.

The page shows the conversation as bubbles, and each tool call as a card holding its
arguments and result (`conversation_items`). Message texts, arguments and results pass
the project's redaction rule (`chatomon.django.audit.rule`), as the report beside them did
(a token in a message is masked in both); a payload longer than `PAYLOAD_CHARS` is
cut there, the whole of it a download away (`tool_payload`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import ChatMessage, Turn

from .conversation_items import ConversationItem, conversation_items

__all__ = [
    "PAYLOAD_CHARS",
    "Payload",
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


def content_visible(turn: Turn) -> bool:
    """Whether the turn's report was written with the full text (capture_content="full")."""
    report = turn.report or {}
    return bool(report.get("capture_content") == "full")


def _rows(turn: Turn, limit: int) -> list[ChatMessage]:
    items = ChatMessage.objects.filter(conversation_id=turn.conversation_id)
    if turn.finished_at is not None:
        items = items.filter(created_at__lte=turn.finished_at)
    return list(reversed(items.order_by("-position")[:limit]))


def turn_context(turn: Turn, *, limit: int = 12) -> list[ConversationItem]:
    """The last `limit` items of the conversation up to the end of `turn`, oldest first."""
    if not content_visible(turn):
        return conversation_items(_rows(turn, limit), payload=None, text=None)
    rule = current_redaction()
    return conversation_items(
        _rows(turn, limit), payload=lambda value: Payload.of(rule.value(value)), text=rule.text
    )


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
