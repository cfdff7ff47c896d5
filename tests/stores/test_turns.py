"""Turns: validated status transitions, the TurnReport and usage."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

import pytest

from chatomon.chat.store import (
    ConversationNotFoundError,
    ConversationStore,
    MessageItem,
    Owner,
    TurnTransitionError,
)
from chatomon.schemas import TokenUsage, TurnReport
from tests.stores.conftest import NOW

OWNER = Owner.user(7)


def report(turn_id: str) -> TurnReport:
    return TurnReport(
        turn_id=turn_id, conversation_id=None, atom_name="data", started_at=NOW,
        duration_ms=12.5, final_action="answered", escalated=True, input=(), output=(),
        usage=TokenUsage(input_tokens=100, output_tokens=20),
    )  # fmt: skip


async def test_a_turn_runs_pauses_resumes_and_completes_with_its_report(
    store: ConversationStore,
) -> None:
    conversation = await store.create_conversation(OWNER)
    turn = await store.start_turn(OWNER, conversation.id, turn_id="t-1", now=NOW)
    assert (turn.id, turn.status, turn.report, turn.finished_at) == ("t-1", "running", None, None)
    await store.update_turn("t-1", status="awaiting_confirmation")
    await store.update_turn("t-1", status="running")
    done = await store.update_turn(
        "t-1", status="completed", report=report("t-1"), now=NOW + timedelta(seconds=5)
    )
    assert done.status == "completed" and done.finished_at == NOW + timedelta(seconds=5)
    assert done.final_action == "answered" and done.escalated
    assert done.usage == TokenUsage(input_tokens=100, output_tokens=20)
    assert done.report is not None and done.report["turn_id"] == "t-1"
    assert TurnReport.model_validate(done.report) == report("t-1")
    assert await store.get_turn("t-1") == done


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        ([], "running"),
        (["completed"], "running"),
        (["aborted"], "completed"),
        (["awaiting_confirmation"], "completed"),
        (["awaiting_confirmation"], "awaiting_confirmation"),
    ],
)
async def test_disallowed_transitions_raise_a_clear_error(
    store: ConversationStore, path: list[str], bad: str
) -> None:
    conversation = await store.create_conversation(OWNER)
    turn = await store.start_turn(OWNER, conversation.id)
    for status in path:
        await store.update_turn(turn.id, status=status)
    current = path[-1] if path else "running"
    with pytest.raises(TurnTransitionError, match=f"cannot go from '{current}' to '{bad}'"):
        await store.update_turn(turn.id, status=bad)
    assert (await store.get_turn(turn.id)).status == current


async def test_unknown_turns_and_statuses(store: ConversationStore) -> None:
    conversation = await store.create_conversation(OWNER)
    turn = await store.start_turn(OWNER, conversation.id)
    with pytest.raises(ValueError, match="unknown turn status 'done'"):
        await store.update_turn(turn.id, status="done")
    with pytest.raises(LookupError, match="no turn"):
        await store.update_turn("missing", status="aborted")
    assert await store.get_turn("missing") is None
    with pytest.raises(ValueError, match="already exists"):
        await store.start_turn(OWNER, conversation.id, turn_id=turn.id)


async def test_usage_without_a_report_and_list_filters(store: ConversationStore) -> None:
    first = await store.create_conversation(OWNER)
    second = await store.create_conversation(OWNER)
    a = await store.start_turn(OWNER, first.id, turn_id="a", now=NOW)
    await store.start_turn(OWNER, first.id, turn_id="b", now=NOW + timedelta(seconds=1))
    await store.start_turn(OWNER, second.id, turn_id="c", now=NOW + timedelta(seconds=2))
    aborted = await store.update_turn(a.id, status="aborted", usage=TokenUsage(input_tokens=3))
    assert aborted.usage.input_tokens == 3 and aborted.report is None
    assert [t.id for t in await store.list_turns()] == ["c", "b", "a"]
    assert [t.id for t in await store.list_turns(conversation_id=first.id)] == ["b", "a"]
    assert [t.id for t in await store.list_turns(status="running", limit=1)] == ["c"]
    assert [t.id for t in await store.list_turns(status="aborted")] == ["a"]


async def test_open_turn_starts_a_conversation_and_a_running_turn(store: ConversationStore) -> None:
    opened = await store.open_turn(OWNER, None, now=NOW)
    assert opened is not None and opened.messages == []
    assert opened.conversation.owner == OWNER
    assert (opened.turn.status, opened.turn.conversation_id) == ("running", opened.conversation.id)
    assert await store.get_turn(opened.turn.id) == opened.turn
    assert await store.list_conversations(OWNER) == [opened.conversation]


async def test_open_turn_in_a_conversation_gives_its_items(store: ConversationStore) -> None:
    conversation = await store.create_conversation(OWNER)
    await store.append_messages(OWNER, conversation.id, [MessageItem.user("Hi")])
    opened = await store.open_turn(OWNER, conversation.id)
    assert opened is not None and opened.conversation.id == conversation.id
    assert [m.item.content for m in opened.messages] == ["Hi"]


async def test_open_turn_refuses_another_owners_conversation(store: ConversationStore) -> None:
    conversation = await store.create_conversation(OWNER)
    assert await store.open_turn(Owner.user(8), conversation.id) is None
    assert await store.open_turn(OWNER, uuid4()) is None
    assert await store.list_turns(conversation_id=conversation.id) == []


async def test_close_turn_stores_the_items_and_the_report(store: ConversationStore) -> None:
    opened = await store.open_turn(OWNER, None)
    assert opened is not None
    items = [MessageItem.user("Hi"), MessageItem.assistant("Hello.")]
    await store.close_turn(
        OWNER,
        opened.conversation.id,
        opened.turn.id,
        items=items,
        status="completed",
        report=report(opened.turn.id),
        now=NOW + timedelta(seconds=1),
    )
    stored = await store.messages(OWNER, opened.conversation.id)
    assert [(m.position, m.item) for m in stored] == [(0, items[0]), (1, items[1])]
    turn = await store.get_turn(opened.turn.id)
    assert turn is not None and turn.status == "completed" and turn.final_action == "answered"
    conversation = await store.get_conversation(OWNER, opened.conversation.id)
    assert conversation is not None and conversation.updated_at == NOW + timedelta(seconds=1)


async def test_close_turn_refuses_a_finished_turn_and_stores_nothing(
    store: ConversationStore,
) -> None:
    opened = await store.open_turn(OWNER, None)
    assert opened is not None
    await store.update_turn(opened.turn.id, status="aborted")
    with pytest.raises(TurnTransitionError):
        await store.close_turn(
            OWNER,
            opened.conversation.id,
            opened.turn.id,
            items=[MessageItem.user("late")],
            status="completed",
        )
    assert await store.messages(OWNER, opened.conversation.id) == []


async def test_close_turn_refuses_another_owner(store: ConversationStore) -> None:
    opened = await store.open_turn(OWNER, None)
    assert opened is not None
    with pytest.raises(ConversationNotFoundError):
        await store.close_turn(
            Owner.user(8), opened.conversation.id, opened.turn.id, items=[], status="completed"
        )
    turn = await store.get_turn(opened.turn.id)
    assert turn is not None and turn.status == "running"


async def test_close_turn_appends_at_the_real_end_when_another_turn_wrote_first(
    store: ConversationStore,
) -> None:
    opened = await store.open_turn(OWNER, None)
    assert opened is not None
    # Another turn of the conversation stores its items after this one opened.
    await store.append_messages(OWNER, opened.conversation.id, [MessageItem.user("first")])
    await store.close_turn(
        OWNER,
        opened.conversation.id,
        opened.turn.id,
        items=[MessageItem.user("second"), MessageItem.assistant("reply")],
        status="completed",
        position=0,  # stale: position 0 is taken
    )
    stored = await store.messages(OWNER, opened.conversation.id)
    assert [(m.position, m.item.content) for m in stored] == [
        (0, "first"),
        (1, "second"),
        (2, "reply"),
    ]
    turn = await store.get_turn(opened.turn.id)
    assert turn is not None and turn.status == "completed"


async def test_open_turn_latest_continues_the_owners_most_recent_conversation(
    store: ConversationStore,
) -> None:
    older = await store.create_conversation(OWNER, now=NOW)
    newer = await store.create_conversation(OWNER, now=NOW + timedelta(seconds=1))
    await store.create_conversation(Owner.user(8), now=NOW + timedelta(seconds=2))
    opened = await store.open_turn(OWNER, None, latest=True)
    assert opened is not None and opened.conversation.id == newer.id
    named = await store.open_turn(OWNER, older.id, latest=True)  # a named one wins
    assert named is not None and named.conversation.id == older.id
    fresh = await store.open_turn(OWNER, None)  # without `latest`: a new one
    assert fresh is not None and fresh.conversation.id not in {older.id, newer.id}
    first = await store.open_turn(Owner.session("s-1"), None, latest=True)  # none yet: new
    assert first is not None and first.messages == []
