"""Opening and closing a turn on the ORM: the statements each takes and the rows they leave."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatomon.chat.store import MessageItem, Owner
from chatomon.django import models
from chatomon.django.persistence import conversations, turns
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
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def statements(work: Any) -> tuple[Any, list[str]]:
    """What `work()` returns and the SQL it ran, transaction control left out."""
    with CaptureQueriesContext(connection) as captured:
        result = work()
    sql = [query["sql"] for query in captured.captured_queries]
    return result, [s for s in sql if not s.upper().startswith(TRANSACTION_CONTROL)]


def close(opened: Any, now: Any, position: int | None = 0) -> None:
    """Close the opened turn as completed, with ITEMS and a report."""
    turns.close_turn(
        OWNER, opened.conversation.id, opened.turn.id, items=ITEMS, status="completed",
        report=report(opened.turn.id), now=now, position=position,
    )  # fmt: skip


def test_a_new_conversation_opens_in_two_inserts_with_the_model_defaults() -> None:
    opened, sql = statements(lambda: turns.open_turn(OWNER, None, NOW))
    assert opened is not None
    assert len(sql) == 2 and all(s.upper().startswith("INSERT") for s in sql)
    conversation = models.Conversation.objects.get(pk=opened.conversation.id)
    assert (conversation.owner_kind, conversation.owner_key) == (OWNER.kind, OWNER.key)
    assert (conversation.created_at, conversation.updated_at, conversation.title) == (NOW, NOW, "")
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


def test_continuing_the_latest_conversation_costs_one_read_more_only_when_there_is_none() -> None:
    _, sql = statements(lambda: turns.open_turn(OWNER, None, NOW, latest=True))
    assert [s.split()[0].upper() for s in sql] == ["SELECT", "INSERT", "INSERT"]
    later = NOW + timedelta(seconds=1)
    again, sql = statements(lambda: turns.open_turn(OWNER, None, later, latest=True))
    assert again is not None and [s.split()[0].upper() for s in sql] == [
        "SELECT",
        "SELECT",
        "INSERT",
    ]
    assert models.Conversation.objects.count() == 1


def test_a_close_is_three_statements_and_the_next_open_reads_the_items_back() -> None:
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    later = NOW + timedelta(seconds=3)
    _, sql = statements(lambda: close(opened, later))
    # The move, the owner check (the conversation's touch) and one insert of all items.
    assert [s.split()[0].upper() for s in sql] == ["UPDATE", "UPDATE", "INSERT"]
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

    again, sql = statements(lambda: turns.open_turn(OWNER, opened.conversation.id, later))
    assert again is not None and len(sql) == 3
    assert [m.item for m in again.messages] == ITEMS
    assert [m.position for m in again.messages] == [0, 1, 2, 3, 4]
    assert all(m.created_at == later for m in again.messages)
    assert (again.conversation.created_at, again.conversation.updated_at) == (NOW, later)


def test_a_close_at_a_taken_position_is_redone_at_the_real_end() -> None:
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    conversations.append_messages(OWNER, opened.conversation.id, [MessageItem.user("first")], NOW)
    _, sql = statements(lambda: close(opened, NOW, position=0))
    # The failed attempt (3, rolled back), then the move, the touch, the end read, the insert.
    assert len(sql) == 7
    stored = conversations.messages(OWNER, opened.conversation.id)
    assert [m.position for m in stored] == list(range(len(ITEMS) + 1))
    assert [m.item for m in stored[1:]] == ITEMS


def test_appended_items_come_back_with_their_ids_from_one_insert() -> None:
    conversation = conversations.create_conversation(OWNER, "", NOW)
    stored, sql = statements(
        lambda: conversations.append_messages(OWNER, conversation.id, ITEMS, NOW)
    )
    # The touch, the end read, one insert: the ids come back with it.
    assert [s.split()[0].upper() for s in sql] == ["UPDATE", "SELECT", "INSERT"]
    rows = models.ChatMessage.objects.filter(conversation_id=conversation.id).order_by("position")
    assert [m.id for m in stored] == [row.pk for row in rows]


def test_a_stored_summary_is_read_back_by_open_turn() -> None:
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    models.Conversation.objects.filter(pk=opened.conversation.id).update(
        summary_text="earlier", summary_through_id=5, summary_through_position=4
    )
    again = turns.open_turn(OWNER, opened.conversation.id, NOW)
    assert again is not None and again.conversation.summary is not None
    assert (again.conversation.summary.text, again.conversation.summary.through_position) == (
        "earlier",
        4,
    )


def test_closing_an_unknown_turn_is_a_lookup_error() -> None:
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    with pytest.raises(LookupError, match="no turn"):
        turns.close_turn(
            OWNER, opened.conversation.id, "missing", items=[], status="completed",
            report=None, now=NOW,
        )  # fmt: skip


def test_a_conversations_items_are_read_through_the_position_index() -> None:
    # ChatMessage.conversation has no index of its own: the unique (conversation,
    # position) constraint's serves the store's read of a conversation's items.
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    _, sql = statements(lambda: conversations.items_of(opened.conversation.id))
    assert len(sql) == 1
    # The captured SQL has its parameters inlined for display: explain the same query.
    explained = models.ChatMessage.objects.filter(conversation_id=opened.conversation.id)
    explained = explained.order_by("position")
    if connection.vendor == "sqlite":
        plan = explained.explain()
        assert "USING INDEX" in plan and "SCAN" not in plan, plan
    else:
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = off")
            plan = explained.explain()
            cursor.execute("SET enable_seqscan = on")
        assert "chatomon_message_position" in plan, plan
