"""Conversations and their items on the ORM: the sync units of work behind `DjangoStore`.

Conversation-scoped functions filter on the owner in the same query, so another owner's
conversation is indistinguishable from a missing one. `DjangoStore` runs each function
off the event loop (`chatomon.django.persistence.store`); `chat_cleanup` calls `prune`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from django.db import router, transaction
from django.db.models import F, Max, Q, QuerySet

from chatomon.chat.store.records import (
    Conversation,
    ConversationNotFoundError,
    ConversationSummary,
    MessageItem,
    Owner,
    StoredMessage,
)
from chatomon.django import models
from chatomon.django.persistence.rows import conversation_record, message_fields, message_record

__all__ = [
    "append",
    "append_messages",
    "create_conversation",
    "current_conversation",
    "current_conversations",
    "get_conversation",
    "items_of",
    "list_conversations",
    "messages",
    "not_found",
    "owned",
    "owned_by",
    "owners_conversation",
    "prune",
    "save_summary",
]


def owned_by(owner: Owner) -> QuerySet[models.Conversation]:
    """Every conversation of `owner`, as a query."""
    return models.Conversation.objects.filter(owner_kind=owner.kind, owner_key=owner.key)


def owners_conversation(owner: Owner, conversation_id: UUID) -> QuerySet[models.Conversation]:
    """The owner's conversation of that id, as a query (empty when unknown or another's)."""
    return owned_by(owner).filter(pk=conversation_id)


def not_found(conversation_id: UUID) -> ConversationNotFoundError:
    """The error for a conversation that is unknown or not the owner's (one message for both)."""
    return ConversationNotFoundError(f"no conversation {conversation_id} for this owner")


def owned(owner: Owner, conversation_id: UUID) -> models.Conversation:
    """The owner's conversation row; ConversationNotFoundError otherwise."""
    row = owners_conversation(owner, conversation_id).first()
    if row is None:
        raise not_found(conversation_id)
    return row


def create_conversation(owner: Owner, title: str, now: datetime) -> Conversation:
    """Insert a new conversation of `owner` (1 statement)."""
    row = models.Conversation.objects.create(
        owner_kind=owner.kind, owner_key=owner.key, title=title, created_at=now, updated_at=now
    )
    return conversation_record(row)


def get_conversation(owner: Owner, conversation_id: UUID) -> Conversation | None:
    """The owner's conversation, or None (1 statement)."""
    row = owners_conversation(owner, conversation_id).first()
    return conversation_record(row) if row is not None else None


def list_conversations(owner: Owner) -> list[Conversation]:
    """The owner's conversations, most recently updated first (1 statement)."""
    mine = owned_by(owner)
    return [conversation_record(row) for row in mine.order_by("-updated_at")]


def save_summary(owner: Owner, conversation_id: UUID, summary: ConversationSummary) -> Conversation:
    """Store the summary on the owner's conversation (2 statements: read, save)."""
    row = owned(owner, conversation_id)
    row.summary_text = summary.text
    row.summary_through_id = summary.through_id
    row.summary_through_position = summary.through_position
    # Only these columns: a concurrent append's `updated_at` must not be overwritten.
    row.save(update_fields=["summary_text", "summary_through_id", "summary_through_position"])
    return conversation_record(row)


def items_of(conversation_id: UUID) -> list[StoredMessage]:
    """The conversation's items in position order (1 statement, on the position index)."""
    rows = models.ChatMessage.objects.filter(conversation_id=conversation_id)
    return [message_record(row) for row in rows.order_by("position")]


def messages(owner: Owner, conversation_id: UUID) -> list[StoredMessage]:
    """The owner's conversation's items in position order (2 statements)."""
    return items_of(owned(owner, conversation_id).pk)


def append(
    owner: Owner,
    conversation_id: UUID,
    items: Sequence[MessageItem],
    now: datetime,
    position: int | None = None,
) -> list[StoredMessage]:
    """Store `items` at `position` (default: the end) of the owner's conversation.

    Run inside a transaction: touching the conversation first checks the owner and, on
    PostgreSQL, locks its row until the transaction ends, which orders concurrent appends.
    2 statements with a `position`, 3 without; the conversation is touched even without items.

    Raises:
        ConversationNotFoundError: The conversation is not the owner's.
        IntegrityError: An item of another writer already holds one of the positions.
    """
    # One conditional UPDATE checks the owner, stamps the conversation and locks its row.
    if not owners_conversation(owner, conversation_id).update(updated_at=now):
        raise not_found(conversation_id)
    if not items:
        return []
    if position is None:
        stored = models.ChatMessage.objects.filter(conversation_id=conversation_id)
        last = stored.aggregate(last=Max("position"))["last"]
        position = 0 if last is None else last + 1
    rows = [
        models.ChatMessage(
            conversation_id=conversation_id, position=position + offset, created_at=now,
            **message_fields(item),
        )
        for offset, item in enumerate(items)
    ]  # fmt: skip
    # One INSERT for all items (batched where the database limits parameters); the ids
    # come back with it (RETURNING), so nothing is read again.
    return [message_record(row) for row in models.ChatMessage.objects.bulk_create(rows)]


def append_messages(
    owner: Owner, conversation_id: UUID, items: Sequence[MessageItem], now: datetime
) -> list[StoredMessage]:
    """Append items at the next positions, in one transaction (3 statements with items)."""
    with transaction.atomic(using=router.db_for_write(models.ChatMessage)):
        return append(owner, conversation_id, items, now)


def prune(older_than: datetime) -> dict[str, int]:
    """Delete stale conversations (cascading) and confirmations resolved before the cutoff."""
    with transaction.atomic(using=router.db_for_write(models.Conversation)):
        stale = models.Conversation.objects.filter(updated_at__lt=older_than)
        counts = {
            "messages": models.ChatMessage.objects.filter(conversation__in=stale).count(),
            "turns": models.Turn.objects.filter(conversation__in=stale).count(),
        }
        old_confirmations = models.PendingConfirmation.objects.filter(
            Q(conversation__in=stale)
            | Q(status="pending", expires_at__lt=older_than)
            | (~Q(status="pending") & Q(decided_at__lt=older_than))
        )
        counts["confirmations"] = old_confirmations.delete()[0]
        counts["conversations"] = stale.delete()[1].get(models.Conversation._meta.label, 0)
        return {k: counts[k] for k in ("conversations", "messages", "turns", "confirmations")}


def current_conversation(owner: Owner) -> models.Conversation | None:
    """The owner's current conversation: where the owner's latest turn started.

    Not the latest updated: a staff decision or an expiry appends to an older one.
    """
    return current_conversations(owner).first()


def current_conversations(owner: Owner) -> QuerySet[models.Conversation]:
    """The owner's conversations, the current one (`current_conversation`) first, as a query."""
    started = Max("turns__started_at")
    mine = owned_by(owner).annotate(last_started=started)
    return mine.order_by(F("last_started").desc(nulls_last=True), "-created_at")
