"""`confirmation_pending` in ChatService: a conversation waiting on its user refuses messages.

The rule lives in the service (behind the store's `pending_client_confirmation`), so every
surface calling `run_turn` gets it: the transports, the console's chat, the notebook.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest

from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.wire import PENDING_MESSAGE
from chatomon.chat.store import ConversationStore, MemoryStore, Owner
from chatomon.errors import StoreUnavailableError
from chatomon.providers import ScriptedProvider

from .services import OTHER, RENAME, STAFF, USER, collect, confirm_settings, service

pytestmark = pytest.mark.usefixtures("close_worker_connections")


async def waiting_turn(chat: ChatService, **options: Any) -> dict[str, Any]:
    """Run a turn up to its confirm_mutation event; return that event."""
    events = await collect(chat.run_turn(USER, "Rename steel to iron", **options))
    assert events[-1]["type"] == "confirm_mutation", events
    return events[-1]


def two_turns() -> ScriptedProvider:
    """The model asks for the rename, then answers whatever comes next."""
    return ScriptedProvider([[RENAME], ["Later."], ["Done."], ["Welcome."]])


async def test_a_message_is_refused_while_the_client_confirmation_waits(
    store: ConversationStore,
) -> None:
    chat = service(store, two_turns(), settings=confirm_settings())
    announced = await waiting_turn(chat)
    for conversation_id in (None, announced["conversation_id"]):
        refused = await collect(chat.run_turn(USER, "something else", conversation_id))
        assert refused == [
            {
                "type": "error",
                "code": "confirmation_pending",
                "message": PENDING_MESSAGE,
                "confirmation_id": announced["id"],
                "conversation_id": announced["conversation_id"],
            }
        ]
    # Nothing of the refused messages was stored: no turn, no item.
    conversation = UUID(announced["conversation_id"])
    assert len(await store.list_turns(conversation_id=conversation)) == 1
    texts = [m.item.content for m in await store.messages(Owner.user(7), conversation)]
    assert "something else" not in texts


async def test_a_decision_or_a_new_conversation_lets_messages_through(
    store: ConversationStore,
) -> None:
    chat = service(store, two_turns(), settings=confirm_settings())
    announced = await waiting_turn(chat)
    fresh = await collect(chat.run_turn(USER, "start over", new_conversation=True))
    assert fresh[-1]["type"] == "done"
    assert fresh[-1]["conversation_id"] != announced["conversation_id"]
    # The new conversation is now the current one; the waiting one still refuses by id.
    named = await collect(chat.run_turn(USER, "more", announced["conversation_id"]))
    assert named[-1]["code"] == "confirmation_pending"
    decided = await collect(chat.resolve_confirmation(USER, announced["id"], False))
    assert decided[-1]["type"] == "done"
    after = await collect(chat.run_turn(USER, "thanks", announced["conversation_id"]))
    assert after[-1]["type"] == "done", after  # the message goes through and is answered


async def test_an_expired_confirmation_no_longer_blocks(store: ConversationStore) -> None:
    chat = service(store, two_turns(), settings=confirm_settings(), confirm_timeout_seconds=0)
    announced = await waiting_turn(chat)
    events = await collect(chat.run_turn(USER, "still there?", announced["conversation_id"]))
    assert events[-1]["type"] == "done", events


async def test_a_staff_approval_does_not_block_the_asker(store: ConversationStore) -> None:
    chat = service(store, two_turns(), settings=confirm_settings(staff=True))
    announced = await waiting_turn(chat)
    assert announced["approver"] == "staff"
    events = await collect(chat.run_turn(USER, "meanwhile", announced["conversation_id"]))
    assert events[-1]["type"] == "done"
    found = await store.pending_client_confirmation(Owner.user(7), None, latest=True)
    assert found is None
    decided = await collect(chat.resolve_confirmation(STAFF, announced["id"], True, "alice"))
    assert decided[0]["decided_by"] == "a staff member"


async def test_another_owner_is_not_refused_by_a_foreign_confirmation(
    store: ConversationStore,
) -> None:
    chat = service(store, two_turns(), settings=confirm_settings())
    announced = await waiting_turn(chat)
    # The other user's message to that id is an unknown conversation, not a pending one.
    foreign = await collect(chat.run_turn(OTHER, "hello", announced["conversation_id"]))
    assert [e["code"] for e in foreign] == ["conversation_not_found"]
    own = await collect(chat.run_turn(OTHER, "hello"))
    assert own[-1]["type"] == "done"


class CountingStore(MemoryStore):
    """A MemoryStore that counts the pending reads, or fails them."""

    def __init__(self, failure: Exception | None = None) -> None:
        super().__init__()
        self.reads = 0
        self.failure = failure

    async def pending_client_confirmation(self, *args: Any, **kwargs: Any) -> Any:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        return await super().pending_client_confirmation(*args, **kwargs)


async def test_a_new_conversation_pays_no_read() -> None:
    store = CountingStore()
    chat = service(store, ScriptedProvider([["Hi."], ["Again."]]))
    assert (await collect(chat.run_turn(USER, "hi", new_conversation=True)))[-1]["type"] == "done"
    assert store.reads == 0
    assert (await collect(chat.run_turn(USER, "again")))[-1]["type"] == "done"
    assert store.reads == 1


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(StoreUnavailableError("down"), "store_unavailable"), (RuntimeError("bug"), None)],
)
async def test_a_failed_read_refuses_the_message_without_opening_a_turn(
    failure: Exception, reason: str | None
) -> None:
    store = CountingStore(failure)
    chat = service(store, ScriptedProvider([["Hi."]]))
    (event,) = await collect(chat.run_turn(USER, "hi"))
    assert (event["code"], event.get("reason")) == ("chat_error", reason)
    assert await store.list_turns() == []


async def test_a_malformed_conversation_id_is_not_found_not_pending() -> None:
    store = CountingStore()
    chat = service(store, ScriptedProvider([["Hi."]]))
    (event,) = await collect(chat.run_turn(USER, "hi", "not-a-uuid"))
    assert event["code"] == "conversation_not_found" and store.reads == 0


async def test_the_pending_read_is_of_one_conversation(store: ConversationStore) -> None:
    chat = service(store, two_turns(), settings=confirm_settings())
    announced = await waiting_turn(chat)
    owner = Owner.user(7)
    key = UUID(announced["conversation_id"])
    found = await store.pending_client_confirmation(owner, key)
    assert found is not None and str(found.id) == announced["id"]
    assert await store.pending_client_confirmation(owner, None) is None  # no latest: none
    assert await store.pending_client_confirmation(Owner.user(8), key) is None
    later = found.expires_at + timedelta(seconds=1)
    assert await store.pending_client_confirmation(owner, key, now=later) is None
