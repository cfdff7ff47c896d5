"""Pending confirmations on the ORM: recorded, read, claimed once, expired.

A claim is one conditional UPDATE of the row (pending, unexpired), which the database
applies to at most one claimer however many processes race: the one winner gets the
decided record, everyone else None.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db.models import QuerySet, Subquery

from chatomon.chat.store.records import (
    TIMED_OUT_REASON,
    Owner,
    PendingConfirmation,
    check_decision,
)
from chatomon.django import models
from chatomon.django.persistence.conversations import current_conversations
from chatomon.django.persistence.rows import confirmation_record

__all__ = [
    "claim",
    "expire_due",
    "get_confirmation",
    "list_pending",
    "pending_client_confirmation",
    "visible_confirmations",
]


def visible_confirmations(owner: Owner | None) -> QuerySet[models.PendingConfirmation]:
    """Confirmations, restricted to the owner's conversations when an owner is given."""
    rows = models.PendingConfirmation.objects.all()
    if owner is not None:
        rows = rows.filter(conversation__owner_kind=owner.kind, conversation__owner_key=owner.key)
    return rows


def pending_client_confirmation(
    owner: Owner, conversation_id: UUID | None, latest: bool, now: datetime
) -> PendingConfirmation | None:
    """The oldest pending, unexpired client confirmation of the conversation (1 statement).

    The conversation is the named one, or with `latest` the owner's current one (the rule
    `turns.open_turn` continues it by), read as a subquery: one round trip either way.
    """
    rows = visible_confirmations(owner).filter(
        approver="client", status="pending", expires_at__gt=now
    )
    if conversation_id is not None:
        rows = rows.filter(conversation_id=conversation_id)
    elif latest:
        current = current_conversations(owner).values("pk")[:1]
        rows = rows.filter(conversation_id=Subquery(current))
    else:
        return None
    row = rows.order_by("created_at").first()
    return None if row is None else confirmation_record(row)


def get_confirmation(
    confirmation_id: UUID, owner: Owner | None, now: datetime
) -> PendingConfirmation | None:
    """The confirmation as of `now` (expiry applied on read), or None (1 statement)."""
    row = visible_confirmations(owner).filter(pk=confirmation_id).first()
    return confirmation_record(row).as_of(now) if row is not None else None


def list_pending(approver: str | None, now: datetime) -> list[PendingConfirmation]:
    """Pending, unexpired confirmations (of one approver kind), oldest first (1 statement)."""
    pending = models.PendingConfirmation.objects.filter(status="pending", expires_at__gt=now)
    if approver is not None:
        pending = pending.filter(approver=approver)
    return [confirmation_record(row) for row in pending.order_by("created_at")]


def claim(
    confirmation_id: UUID,
    *,
    decision: str,
    decided_by: str,
    reason: str | None,
    owner: Owner | None,
    now: datetime,
) -> PendingConfirmation | None:
    """One conditional UPDATE: only a pending, unexpired row is decided; one winner.

    2 statements for the winner (the update, the read of the decided row), 1 for a loser.
    """
    check_decision(decision)
    rows = models.PendingConfirmation.objects.filter(
        pk=confirmation_id, status="pending", expires_at__gt=now
    )
    if owner is not None:
        # The owner check must not need a join: Django turns an UPDATE with a join into
        # `WHERE id IN (subquery)`, and PostgreSQL re-checks only that after waiting for a
        # concurrent claimer's row lock, so the status condition would not be re-read and
        # both claimers would win. Conditions on the row itself are re-checked.
        mine = models.Conversation.objects.filter(owner_kind=owner.kind, owner_key=owner.key)
        rows = rows.filter(conversation_id__in=mine.values("pk"))
    won = rows.update(status=decision, decided_by=decided_by, decided_at=now, reason=reason)
    if won != 1:
        return None
    return confirmation_record(models.PendingConfirmation.objects.get(pk=confirmation_id))


def expire_due(now: datetime, confirmation_id: UUID | None = None) -> list[PendingConfirmation]:
    """Mark pending rows past expiry as expired; returns the rows this call expired.

    With `confirmation_id`, only that row (when it is overdue). 1 statement when nothing is
    due, else the find, one conditional update per row, and the read back: a row is this
    call's only when its own update moved it, so two sweeps (or a sweep and a waiting
    client) never both resume a turn, whatever their clocks.
    """
    overdue = models.PendingConfirmation.objects.filter(status="pending", expires_at__lte=now)
    if confirmation_id is not None:
        overdue = overdue.filter(pk=confirmation_id)
    due = list(overdue.values_list("pk", flat=True))
    if not due:
        return []
    claimed = [
        key
        for key in due
        if models.PendingConfirmation.objects.filter(pk=key, status="pending").update(
            status="expired", decided_at=now, reason=TIMED_OUT_REASON
        )
    ]
    mine = models.PendingConfirmation.objects.filter(pk__in=claimed).order_by("expires_at")
    return [confirmation_record(row) for row in mine]
