"""The conversation around a turn, as much of it as the turn's capture level lets staff read.

Conversation text is stored for the assistant's context whatever ``capture_content`` says,
but that setting decides what the audit trail — and so the console — may show: the text
of the messages only with ``"full"``; otherwise their kinds, tool names and a notice.
A tool result is stored in the item's ``result`` (its ``content`` is empty), so that is
what the page shows. Tool arguments and results pass the project's redaction rule
(`chatomon.django.audit.rule`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import ChatMessage, Turn
from chatomon.redaction import Redaction

__all__ = ["ContextItem", "turn_context"]


@dataclass(frozen=True)
class ContextItem:
    """One conversation item as the console shows it."""

    kind: str
    text: str | None  # None: withheld by capture_content
    tool_names: tuple[str, ...]
    tool_arguments: tuple[Any, ...]  # empty when withheld
    blocked: bool
    result: Any = None  # a tool result's stored value, redacted (None when withheld)
    has_result: bool = False  # whether `result` is shown (a tool result, content visible)


def content_visible(turn: Turn) -> bool:
    """Whether the turn's report was written with the full text (capture_content="full")."""
    report = turn.report or {}
    return bool(report.get("capture_content") == "full")


def turn_context(turn: Turn, *, limit: int = 12) -> list[ContextItem]:
    """The last `limit` items of the conversation up to the end of `turn`, oldest first."""
    items = ChatMessage.objects.filter(conversation_id=turn.conversation_id)
    if turn.finished_at is not None:
        items = items.filter(created_at__lte=turn.finished_at)
    latest = list(items.order_by("-position")[:limit])
    visible = content_visible(turn)
    rule = current_redaction()
    return [_item(row, visible, rule) for row in reversed(latest)]


def _item(row: ChatMessage, visible: bool, rule: Redaction) -> ContextItem:
    calls = row.tool_calls or []
    shows_result = visible and row.kind == "tool_result"
    return ContextItem(
        kind=row.kind,
        # A tool result has no text of its own: its value is `result`.
        text=(row.content if visible and not shows_result else None),
        tool_names=tuple(str(c.get("name", "?")) for c in calls)
        or ((row.name,) if row.name else ()),
        tool_arguments=tuple(rule.value(c.get("arguments")) for c in calls) if visible else (),
        blocked=row.blocked,
        result=rule.value(row.result) if shows_result else None,
        has_result=shows_result,
    )
