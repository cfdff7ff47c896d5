"""Turns on the ORM: opening, moving and closing them, the sync units of work of a chat turn.

A turn moves only along `chatomon.chat.store.records.TURN_TRANSITIONS`, each move one
conditional UPDATE (filtered on the statuses it may come from), so two writers never both
move a turn. Every chat turn runs `open_turn` and `close_turn`; their statement counts are
pinned by tests/stores/test_turn_queries.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from django.db import IntegrityError, router, transaction

from chatomon.chat.store.records import (
    MessageItem,
    NewConfirmation,
    OpenedTurn,
    Owner,
    PendingConfirmation,
    TurnRecord,
    aware,
    check_transition,
    predecessors,
    turn_changes,
)
from chatomon.django import models
from chatomon.django.persistence.conversations import (
    append,
    current_conversation,
    items_of,
    owned,
    owners_conversation,
)
from chatomon.django.persistence.rows import (
    confirmation_record,
    conversation_record,
    turn_record,
)
from chatomon.schemas import TokenUsage, TurnReport

T = TypeVar("T")

__all__ = [
    "abort_stale",
    "close_turn",
    "get_turn",
    "list_turns",
    "move",
    "open_turn",
    "start_turn",
    "suspend_turn",
    "turn_columns",
    "turn_status",
    "update_turn",
]


def open_turn(
    owner: Owner, conversation_id: UUID | None, now: datetime, *, latest: bool = False
) -> OpenedTurn | None:
    """Start a running turn: 2 statements for a new conversation, 3 for an existing one.

    `conversation_id=None` starts a new conversation, or with `latest` continues the
    owner's current one (`current_conversation`; the same 3 statements, 4 when it has none).
    A new conversation and its turn are inserted in one transaction: one commit (a disk
    sync on PostgreSQL) instead of two, and no empty conversation if the turn fails. The
    reads of an existing one need no snapshot of their own: the turn is inserted last.
    """
    if conversation_id is not None:
        found = owners_conversation(owner, conversation_id).first()
        if found is None:
            return None
    elif latest:
        found = current_conversation(owner)
    else:
        found = None
    if found is None:
        with transaction.atomic(using=router.db_for_write(models.Turn)):
            conversation = models.Conversation.objects.create(
                owner_kind=owner.kind, owner_key=owner.key, created_at=now, updated_at=now
            )
            turn = _running_turn(conversation, now)
        return OpenedTurn(conversation_record(conversation), [], turn_record(turn))
    messages = items_of(found.pk)
    turn = _running_turn(found, now)
    return OpenedTurn(conversation_record(found), messages, turn_record(turn))


def _running_turn(conversation: models.Conversation, now: datetime) -> models.Turn:
    return models.Turn.objects.create(
        id=uuid.uuid4().hex, conversation=conversation, status="running", started_at=now
    )


def start_turn(owner: Owner, conversation_id: UUID, turn_id: str, now: datetime) -> TurnRecord:
    """Insert a running turn in the owner's conversation (3 statements).

    Raises:
        ValueError: A turn of that id exists.
    """
    conversation = owned(owner, conversation_id)
    if models.Turn.objects.filter(pk=turn_id).exists():
        raise ValueError(f"turn {turn_id!r} already exists")
    row = models.Turn.objects.create(
        id=turn_id, conversation=conversation, status="running", started_at=now
    )
    return turn_record(row)


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
) -> None:
    """Move the turn and append its last items: 3 statements in one transaction.

    The move, the conversation's touch (owner check and row lock) and one insert of all
    items at `position` (`_moved_with_items`; 4 statements without it, or when another
    turn took it).

    Raises:
        TurnTransitionError: The turn may not move to `status` (nothing is stored).
        ConversationNotFoundError: The conversation is not the owner's (nothing is stored).
        LookupError: No such turn.
    """
    changes = turn_columns(status, report, None, now)
    _moved_with_items(
        owner, conversation_id, turn_id, status=status, changes=changes, items=items,
        now=now, position=position, then=lambda: None,
    )  # fmt: skip


def _moved_with_items(
    owner: Owner,
    conversation_id: UUID,
    turn_id: str,
    *,
    status: str,
    changes: dict[str, Any],
    items: Sequence[MessageItem],
    now: datetime,
    position: int | None,
    then: Callable[[], T],
) -> T:
    """Move the turn, append its items at `position`, then `then()`: one transaction.

    `position` is where the caller expects the items to start (the conversation's length
    when its turn opened). A concurrent turn of the same conversation may have taken it:
    the unique position then fails the insert, and the work is redone after reading the
    real end, so the common case needs no read at all.
    """

    def write(at: int | None) -> T:
        with transaction.atomic(using=router.db_for_write(models.Turn)):
            move(turn_id, status, changes)
            append(owner, conversation_id, items, now, at)
            return then()

    if position is not None:
        try:
            return write(position)
        except IntegrityError:
            pass  # another turn wrote there meanwhile: the transaction was rolled back
    return write(None)


def turn_columns(
    status: str, report: TurnReport | None, usage: TokenUsage | None, now: datetime
) -> dict[str, Any]:
    """The column values of a move to `status` (`records.turn_changes`, usage in columns)."""
    changes = turn_changes(status, report, usage, now)
    moved = changes.pop("usage", None)
    if moved is not None:
        changes.update(input_tokens=moved.input_tokens, output_tokens=moved.output_tokens)
    return changes


def move(turn_id: str, status: str, changes: dict[str, Any]) -> None:
    """Apply `changes` in one conditional UPDATE: only from a status that may move there.

    Raises:
        TurnTransitionError: The turn's status does not allow the move.
        LookupError: No such turn.
    """
    movable = models.Turn.objects.filter(pk=turn_id, status__in=sorted(predecessors(status)))
    while not movable.update(**changes):
        found = models.Turn.objects.filter(pk=turn_id).values_list("status", flat=True).first()
        if found is None:
            raise LookupError(f"no turn {turn_id!r}")
        # Raises unless another writer moved the turn to an allowed source meanwhile.
        check_transition(turn_id, found, status)


def update_turn(
    turn_id: str,
    status: str,
    report: TurnReport | None,
    usage: TokenUsage | None,
    now: datetime,
) -> TurnRecord:
    """Move a turn, conditionally on its current status (2 statements: move, read)."""
    move(turn_id, status, turn_columns(status, report, usage, now))
    return turn_record(models.Turn.objects.get(pk=turn_id))


def get_turn(turn_id: str) -> TurnRecord | None:
    """The turn, or None (1 statement)."""
    row = models.Turn.objects.filter(pk=turn_id).first()
    return turn_record(row) if row is not None else None


def turn_status(owner: Owner, turn_id: str) -> str | None:
    """The status of `owner`'s turn `turn_id`, None when the owner has none (1 statement)."""
    found = models.Turn.objects.filter(
        pk=turn_id, conversation__owner_kind=owner.kind, conversation__owner_key=owner.key
    ).values_list("status", flat=True)
    return next(iter(found), None)


def list_turns(
    conversation_id: UUID | None, status: str | None, limit: int | None
) -> list[TurnRecord]:
    """Turns matching every filter given, most recently started first (1 statement)."""
    turns = models.Turn.objects.order_by("-started_at")
    if conversation_id is not None:
        turns = turns.filter(conversation_id=conversation_id)
    if status is not None:
        turns = turns.filter(status=status)
    if limit is not None:
        turns = turns[:limit]
    return [turn_record(row) for row in turns]


def abort_stale(cutoff: datetime, now: datetime) -> list[str]:
    """Abort the turns left `running` with no sign of life since `cutoff`; their ids.

    A turn is stale when it started before `cutoff` and none of its confirmations was
    decided (or expired) since: a turn resumed by a decision runs again from that moment,
    however long ago it started. Such a turn's process died, or lost its database for
    longer than its own retries (`chatomon.chat.pipeline.recovery`). One conditional
    UPDATE, so a turn that ended meanwhile is left alone (2 statements).
    """
    lively = models.PendingConfirmation.objects.filter(decided_at__gte=cutoff).values("turn_id")
    stale = models.Turn.objects.filter(status="running", started_at__lt=cutoff).exclude(
        pk__in=lively
    )
    ids = list(stale.values_list("pk", flat=True))
    if ids:
        changes = turn_columns("aborted", None, None, now)
        models.Turn.objects.filter(pk__in=ids, status="running").update(**changes)
    return ids


def suspend_turn(
    owner: Owner,
    conversation_id: UUID,
    turn_id: str,
    *,
    items: Sequence[MessageItem],
    confirmation: NewConfirmation,
    now: datetime,
    position: int | None = None,
) -> PendingConfirmation:
    """Suspend a running turn on a confirmation: 3 statements in one transaction, 4 with items.

    With items and no `position` (or one another turn took), 5: the end is read first.

    The move to `awaiting_confirmation`, the conversation's touch (owner check and row
    lock), the items at `position` (`_moved_with_items`, as `close_turn`) and the
    confirmation's insert: one commit (the three store calls this replaces took three, and seven
    statements), and nothing stored if any part fails: a turn aborted meanwhile keeps
    no confirmation that could resume it.

    Raises:
        TurnTransitionError: The turn is not running (nothing is stored).
        ConversationNotFoundError: The conversation is not the owner's (nothing is stored).
        LookupError: No such turn.
    """
    status = "awaiting_confirmation"

    def record() -> models.PendingConfirmation:
        return models.PendingConfirmation.objects.create(
            conversation_id=conversation_id, turn_id=turn_id, created_at=now,
            call_id=confirmation.call_id, mutation=confirmation.mutation,
            input=dict(confirmation.input), preview=confirmation.preview,
            approver=confirmation.approver, expires_at=aware(confirmation.expires_at),
            state=dict(confirmation.state),
        )  # fmt: skip

    changes = turn_columns(status, None, None, now)
    row = _moved_with_items(
        owner, conversation_id, turn_id, status=status, changes=changes, items=items,
        now=now, position=position, then=record,
    )  # fmt: skip
    return confirmation_record(row)
