"""`open_turn(..., refuse_pending=True)`: a conversation waiting on its user refuses the turn.

The check and the opening are one unit of work in both stores (the `confirmation_pending`
rule of `ChatService.run_turn`); a refusal writes nothing.
"""

from __future__ import annotations

from datetime import timedelta

from chatomon.chat.store import ConversationStore, Owner, PendingConfirmation
from chatomon.chat.store.records import OpenedTurn
from tests.stores.conftest import NOW
from tests.stores.test_suspend import OWNER, asked

LATER = NOW + timedelta(seconds=5)


async def suspended(
    store: ConversationStore, owner: Owner = OWNER, **overrides: object
) -> PendingConfirmation:
    """A new conversation of `owner` whose turn waits on a confirmation (client by default)."""
    opened = await store.open_turn(owner, None, now=NOW)
    assert opened is not None
    return await store.suspend_turn(
        owner, opened.conversation.id, opened.turn.id, items=[], now=NOW, **asked(**overrides)
    )


async def test_a_waiting_conversation_refuses_by_id_and_as_the_current_one(
    store: ConversationStore,
) -> None:
    waiting = await suspended(store)
    before = await store.get_conversation(OWNER, waiting.conversation_id)
    for key, latest in ((waiting.conversation_id, False), (None, True)):
        refused = await store.open_turn(OWNER, key, latest=latest, refuse_pending=True, now=LATER)
        assert refused == waiting
    # Nothing written: no turn, no item, the conversation untouched.
    assert len(await store.list_turns(conversation_id=waiting.conversation_id)) == 1
    assert await store.messages(OWNER, waiting.conversation_id) == []
    assert await store.get_conversation(OWNER, waiting.conversation_id) == before
    # Without refuse_pending the opening is not checked (the store's old contract).
    opened = await store.open_turn(OWNER, waiting.conversation_id, now=LATER)
    assert isinstance(opened, OpenedTurn)


async def test_the_oldest_waiting_confirmation_is_the_one_returned(
    store: ConversationStore,
) -> None:
    first = await suspended(store)
    second = await store.open_turn(OWNER, first.conversation_id, now=NOW + timedelta(seconds=1))
    assert second is not None
    await store.suspend_turn(
        OWNER, first.conversation_id, second.turn.id, items=[],
        now=NOW + timedelta(seconds=1), **asked(call_id="call-2"),
    )  # fmt: skip
    refused = await store.open_turn(OWNER, None, latest=True, refuse_pending=True, now=LATER)
    assert refused == first


async def test_staff_approvals_expired_ones_and_new_conversations_do_not_refuse(
    store: ConversationStore,
) -> None:
    staff = await suspended(store, approver="staff")
    opened = await store.open_turn(OWNER, None, latest=True, refuse_pending=True, now=LATER)
    assert isinstance(opened, OpenedTurn) and opened.conversation.id == staff.conversation_id

    client = await suspended(store, Owner.user(3))
    expired = client.expires_at + timedelta(seconds=1)
    late = await store.open_turn(Owner.user(3), None, latest=True, refuse_pending=True, now=expired)
    assert isinstance(late, OpenedTurn) and late.conversation.id == client.conversation_id

    waiting = await suspended(store, Owner.user(4))
    fresh = await store.open_turn(Owner.user(4), None, refuse_pending=True, now=LATER)
    assert isinstance(fresh, OpenedTurn) and fresh.conversation.id != waiting.conversation_id
    assert fresh.messages == []


async def test_another_owner_gets_none_and_a_new_owner_a_new_conversation(
    store: ConversationStore,
) -> None:
    waiting = await suspended(store)
    stranger = Owner.user(8)
    key = waiting.conversation_id
    assert await store.open_turn(stranger, key, refuse_pending=True, now=LATER) is None
    first = await store.open_turn(stranger, None, latest=True, refuse_pending=True, now=LATER)
    assert isinstance(first, OpenedTurn) and first.conversation.id != key
    assert first.conversation.owner == stranger
    # The refusal of the owner's own conversation is unchanged by the stranger's turn.
    assert await store.open_turn(OWNER, key, refuse_pending=True, now=LATER) == waiting
