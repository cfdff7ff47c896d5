"""A staff member's own conversation as the Chat screen shows it: messages and tool cards.

Items are drawn by `conversation_items`, as on the turn page. Tool arguments, results
and confirmation previews pass the project's redaction rule (`chatomon.django.audit.rule`),
as the streamed events do: a password the staff member typed is not shown back.

A conversation without a stored title is named by the first words of its first message,
when the atom captures content in full (``capture_content="full"``); otherwise by its date.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import OuterRef, Subquery
from django.db.models.functions import Left

from chatomon.django.audit.rule import current_redaction
from chatomon.django.models import ChatMessage, Conversation, PendingConfirmation
from chatomon.django.service import owner_for
from chatomon.django.settings import chat_settings

from .conversation_items import ConversationItem, conversation_items
from .snippets import first_words

__all__ = [
    "PendingView",
    "chat_entries",
    "confirmation_card",
    "conversations_of",
    "owned_conversation",
    "pending_confirmations",
]


@dataclass(frozen=True)
class PendingView:
    """A confirmation of the conversation as its card shows it, its preview redacted."""

    id: UUID
    mutation: str
    approver: str
    preview: Any
    conversation_id: UUID
    status: str = "pending"

    @classmethod
    def of(cls, row: PendingConfirmation) -> PendingView:
        """The card of a stored confirmation (its preview through the redaction rule)."""
        preview = current_redaction().value(row.preview)
        return cls(row.id, row.mutation, row.approver, preview, row.conversation_id, row.status)


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


def chat_entries(conversation: Conversation) -> list[ConversationItem]:
    """The conversation's items as bubbles, tool results folded into their call's card."""
    rows = ChatMessage.objects.filter(conversation=conversation).order_by("position")
    return conversation_items(rows, payload=current_redaction().value, text=str)


def pending_confirmations(conversation: Conversation) -> list[PendingView]:
    """The conversation's undecided confirmations, oldest first, previews redacted."""
    pending = PendingConfirmation.objects.filter(conversation=conversation, status="pending")
    return [PendingView.of(row) for row in pending.order_by("created_at")]


def confirmation_card(user: Any, confirmation_id: UUID) -> PendingView | None:
    """A confirmation of one of the user's own conversations, decided or not; else None."""
    owner = owner_for(user, None)
    row = PendingConfirmation.objects.filter(
        pk=confirmation_id, conversation__owner_kind=owner.kind, conversation__owner_key=owner.key
    ).first()
    return None if row is None else PendingView.of(row)
