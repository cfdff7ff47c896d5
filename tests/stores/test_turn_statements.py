"""The hand-composed SQL of open_turn and close_turn reads and writes what the ORM does."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from chatomon.chat.store import MessageItem, Owner
from chatomon.chat.store.records import OpenedTurn, PlannedTurn
from chatomon.django import models
from chatomon.django.persistence import queries, turn_statements
from chatomon.providers.base import ToolCall
from tests.stores.conftest import NOW
from tests.stores.test_turns import report

pytestmark = pytest.mark.django_db
OWNER = Owner.session("s" * 80)  # long keys are stored hashed
ITEMS = [
    MessageItem.user("Which projects use aluminium — «ünïcode»?"),
    MessageItem(
        kind="tool_calls",
        tool_calls=(ToolCall("call-1", "query", {"filters": {"a__b": [1, None, "x"]}}),),
    ),
    MessageItem(
        kind="tool_result",
        call_id="call-1",
        name="query",
        result={"data": [{"id": 2, "cost": "2.50"}], "total_count": 1, "has_more": False},
    ),
    MessageItem(kind="tool_result", call_id="call-2", name="query", result=None, blocked=True),
    MessageItem.assistant("Mercury."),
]


def statements(work: Any) -> tuple[Any, list[str]]:
    """What `work()` returns and the SQL it ran (BEGIN and COMMIT included where sent)."""
    with CaptureQueriesContext(connection) as captured:
        result = work()
    return result, [query["sql"] for query in captured.captured_queries]


def test_a_new_conversation_opens_in_two_statements_and_matches_the_orm_rows() -> None:
    opened, sql = statements(lambda: queries.open_turn(OWNER, None, NOW))
    assert opened is not None and len(sql) == 2
    conversation = models.Conversation.objects.get(pk=opened.conversation.id)
    assert (conversation.owner_kind, conversation.owner_key) == (OWNER.kind, OWNER.key)
    assert (conversation.created_at, conversation.updated_at) == (NOW, NOW)
    turn = models.Turn.objects.get(pk=opened.turn.id)
    assert (turn.conversation_id, turn.status, turn.started_at) == (
        opened.conversation.id,
        "running",
        NOW,
    )
    assert (turn.report, turn.finished_at, turn.input_tokens, turn.escalated) == (
        None,
        None,
        0,
        False,
    )


def test_closed_items_read_back_alike_through_the_orm_and_the_next_open() -> None:
    opened = queries.open_turn(OWNER, None, NOW)
    assert opened is not None
    later = NOW + timedelta(seconds=3)
    _, sql = statements(
        lambda: queries.close_turn(
            OWNER,
            opened.conversation.id,
            opened.turn.id,
            items=ITEMS,
            status="completed",
            report=report(opened.turn.id),
            now=later,
            position=0,
        )
    )
    # The move, the owner check and one insert for all items, in one transaction.
    writes = [
        s for s in sql if not s.upper().startswith(("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"))
    ]
    assert len(writes) == 3
    rows = models.ChatMessage.objects.filter(conversation_id=opened.conversation.id)
    assert [row.position for row in rows.order_by("position")] == [0, 1, 2, 3, 4]
    assert rows.get(position=2).result == ITEMS[2].result
    assert rows.get(position=1).tool_calls == [
        {"id": "call-1", "name": "query", "arguments": {"filters": {"a__b": [1, None, "x"]}}}
    ]
    assert rows.get(position=3).result is None and rows.get(position=3).blocked
    turn = models.Turn.objects.get(pk=opened.turn.id)
    assert (turn.status, turn.finished_at, turn.final_action) == ("completed", later, "answered")
    assert (turn.input_tokens, turn.output_tokens) == (100, 20)
    assert turn.report == report(opened.turn.id).model_dump(mode="json")

    again, sql = statements(lambda: queries.open_turn(OWNER, opened.conversation.id, later))
    assert again is not None and len(sql) == 3
    assert [m.item for m in again.messages] == ITEMS
    assert [m.position for m in again.messages] == [0, 1, 2, 3, 4]
    assert all(m.created_at == later for m in again.messages)
    assert again.conversation.updated_at == later
    assert again.conversation.created_at == NOW


def close_planned(planned: PlannedTurn, now: Any) -> None:
    """Close the planned turn as completed, with ITEMS and a report."""
    opened = planned.opened
    queries.close_turn(
        OWNER, opened.conversation.id, opened.turn.id, items=ITEMS, status="completed",
        report=report(opened.turn.id), now=now, position=0, planned=planned,
    )  # fmt: skip


def test_a_planned_turn_of_a_new_conversation_is_written_in_one_trip() -> None:
    planned, sql = statements(lambda: queries.plan_turn(OWNER, None, NOW))
    assert planned is not None and sql == []
    later = NOW + timedelta(seconds=3)
    opened = planned.opened
    _, sql = statements(lambda: close_planned(planned, later))
    if turn_statements.one_statement_for_a_new_conversation(connection, ITEMS):
        # PostgreSQL: the conversation, the ended turn and the items in one statement,
        # atomic alone: no transaction to open or commit.
        assert len(sql) == 1 and sql[0].startswith("WITH ") and sql[0].count("INSERT INTO") == 3
    else:
        # The conversation, the ended turn and one insert for all items, in a transaction.
        transaction = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")
        writes = [s for s in sql if not s.upper().startswith(transaction)]
        assert len(writes) == 3 and all("INSERT INTO" in write.upper() for write in writes)
    turn = models.Turn.objects.get(pk=opened.turn.id)
    assert (turn.status, turn.started_at, turn.finished_at) == ("completed", NOW, later)
    assert (turn.input_tokens, turn.output_tokens, turn.final_action) == (100, 20, "answered")
    assert turn.report == report(opened.turn.id).model_dump(mode="json")
    again = queries.open_turn(OWNER, opened.conversation.id, later)
    assert again is not None and [m.item for m in again.messages] == ITEMS
    assert (again.conversation.created_at, again.conversation.updated_at) == (NOW, later)


def test_a_stored_summary_is_read_back_by_open_turn() -> None:
    opened = queries.open_turn(OWNER, None, NOW)
    assert opened is not None
    models.Conversation.objects.filter(pk=opened.conversation.id).update(
        summary_text="earlier", summary_through_id=5, summary_through_position=4
    )
    again = queries.open_turn(OWNER, opened.conversation.id, NOW)
    assert again is not None and again.conversation.summary is not None
    assert (again.conversation.summary.text, again.conversation.summary.through_position) == (
        "earlier",
        4,
    )


def test_closing_an_unknown_turn_is_a_lookup_error() -> None:
    opened = queries.open_turn(OWNER, None, NOW)
    assert opened is not None
    with pytest.raises(LookupError, match="no turn"):
        queries.close_turn(
            OWNER,
            opened.conversation.id,
            "missing",
            items=[],
            status="completed",
            report=None,
            now=NOW,
        )


def test_a_conversations_items_are_read_through_the_position_index() -> None:
    # ChatMessage.conversation has no index of its own: the unique (conversation,
    # position) constraint's serves the store's read of a conversation's items.
    opened = queries.open_turn(OWNER, None, NOW)
    assert opened is not None

    def read() -> Any:
        with connection.cursor() as cursor:
            return turn_statements.stored_messages(cursor, opened.conversation.id)

    _, sql = statements(read)
    query = sql[-1]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {query}")
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert "USING INDEX" in plan and "SCAN" not in plan, plan
        else:
            cursor.execute("SET enable_seqscan = off")
            cursor.execute(f"EXPLAIN {query}")
            plan = " ".join(row[0] for row in cursor.fetchall())
            cursor.execute("SET enable_seqscan = on")
            assert "chatomon_message_position" in plan, plan


@pytest.mark.django_db(transaction=True)
def test_a_new_conversation_that_cannot_be_written_whole_is_not_written_at_all() -> None:
    taken = queries.open_turn(OWNER, None, NOW)
    assert taken is not None
    planned = queries.plan_turn(OWNER, None, NOW)
    assert planned is not None
    # Its turn id is another turn's: the turn's insert fails after the conversation's.
    clash = PlannedTurn(
        OpenedTurn(
            planned.opened.conversation,
            [],
            dataclasses.replace(planned.opened.turn, id=taken.turn.id),
        ),
        new_conversation=True,
    )
    with pytest.raises(IntegrityError):
        close_planned(clash, NOW)
    assert not models.Conversation.objects.filter(pk=clash.opened.conversation.id).exists()
    assert models.ChatMessage.objects.count() == 0


def test_more_items_than_one_statement_takes_are_written_in_a_transaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(turn_statements, "ONE_STATEMENT_ITEMS", len(ITEMS) - 1)
    planned = queries.plan_turn(OWNER, None, NOW)
    assert planned is not None
    _, sql = statements(lambda: close_planned(planned, NOW))
    assert sum("INSERT INTO" in statement.upper() for statement in sql) == 3
    again = queries.open_turn(OWNER, planned.opened.conversation.id, NOW)
    assert again is not None and [m.item for m in again.messages] == ITEMS
