"""Turns: validated status transitions, the TurnReport and usage."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatomon.chat.store import ConversationStore, Owner, TurnTransitionError
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
