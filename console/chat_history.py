"""A staff member's own conversation as the Chat screen shows it: messages and tool cards.

Tool arguments, results and confirmation previews pass the project's redaction rule
(`chatomon.django.audit.rule`), as the streamed events do: a password the staff member
typed is not shown back.

A conversation without a stored title is named by the first words of its first message,
when the atom captures content in full (``capture_content="full"``); otherwise by its date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.db.models import OuterRef, Subquery
from django.db.models.functions import Left

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import ChatMessage, Conversation, PendingConfirmation
from chatomon.django.service import owner_for
from chatomon.django.settings import chat_settings

from .snippets import first_words

__all__ = [
    "ChatEntry",
    "PendingView",
    "ToolCard",
    "chat_entries",
    "conversations_of",
    "owned_conversation",
    "pending_confirmations",
]


@dataclass
class ToolCard:
    """One tool call and, once it ran, its result."""

    call_id: str
    name: str
    arguments: Any
    result: Any = None
    has_result: bool = False


@dataclass
class ChatEntry:
    """A message bubble, or a group of tool cards."""

    kind: str  # "user", "assistant" or "tools"
    text: str = ""
    blocked: bool = False
    tools: list[ToolCard] = field(default_factory=list)


@dataclass(frozen=True)
class PendingView:
    """An undecided confirmation of the conversation, its preview redacted."""

    id: UUID
    mutation: str
    approver: str
    preview: Any


def conversations_of(user: Any) -> list[Conversation]:
    """The user's conversations, most recently updated first, each with a `title`."""
    owner = owner_for(user, None)
    mine = Conversation.objects.filter(owner_kind=owner.kind, owner_key=owner.key)
    full = chat_settings().atom.capture_content == "full"
    if full:
        first = ChatMessage.objects.filter(
            conversation=OuterRef("pk"), kind="user", blocked=False
        ).order_by("position")
        # Only the head of the text: a title needs a few words, not a pasted document.
        head = first.annotate(head=Left("content", 200)).values("head")[:1]
        mine = mine.annotate(first_message=Subquery(head))
    rows = list(mine.order_by("-updated_at")[:100])
    for row in rows:
        if not row.title and full:
            row.title = first_words(getattr(row, "first_message", None))
    return rows


def owned_conversation(user: Any, conversation_id: UUID) -> Conversation | None:
    """The user's conversation, or None when unknown or someone else's."""
    owner = owner_for(user, None)
    return Conversation.objects.filter(
        pk=conversation_id, owner_kind=owner.kind, owner_key=owner.key
    ).first()


def chat_entries(conversation: Conversation) -> list[ChatEntry]:
    """The conversation's items as bubbles, tool results folded into their call's card."""
    rule = current_redaction()
    entries: list[ChatEntry] = []
    cards: dict[str, ToolCard] = {}
    for row in ChatMessage.objects.filter(conversation=conversation).order_by("position"):
        if row.kind == "tool_calls":
            group = [
                ToolCard(str(c.get("id")), str(c.get("name")), rule.value(c.get("arguments")))
                for c in row.tool_calls or ()
            ]
            cards.update((card.call_id, card) for card in group)
            entries.append(ChatEntry("tools", tools=group))
        elif row.kind == "tool_result":
            card = cards.get(row.call_id or "")
            if card is not None:
                card.result, card.has_result = rule.value(row.result), True
        else:
            entries.append(ChatEntry(row.kind, text=row.content, blocked=row.blocked))
    return entries


def pending_confirmations(conversation: Conversation) -> list[PendingView]:
    """The conversation's undecided confirmations, oldest first, previews redacted."""
    rule = current_redaction()
    pending = PendingConfirmation.objects.filter(conversation=conversation, status="pending")
    return [
        PendingView(row.id, row.mutation, row.approver, rule.value(row.preview))
        for row in pending.order_by("created_at")
    ]
