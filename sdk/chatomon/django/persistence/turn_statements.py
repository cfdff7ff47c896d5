"""The statements that open and close a turn, as hand-composed SQL (see `model_sql`).

Each function runs one statement on the cursor it is given; `chatomon.django.persistence.queries`
orders them and owns the rules (owner checks, transitions, positions, transactions).
Rows read back carry the attributes model instances would have, so the records come
from the same `chatomon.django.persistence.rows` mapping as every other read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any
from uuid import UUID

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from chatomon.chat.store.records import Conversation, MessageItem, Owner, StoredMessage, TurnRecord
from chatomon.django import models
from chatomon.django.persistence.model_sql import ModelSQL, model_sql
from chatomon.django.persistence.rows import conversation_record, message_fields, message_record

__all__ = [
    "ONE_STATEMENT_ITEMS",
    "insert_conversation",
    "insert_messages",
    "insert_new_conversation",
    "insert_turn",
    "last_position",
    "move_turn",
    "one_statement_for_a_new_conversation",
    "owned_conversation",
    "stored_messages",
    "touch_conversation",
    "turn_status",
]


def _owner_condition(connection: BaseDatabaseWrapper) -> str:
    sql = model_sql(connection, models.Conversation)
    id_, kind, key = (sql.column(name) for name in ("id", "owner_kind", "owner_key"))
    return f"{id_} = %s AND {kind} = %s AND {key} = %s"


def _owner_parameters(
    connection: BaseDatabaseWrapper, owner: Owner, conversation_id: UUID
) -> list[Any]:
    sql = model_sql(connection, models.Conversation)
    return [sql.parameter(connection, "id", conversation_id), owner.kind, owner.key]


def _row(sql: ModelSQL, connection: BaseDatabaseWrapper, row: Sequence[Any]) -> Any:
    """A row of every concrete field (in `_meta` order) as a model instance's attributes.

    `conversation_id`, `pk` and the rest are what the `rows` mapping reads; building a model
    instance per row would cost more than the statement.
    """
    values = sql.python(connection, tuple(sql.fields), row)
    attributes = dict(zip(sql.attnames, values.values(), strict=True))
    return SimpleNamespace(**attributes, pk=attributes[sql.model._meta.pk.attname])


def insert_conversation(
    cursor: CursorWrapper, conversation: Conversation, *, updated_at: datetime | None = None
) -> None:
    """Insert a new, empty conversation (`updated_at` when it was already used)."""
    cursor.execute(*_conversation_insert(cursor.db, conversation, updated_at))


def _conversation_insert(
    connection: BaseDatabaseWrapper, conversation: Conversation, updated_at: datetime | None
) -> tuple[str, list[Any]]:
    sql = model_sql(connection, models.Conversation)
    values: dict[str, Any] = {
        "id": conversation.id, "owner_kind": conversation.owner.kind,
        "owner_key": conversation.owner.key, "title": conversation.title,
        "created_at": conversation.created_at,
        "updated_at": updated_at or conversation.updated_at, "summary_text": None,
        "summary_through_id": None, "summary_through_position": None,
    }  # fmt: skip
    return sql.insert(tuple(values)), sql.prepared(connection, values)


ONE_STATEMENT_ITEMS = 1000
"""The most items written in one statement with their conversation (PostgreSQL takes at
most 65,535 parameters in a statement; an item has a dozen)."""


def one_statement_for_a_new_conversation(
    connection: BaseDatabaseWrapper, items: Sequence[MessageItem]
) -> bool:
    """Whether `insert_new_conversation` of `items` is one statement, atomic on its own.

    On PostgreSQL it is (a data-modifying WITH; the foreign keys are checked as the
    statement commits): one round trip to the server, no BEGIN and COMMIT. SQLite has no
    such WITH: there it is three statements, which a transaction must hold together.
    """
    return connection.vendor == "postgresql" and 0 < len(items) <= ONE_STATEMENT_ITEMS


def insert_new_conversation(
    cursor: CursorWrapper,
    conversation: Conversation,
    turn: TurnRecord,
    items: Sequence[MessageItem],
    now: datetime,
    **changes: Any,
) -> None:
    """Insert a new conversation, its ended `turn` (with `changes`) and `items` at once.

    One statement: only where `one_statement_for_a_new_conversation` says it can be.
    """
    connection = cursor.db
    *first, (last, last_parameters) = (
        _conversation_insert(connection, conversation, now),
        _turn_insert(connection, turn, changes),
        _messages_insert(connection, conversation.id, items, 0, now),
    )
    steps = ", ".join(f"step{number} AS ({sql})" for number, (sql, _) in enumerate(first))
    parameters = [value for _, values in first for value in values]
    cursor.execute(f"WITH {steps} {last}", [*parameters, *last_parameters])


def owned_conversation(
    cursor: CursorWrapper, owner: Owner, conversation_id: UUID
) -> Conversation | None:
    """The owner's conversation, or None when unknown or another owner's."""
    connection = cursor.db
    sql = model_sql(connection, models.Conversation)
    cursor.execute(
        sql.select(tuple(sql.fields), _owner_condition(connection)),
        _owner_parameters(connection, owner, conversation_id),
    )
    row = cursor.fetchone()
    return None if row is None else conversation_record(_row(sql, connection, row))


def stored_messages(cursor: CursorWrapper, conversation_id: UUID) -> list[StoredMessage]:
    """The conversation's items in position order."""
    connection = cursor.db
    sql = model_sql(connection, models.ChatMessage)
    where = f"{sql.column('conversation')} = %s"
    cursor.execute(
        sql.select(tuple(sql.fields), where, order=sql.column("position")),
        [sql.parameter(connection, "conversation", conversation_id)],
    )
    return [message_record(_row(sql, connection, row)) for row in cursor.fetchall()]


def insert_turn(cursor: CursorWrapper, turn: TurnRecord, **changes: Any) -> None:
    """Insert a new turn of a conversation: the record, with `changes` (an ended turn's)."""
    cursor.execute(*_turn_insert(cursor.db, turn, changes))


def _turn_insert(
    connection: BaseDatabaseWrapper, turn: TurnRecord, changes: Mapping[str, Any]
) -> tuple[str, list[Any]]:
    sql = model_sql(connection, models.Turn)
    values: dict[str, Any] = {
        "id": turn.id, "conversation": turn.conversation_id, "status": turn.status,
        "report": None, "final_action": None, "escalated": False, "input_tokens": 0,
        "output_tokens": 0, "started_at": turn.started_at, "finished_at": None, **changes,
    }  # fmt: skip
    return sql.insert(tuple(values)), sql.prepared(connection, values)


def move_turn(
    cursor: CursorWrapper, turn_id: str, changes: Mapping[str, Any], sources: Collection[str]
) -> int:
    """Apply `changes` to the turn if its status is one of `sources`; the rows changed."""
    if not sources:
        return 0  # no status may move there: nothing can match
    connection = cursor.db
    sql = model_sql(connection, models.Turn)
    ordered = sorted(sources)
    marks = ", ".join(["%s"] * len(ordered))
    where = f"{sql.column('id')} = %s AND {sql.column('status')} IN ({marks})"
    cursor.execute(
        sql.update(changes, where), [*sql.prepared(connection, changes), turn_id, *ordered]
    )
    return int(cursor.rowcount)


def turn_status(cursor: CursorWrapper, turn_id: str) -> str | None:
    """The turn's status, or None when there is no such turn."""
    sql = model_sql(cursor.db, models.Turn)
    cursor.execute(sql.select(("status",), f"{sql.column('id')} = %s"), [turn_id])
    row = cursor.fetchone()
    return None if row is None else str(row[0])


def touch_conversation(
    cursor: CursorWrapper, owner: Owner, conversation_id: UUID, now: datetime
) -> int:
    """Set the owner's conversation's `updated_at`; the rows changed (0 or 1)."""
    connection = cursor.db
    sql = model_sql(connection, models.Conversation)
    cursor.execute(
        sql.update(("updated_at",), _owner_condition(connection)),
        [
            *sql.prepared(connection, {"updated_at": now}),
            *_owner_parameters(connection, owner, conversation_id),
        ],
    )
    return int(cursor.rowcount)


def last_position(cursor: CursorWrapper, conversation_id: UUID) -> int | None:
    """The highest position stored in the conversation, None when it has no items."""
    connection = cursor.db
    sql = model_sql(connection, models.ChatMessage)
    table, column = sql.table, sql.column("position")
    cursor.execute(
        f"SELECT MAX({column}) FROM {table} WHERE {sql.column('conversation')} = %s",  # noqa: S608
        [sql.parameter(connection, "conversation", conversation_id)],
    )
    row = cursor.fetchone()
    return None if row is None or row[0] is None else int(row[0])


def insert_messages(
    cursor: CursorWrapper,
    conversation_id: UUID,
    items: Sequence[MessageItem],
    start: int,
    now: datetime,
) -> None:
    """Insert `items` (at least one) at positions `start`, `start + 1`, ..."""
    connection = cursor.db
    sql = model_sql(connection, models.ChatMessage)
    rows = _message_rows(conversation_id, items, start, now)
    prepared = [sql.prepared(connection, row) for row in rows]
    cursor.executemany(sql.insert(tuple(rows[0])), prepared)


def _message_rows(
    conversation_id: UUID, items: Sequence[MessageItem], start: int, now: datetime
) -> list[dict[str, Any]]:
    return [
        {
            "conversation": conversation_id, "position": start + offset, "created_at": now,
            **message_fields(item),
        }
        for offset, item in enumerate(items)
    ]  # fmt: skip


def _messages_insert(
    connection: BaseDatabaseWrapper,
    conversation_id: UUID,
    items: Sequence[MessageItem],
    start: int,
    now: datetime,
) -> tuple[str, list[Any]]:
    """One INSERT of every item, a row each in its VALUES."""
    sql = model_sql(connection, models.ChatMessage)
    rows = _message_rows(conversation_id, items, start, now)
    statement = sql.insert(tuple(rows[0]), rows=len(rows))
    return statement, [value for row in rows for value in sql.prepared(connection, row)]
