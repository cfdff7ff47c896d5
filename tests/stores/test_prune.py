"""prune: stale conversations with their items, and old resolved confirmations."""

from __future__ import annotations

from datetime import timedelta

from chatomon.chat.store import (
    ConversationStore,
    MessageItem,
    NewConfirmation,
    Owner,
    PendingConfirmation,
)
from tests.stores.conftest import NOW

OWNER = Owner.user(1)


async def test_prune_deletes_stale_conversations_and_resolved_confirmations(
    store: ConversationStore,
) -> None:
    old = await store.create_conversation(OWNER, now=NOW - timedelta(days=3))
    await store.append_messages(
        OWNER, old.id, [MessageItem.user("a"), MessageItem.assistant("b")],
        now=NOW - timedelta(days=3),
    )  # fmt: skip
    await store.start_turn(OWNER, old.id, turn_id="old-turn", now=NOW - timedelta(days=3))
    fresh = await store.create_conversation(OWNER, now=NOW)

    async def confirmation(expires_in: timedelta) -> PendingConfirmation:
        # Each waits on a turn of its own.
        turn = await store.start_turn(OWNER, fresh.id, now=NOW)
        asked = NewConfirmation(
            call_id="c", mutation="m", input={}, preview=None, approver="client",
            expires_at=NOW + expires_in, state={},
        )  # fmt: skip
        return await store.suspend_turn(
            OWNER, fresh.id, turn.id, items=[], confirmation=asked, now=NOW
        )

    decided = await confirmation(timedelta(hours=1))
    await store.claim(decided.id, decision="rejected", decided_by="x", now=NOW - timedelta(days=2))
    overdue = await confirmation(-timedelta(days=2))
    live = await confirmation(timedelta(hours=1))
    recent = await confirmation(timedelta(hours=1))
    await store.claim(recent.id, decision="approved", decided_by="x", now=NOW)

    counts = await store.prune(NOW - timedelta(days=1))
    assert counts == {"conversations": 1, "messages": 2, "turns": 1, "confirmations": 2}
    assert await store.get_conversation(OWNER, old.id) is None
    assert await store.get_turn("old-turn") is None
    assert await store.get_confirmation(decided.id) is None
    assert await store.get_confirmation(overdue.id) is None
    assert await store.get_confirmation(live.id, now=NOW) is not None
    assert await store.get_confirmation(recent.id) is not None
    assert [c.id for c in await store.list_conversations(OWNER)] == [fresh.id]
