"""A conversation continues by default: the reference's clients send only `text`.

The reference: "ChatConversation belongs to an authenticated user or anonymous Django
session", and its clients post `{"text": ...}` with no conversation id, yet keep their
context. A message without `conversation_id` continues the owner's current conversation;
a new one is the explicit `new_conversation=True`.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from chatomon.chat.store import ConversationStore, MessageItem, Owner
from chatomon.providers.testing import FunctionProvider

from .services import OTHER, USER, collect, service


def said_before(messages: Any, tools: Any) -> list[str]:
    """Answers with every user message the model was given, joined."""
    return [" | ".join(m.content for m in messages if m.role == "user")]


async def test_a_message_without_an_id_continues_the_owners_conversation(
    store: ConversationStore,
) -> None:
    chat = service(store, FunctionProvider(said_before))
    first = (await collect(chat.run_turn(USER, "My name is Ada.")))[-1]
    second = (await collect(chat.run_turn(USER, "What is my name?")))[-1]
    assert second["conversation_id"] == first["conversation_id"]
    assert second["reply"] == "My name is Ada. | What is my name?"  # the model has the context
    assert len(await store.list_conversations(Owner.user(7))) == 1


async def test_a_new_conversation_is_explicit_and_then_the_current_one(
    store: ConversationStore,
) -> None:
    chat = service(store, FunctionProvider(said_before))
    first = (await collect(chat.run_turn(USER, "one")))[-1]
    fresh = (await collect(chat.run_turn(USER, "two", new_conversation=True)))[-1]
    assert fresh["conversation_id"] != first["conversation_id"]
    assert fresh["reply"] == "two"  # nothing of the other conversation
    after = (await collect(chat.run_turn(USER, "three")))[-1]
    assert after["conversation_id"] == fresh["conversation_id"]  # the most recent one
    named = (await collect(chat.run_turn(USER, "four", first["conversation_id"])))[-1]
    assert named["conversation_id"] == first["conversation_id"]
    assert named["reply"] == "one | four"


async def test_owners_never_continue_each_others_conversations(store: ConversationStore) -> None:
    chat = service(store, FunctionProvider(said_before))
    mine = (await collect(chat.run_turn(USER, "mine")))[-1]
    theirs = (await collect(chat.run_turn(OTHER, "theirs")))[-1]
    assert theirs["conversation_id"] != mine["conversation_id"]
    assert theirs["reply"] == "theirs"
    assert [c.id for c in await store.list_conversations(Owner.user(8))] == [
        UUID(theirs["conversation_id"])
    ]


async def test_the_current_conversation_is_where_the_owner_last_asked(
    store: ConversationStore,
) -> None:
    # A staff decision or an expiry appends to an older conversation: the next plain
    # message still continues the one the owner last asked in.
    chat = service(store, FunctionProvider(said_before))
    older = (await collect(chat.run_turn(USER, "one")))[-1]
    newer = (await collect(chat.run_turn(USER, "two", new_conversation=True)))[-1]
    await store.append_messages(
        Owner.user(7), UUID(older["conversation_id"]), [MessageItem.assistant("resumed")]
    )
    after = (await collect(chat.run_turn(USER, "three")))[-1]
    assert after["conversation_id"] == newer["conversation_id"]


async def test_new_conversation_beside_a_conversation_id_is_refused(
    store: ConversationStore,
) -> None:
    chat = service(store, FunctionProvider(said_before))
    first = (await collect(chat.run_turn(USER, "one")))[-1]
    with pytest.raises(ValueError, match="new_conversation"):
        await collect(chat.run_turn(USER, "x", first["conversation_id"], new_conversation=True))
