"""Conversations and their messages: ownership, order, structured tool items."""

from __future__ import annotations

import hashlib
import uuid
from datetime import timedelta

import pytest

from chatomon.chat.store import (
    ConversationNotFoundError,
    ConversationStore,
    ConversationSummary,
    MessageItem,
    Owner,
)
from chatomon.providers.base import ToolCall
from chatomon.schemas import DEFAULT_BLOCKED_PLACEHOLDER
from tests.stores.conftest import NOW

ALICE = Owner.user(1)
BOB = Owner.user(2)
ANON = Owner.session("a" * 32)
OTHER_ANON = Owner.session("b" * 32)


def test_long_session_keys_are_stored_hashed() -> None:
    key = "k" * 100
    owner = Owner.session(key)
    assert owner.key == hashlib.sha256(key.encode()).hexdigest()
    assert key not in repr(owner)
    assert Owner.session("short").key == "short"
    assert Owner.session(key) == owner  # stable: the same session finds its conversations


def test_user_and_session_with_the_same_key_are_different_owners() -> None:
    assert Owner.user("abc") != Owner.session("abc")


@pytest.mark.parametrize("bad", [("user", ""), ("robot", "1")])
def test_bad_owners_are_refused(bad: tuple[str, str]) -> None:
    with pytest.raises(ValueError, match="owner"):
        Owner(*bad)


async def test_create_get_and_list_own_conversations(store: ConversationStore) -> None:
    first = await store.create_conversation(ALICE, title="Parts", now=NOW)
    second = await store.create_conversation(ALICE, now=NOW + timedelta(minutes=1))
    await store.create_conversation(BOB, now=NOW)
    assert first.owner == ALICE and first.title == "Parts" and first.created_at == NOW
    assert await store.get_conversation(ALICE, first.id) == first
    assert [c.id for c in await store.list_conversations(ALICE)] == [second.id, first.id]


@pytest.mark.parametrize(("owner", "intruder"), [(ALICE, BOB), (ANON, OTHER_ANON), (ALICE, ANON)])
async def test_an_actor_never_reads_or_writes_another_actors_conversation(
    store: ConversationStore, owner: Owner, intruder: Owner
) -> None:
    conversation = await store.create_conversation(owner)
    await store.append_messages(owner, conversation.id, [MessageItem.user("secret")])
    assert await store.get_conversation(intruder, conversation.id) is None
    assert await store.list_conversations(intruder) == []
    with pytest.raises(ConversationNotFoundError):
        await store.messages(intruder, conversation.id)
    with pytest.raises(ConversationNotFoundError):
        await store.append_messages(intruder, conversation.id, [MessageItem.user("x")])
    with pytest.raises(ConversationNotFoundError):
        await store.start_turn(intruder, conversation.id)
    with pytest.raises(ConversationNotFoundError):
        await store.save_summary(intruder, conversation.id, ConversationSummary("s", 1, 0))
    assert [m.item.content for m in await store.messages(owner, conversation.id)] == ["secret"]


async def test_unknown_conversations_look_like_foreign_ones(store: ConversationStore) -> None:
    assert await store.get_conversation(ALICE, uuid.uuid4()) is None
    with pytest.raises(ConversationNotFoundError):
        await store.append_messages(ALICE, uuid.uuid4(), [MessageItem.user("x")])


async def test_messages_keep_order_and_structured_tool_items(store: ConversationStore) -> None:
    conversation = await store.create_conversation(ANON, now=NOW)
    call = ToolCall("call-1", "query", {"manager": "PartManager", "filters": {"id": 3}})
    items = [
        MessageItem.user("Which parts?"),
        MessageItem.calls([call], text="Looking."),
        MessageItem.tool_result("call-1", "query", {"data": [{"id": 3}], "total_count": 1}),
        MessageItem.assistant("One part."),
        MessageItem.blocked_user(),
    ]
    later = NOW + timedelta(hours=1)
    stored = await store.append_messages(ANON, conversation.id, items[:2], now=later)
    stored += await store.append_messages(ANON, conversation.id, items[2:], now=later)
    assert [m.position for m in stored] == [0, 1, 2, 3, 4]
    read = await store.messages(ANON, conversation.id)
    assert read == stored
    assert [m.item for m in read] == items
    assert read[1].item.tool_calls[0].arguments == {"manager": "PartManager", "filters": {"id": 3}}
    assert read[4].item.content == DEFAULT_BLOCKED_PLACEHOLDER and read[4].item.blocked
    assert len({m.id for m in read}) == 5
    updated = await store.get_conversation(ANON, conversation.id)
    assert updated is not None and updated.updated_at == later


async def test_a_summary_is_stored_with_its_marker(store: ConversationStore) -> None:
    conversation = await store.create_conversation(ALICE)
    saved = await store.save_summary(ALICE, conversation.id, ConversationSummary("S", 7, 3))
    assert saved.summary == ConversationSummary("S", 7, 3)
    again = await store.get_conversation(ALICE, conversation.id)
    assert again is not None and again.summary == ConversationSummary("S", 7, 3)


async def test_naive_timestamps_are_refused(store: ConversationStore) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        await store.create_conversation(ALICE, now=NOW.replace(tzinfo=None))
