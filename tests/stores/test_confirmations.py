"""Pending confirmations: one atomic claim, expiry on read and by sweep, no replay."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest

from chatomon.chat.store import (
    TIMED_OUT_REASON,
    Approver,
    ConversationStore,
    NewConfirmation,
    Owner,
    PendingConfirmation,
)
from tests.stores.conftest import NOW

OWNER = Owner.session("s" * 40)
EXPIRES = NOW + timedelta(minutes=10)


async def pending(
    store: ConversationStore, owner: Owner = OWNER, approver: Approver = "client"
) -> PendingConfirmation:
    conversation = await store.create_conversation(owner, now=NOW)
    turn = await store.start_turn(owner, conversation.id, now=NOW)
    asked = NewConfirmation(
        call_id="call-1", mutation="createPart", input={"name": "Bolt"},
        preview={"new": {"name": "Bolt"}}, approver=approver, expires_at=EXPIRES,
        state={"messages": [{"role": "user", "content": "add"}]},
    )  # fmt: skip
    return await store.suspend_turn(
        owner, conversation.id, turn.id, items=[], confirmation=asked, now=NOW
    )


async def test_a_confirmation_round_trips(store: ConversationStore) -> None:
    created = await pending(store)
    assert created.status == "pending" and created.expires_at == EXPIRES
    read = await store.get_confirmation(created.id, now=NOW)
    assert read == created
    assert read.input == {"name": "Bolt"} and read.state["messages"][0]["content"] == "add"
    assert await store.get_confirmation(created.id, owner=OWNER, now=NOW) == created
    assert await store.get_confirmation(created.id, owner=Owner.user(1), now=NOW) is None
    assert await store.get_confirmation(uuid.uuid4(), now=NOW) is None


async def test_the_first_claim_wins_and_a_decision_cannot_be_replayed(
    store: ConversationStore,
) -> None:
    created = await pending(store)
    won = await store.claim(
        created.id, decision="approved", decided_by="user:1", now=NOW + timedelta(minutes=1)
    )
    assert won is not None and won.status == "approved" and won.decided_by == "user:1"
    assert won.decided_at == NOW + timedelta(minutes=1)
    for decision in ("approved", "rejected"):
        assert await store.claim(created.id, decision=decision, decided_by="x", now=NOW) is None
    assert (await store.get_confirmation(created.id, now=NOW)).status == "approved"


async def test_claims_that_lose(store: ConversationStore) -> None:
    created = await pending(store)
    assert await store.claim(uuid.uuid4(), decision="approved", decided_by="x", now=NOW) is None
    wrong_owner = await store.claim(
        created.id, decision="approved", decided_by="x", owner=Owner.user(9), now=NOW
    )
    assert wrong_owner is None
    assert await store.claim(created.id, decision="approved", decided_by="x", now=EXPIRES) is None
    rejected = await store.claim(
        created.id, decision="rejected", decided_by="staff:3", reason="no", owner=OWNER, now=NOW
    )
    assert rejected is not None and rejected.reason == "no"


async def test_a_bad_decision_or_approver_is_refused(store: ConversationStore) -> None:
    created = await pending(store)
    with pytest.raises(ValueError, match="decision must be one of"):
        await store.claim(created.id, decision="pending", decided_by="x", now=NOW)
    with pytest.raises(ValueError, match="approver must be"):
        await pending(store, approver="robot")


async def test_a_pending_row_past_expiry_reads_as_expired(store: ConversationStore) -> None:
    created = await pending(store)
    staff = await pending(store, Owner.user(5), approver="staff")
    late = await store.get_confirmation(created.id, now=EXPIRES)
    assert late.status == "expired" and late.reason == TIMED_OUT_REASON
    assert [c.id for c in await store.list_pending(now=NOW)] == [created.id, staff.id]
    assert [c.id for c in await store.list_pending("staff", now=NOW)] == [staff.id]
    assert await store.list_pending(now=EXPIRES) == []


async def test_expire_due_marks_overdue_rows_once(store: ConversationStore) -> None:
    created = await pending(store)
    assert await store.expire_due(NOW) == []
    expired = await store.expire_due(EXPIRES + timedelta(seconds=1))
    assert [(c.id, c.status, c.reason) for c in expired] == [
        (created.id, "expired", TIMED_OUT_REASON)
    ]
    assert await store.expire_due(EXPIRES + timedelta(hours=1)) == []
    assert await store.claim(created.id, decision="approved", decided_by="x", now=NOW) is None


async def test_expire_due_of_one_confirmation_leaves_the_others(store: ConversationStore) -> None:
    first, second = await pending(store), await pending(store)
    later = EXPIRES + timedelta(seconds=1)
    expired = await store.expire_due(later, confirmation_id=second.id)
    assert [(c.id, c.status) for c in expired] == [(second.id, "expired")]
    assert [c.id for c in await store.expire_due(later)] == [first.id]


async def test_concurrent_claims_have_exactly_one_winner(store: ConversationStore) -> None:
    created = await pending(store)
    results = await asyncio.gather(
        *(
            store.claim(created.id, decision=d, decided_by=f"actor-{i}", now=NOW)
            for i, d in enumerate(["approved", "rejected"] * 4)
        )
    )
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert (await store.get_confirmation(created.id, now=NOW)).status == winners[0].status
