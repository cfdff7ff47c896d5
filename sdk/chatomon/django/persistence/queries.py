"""The synchronous ORM operations behind `DjangoStore`, also used by `chat_cleanup`.

Each function is one unit of work against the default database; `DjangoStore` runs them
off the event loop. Conversation-scoped functions filter on the owner in the same query,
so another owner's conversation is indistinguishable from a missing one. `open_turn` and
`close_turn`, which every chat turn runs, send hand-composed SQL
(`chatomon.django.persistence.turn_statements`) rather than compiling ORM queries each time.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import IntegrityError, connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Q

from chatomon.chat.store.records import (
    TIMED_OUT_REASON,
    ConversationNotFoundError,
    ConversationSummary,
    MessageItem,
    OpenedTurn,
    Owner,
    PendingConfirmation,
    PlannedTurn,
    StoredMessage,
    TurnRecord,
    check_decision,
    check_transition,
    predecessors,
)
from chatomon.django import models
from chatomon.django.persistence import turn_statements as statements
from chatomon.django.persistence.rows import (
    confirmation_record,
    message_record,
    turn_record,
)
from chatomon.schemas import TokenUsage, TurnReport

__all__ = [
    "append_messages",
    "claim",
    "close_turn",
    "expire_due",
    "open_turn",
    "owned",
    "prune",
    "update_turn",
]


def owned(owner: Owner, conversation_id: UUID) -> models.Conversation:
    """The owner's conversation row; ConversationNotFoundError otherwise."""
    try:
        return models.Conversation.objects.get(
            pk=conversation_id, owner_kind=owner.kind, owner_key=owner.key
        )
    except models.Conversation.DoesNotExist:
        raise ConversationNotFoundError(
            f"no conversation {conversation_id} for this owner"
        ) from None


def save_summary(owner: Owner, conversation_id: UUID, summary: ConversationSummary) -> None:
    """Store the summary on the owner's conversation."""
    updated = models.Conversation.objects.filter(
        pk=conversation_id, owner_kind=owner.kind, owner_key=owner.key
    ).update(
        summary_text=summary.text,
        summary_through_id=summary.through_id,
        summary_through_position=summary.through_position,
    )
    if not updated:
        raise ConversationNotFoundError(f"no conversation {conversation_id} for this owner")


def append_messages(
    owner: Owner, conversation_id: UUID, items: Sequence[MessageItem], now: datetime
) -> list[StoredMessage]:
    """Append items at the next positions; the conversation row lock orders writers."""
    connection = _connection()
    with transaction.atomic(using=connection.alias):
        with connection.cursor() as cursor:
            start = _append(cursor, owner, conversation_id, items, now, None)
        if start is None:
            return []
        # Read back for the ids the database gave the rows.
        saved = models.ChatMessage.objects.filter(
            conversation_id=conversation_id, position__gte=start
        ).order_by("position")
        return [message_record(row) for row in saved]


def _append(  # noqa: PLR0917 - the shared body of append_messages and close_turn
    cursor: CursorWrapper,
    owner: Owner,
    conversation_id: UUID,
    items: Sequence[MessageItem],
    now: datetime,
    position: int | None,
) -> int | None:
    """Store `items` at `position` (default: the end) of the owner's conversation.

    Returns where they start, None when there were none (the conversation is touched).

    Touching the conversation first checks the owner and, on PostgreSQL, locks the row until
    the transaction ends, which orders concurrent appends to it.
    """
    if not statements.touch_conversation(cursor, owner, conversation_id, now):
        raise ConversationNotFoundError(f"no conversation {conversation_id} for this owner")
    if not items:
        return None
    if position is None:
        last = statements.last_position(cursor, conversation_id)
        position = 0 if last is None else last + 1
    statements.insert_messages(cursor, conversation_id, items, position, now)
    return position


def _connection() -> BaseDatabaseWrapper:
    """The connection the chat tables are written through (routers decide, as for the ORM)."""
    return connections[router.db_for_write(models.Conversation)]


def open_turn(owner: Owner, conversation_id: UUID | None, now: datetime) -> OpenedTurn | None:
    """Start a turn: 2 statements for a new conversation, 3 for an existing one.

    No transaction: the turn is inserted last, so a failure leaves at most an empty
    conversation, and the reads before it need no snapshot of their own.
    """
    planned = plan_turn(owner, conversation_id, now)
    if planned is None:
        return None
    record_turn(planned)
    return planned.opened


def plan_turn(owner: Owner, conversation_id: UUID | None, now: datetime) -> PlannedTurn | None:
    """The turn `open_turn` would start, written nowhere.

    No statement for a new conversation, 2 reads for an existing one.
    """
    if conversation_id is None:
        return PlannedTurn.lay_out(owner, now)
    with _connection().cursor() as cursor:
        found = statements.owned_conversation(cursor, owner, conversation_id)
        if found is None:
            return None
        existing = (found, statements.stored_messages(cursor, found.id))
    return PlannedTurn.lay_out(owner, now, existing)


def record_turn(planned: PlannedTurn) -> None:
    """Write a planned turn as running (and its conversation, when new): 1 or 2 statements."""
    with _connection().cursor() as cursor:
        if planned.new_conversation:
            statements.insert_conversation(cursor, planned.opened.conversation)
        statements.insert_turn(cursor, planned.opened.turn)


def close_turn(
    owner: Owner,
    conversation_id: UUID,
    turn_id: str,
    *,
    items: Sequence[MessageItem],
    status: str,
    report: TurnReport | None,
    now: datetime,
    position: int | None = None,
    planned: PlannedTurn | None = None,
) -> None:
    """Append the last items and move the turn: 3 statements in one transaction.

    `position` is where the caller expects the items to start (the conversation's length
    when its turn opened). A concurrent turn of the same conversation may have taken it:
    the unique position then fails the insert, and the work is redone after reading the
    real end, so the common case needs no read at all.

    A `planned` turn is inserted as it ended instead of moved: for a new conversation that
    is the conversation, the turn and the items, 3 statements in a transaction, or on
    PostgreSQL one statement alone (`statements.insert_new_conversation`).
    """
    connection = _connection()
    changes = _turn_changes(status, report, None, now)
    if planned is not None:
        check_transition(turn_id, planned.opened.turn.status, status)

    def write(at: int | None) -> None:
        if (
            planned is not None
            and planned.new_conversation
            and statements.one_statement_for_a_new_conversation(connection, items)
        ):
            with connection.cursor() as cursor:  # one statement: atomic without BEGIN
                statements.insert_new_conversation(
                    cursor, planned.opened.conversation, planned.opened.turn, items, now,
                    **changes,
                )  # fmt: skip
            return
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            if planned is None:
                _move(cursor, turn_id, status, changes)
                _append(cursor, owner, conversation_id, items, now, at)
            elif planned.new_conversation:
                conversation = planned.opened.conversation
                statements.insert_conversation(cursor, conversation, updated_at=now)
                statements.insert_turn(cursor, planned.opened.turn, **changes)
                statements.insert_messages(cursor, conversation_id, items, 0, now)
            else:
                statements.insert_turn(cursor, planned.opened.turn, **changes)
                _append(cursor, owner, conversation_id, items, now, at)

    if position is not None:
        try:
            write(position)
            return
        except IntegrityError:
            pass  # another turn wrote there meanwhile
    write(None)


def _turn_changes(
    status: str, report: TurnReport | None, usage: TokenUsage | None, now: datetime
) -> dict[str, Any]:
    changes: dict[str, Any] = {"status": status}
    if status in ("completed", "aborted"):
        changes["finished_at"] = now
    if report is not None:
        changes.update(
            report=report.model_dump(mode="json"),
            final_action=report.final_action,
            escalated=report.escalated,
        )
        usage = usage if usage is not None else report.usage
    if usage is not None:
        changes.update(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    return changes


def update_turn(
    turn_id: str,
    status: str,
    report: TurnReport | None,
    usage: TokenUsage | None,
    now: datetime,
) -> TurnRecord:
    """Move a turn, conditionally on its current status (no lost transitions)."""
    with _connection().cursor() as cursor:
        _move(cursor, turn_id, status, _turn_changes(status, report, usage, now))
    return turn_record(models.Turn.objects.get(pk=turn_id))


def _move(cursor: CursorWrapper, turn_id: str, status: str, changes: dict[str, Any]) -> None:
    """Apply `changes` in one conditional UPDATE: only from a status that may move there.

    Raises:
        TurnTransitionError: The turn's status does not allow the move.
        LookupError: No such turn.
    """
    while not statements.move_turn(cursor, turn_id, changes, predecessors(status)):
        found = statements.turn_status(cursor, turn_id)
        if found is None:
            raise LookupError(f"no turn {turn_id!r}")
        # Raises unless another writer moved the turn to an allowed source meanwhile.
        check_transition(turn_id, found, status)


def create_confirmation(owner: Owner, conversation_id: UUID, **fields: Any) -> PendingConfirmation:
    """Insert a pending confirmation on the owner's conversation."""
    if fields["approver"] not in ("client", "staff"):
        raise ValueError(f"approver must be 'client' or 'staff', got {fields['approver']!r}")
    conversation = owned(owner, conversation_id)
    row = models.PendingConfirmation.objects.create(
        id=uuid.uuid4(), conversation=conversation, status="pending", **fields
    )
    return confirmation_record(row)


def visible_confirmations(owner: Owner | None) -> Any:
    """Confirmations, restricted to the owner's conversations when an owner is given."""
    rows = models.PendingConfirmation.objects.all()
    if owner is not None:
        rows = rows.filter(conversation__owner_kind=owner.kind, conversation__owner_key=owner.key)
    return rows


def claim(
    confirmation_id: UUID,
    *,
    decision: str,
    decided_by: str,
    reason: str | None,
    owner: Owner | None,
    now: datetime,
) -> PendingConfirmation | None:
    """One conditional UPDATE: only a pending, unexpired row is decided; one winner."""
    check_decision(decision)
    rows = models.PendingConfirmation.objects.filter(
        pk=confirmation_id, status="pending", expires_at__gt=now
    )
    if owner is not None:
        # The owner check must not need a join: Django turns an UPDATE with a join into
        # `WHERE id IN (subquery)`, and PostgreSQL re-checks only that after waiting for a
        # concurrent claimer's row lock, so the status condition would not be re-read and
        # both claimers would win. Conditions on the row itself are re-checked.
        owned = models.Conversation.objects.filter(owner_kind=owner.kind, owner_key=owner.key)
        rows = rows.filter(conversation_id__in=owned.values("pk"))
    won = rows.update(status=decision, decided_by=decided_by, decided_at=now, reason=reason)
    if won != 1:
        return None
    return confirmation_record(models.PendingConfirmation.objects.get(pk=confirmation_id))


def expire_due(now: datetime, confirmation_id: UUID | None = None) -> list[PendingConfirmation]:
    """Mark pending rows past expiry as expired; returns the rows this call expired.

    With `confirmation_id`, only that row (when it is overdue).
    """
    overdue = models.PendingConfirmation.objects.filter(status="pending", expires_at__lte=now)
    if confirmation_id is not None:
        overdue = overdue.filter(pk=confirmation_id)
    due = list(overdue.values_list("pk", flat=True))
    if not due:
        return []
    models.PendingConfirmation.objects.filter(pk__in=due, status="pending").update(
        status="expired", decided_at=now, reason=TIMED_OUT_REASON
    )
    # Another cleanup may have expired some of them meanwhile, with its own `now`.
    mine = models.PendingConfirmation.objects.filter(
        pk__in=due, status="expired", decided_at=now
    ).order_by("expires_at")
    return [confirmation_record(row) for row in mine]


def prune(older_than: datetime) -> dict[str, int]:
    """Delete stale conversations (cascading) and confirmations resolved before the cutoff."""
    with transaction.atomic():
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
