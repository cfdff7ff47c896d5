"""A conversation's stored items as the console shows them: bubbles and tool-call cards.

The turn page and the console's own chat both draw a conversation this way. A tool call is
a card holding its arguments and, folded in from the item that stored it, its result (a
result is stored in the item's ``result``; its ``content`` is empty). How a payload and a
message text are shown is the caller's: redacted, cut to a length, or withheld.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chatomon.django.models import ChatMessage

__all__ = ["ConversationItem", "ToolCard", "conversation_items"]


@dataclass
class ToolCard:
    """One tool call and, once stored, its result, each as the caller shows payloads."""

    call_id: str
    name: str
    arguments: Any  # None: withheld
    result: Any = None
    has_result: bool = False


@dataclass
class ConversationItem:
    """One bubble of the conversation, or a group of tool cards."""

    kind: str  # "user", "assistant", "tools", or another stored kind
    text: str | None  # None: withheld
    blocked: bool = False
    tools: list[ToolCard] = field(default_factory=list)


def conversation_items(
    rows: Iterable[ChatMessage],
    *,
    payload: Callable[[Any], Any] | None,
    text: Callable[[str], str] | None,
) -> list[ConversationItem]:
    """`rows` (in order) as bubbles and cards, results folded into their call's card.

    Args:
        rows: The stored items, oldest first.
        payload: How a tool call's arguments or result is shown; None withholds them.
        text: How a message's text is shown; None withholds it.
    """
    items: list[ConversationItem] = []
    cards: dict[str, ToolCard] = {}
    for row in rows:
        if row.kind == "tool_calls":
            group = [
                ToolCard(
                    str(call.get("id", "")),
                    str(call.get("name", "?")),
                    payload(call.get("arguments")) if payload else None,
                )
                for call in row.tool_calls or ()
            ]
            cards.update((card.call_id, card) for card in group)
            items.append(ConversationItem("tools", None, tools=group))
        elif row.kind == "tool_result":
            card = cards.get(row.call_id or "")
            if card is None:  # its call is older than the items shown: a card of its own
                card = ToolCard(row.call_id or "", row.name or "?", None)
                items.append(ConversationItem("tools", None, tools=[card]))
            if payload:
                card.result, card.has_result = payload(row.result), True
        else:
            shown = text(row.content) if text else None
            items.append(ConversationItem(row.kind, shown, blocked=row.blocked))
    return items
