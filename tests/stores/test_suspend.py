"""Suspending a turn on a confirmation: one unit of work, all of it stored or none of it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatomon.chat.store import (
    ConversationStore,
    MessageItem,
    NewConfirmation,
    Owner,
    PendingConfirmation,
)
from chatomon.chat.store.records import ConversationNotFoundError
from chatomon.django import models
from chatomon.django.persistence import turns
from chatomon.errors import TurnTransitionError
from tests.stores.conftest import NOW

OWNER = Owner.session("s" * 40)
EXPIRES = NOW + timedelta(minutes=10)
ITEMS = [MessageItem.user("Add a bolt"), MessageItem.assistant("")]


def asked(**overrides: Any) -> dict[str, NewConfirmation]:
    """The `confirmation` argument of a suspension, its fields with `overrides`."""
    fields: dict[str, Any] = {
        "call_id": "call-1", "mutation": "createPart", "input": {"name": "Bolt"},
        "preview": {"new": {"name": "Bolt"}}, "approver": "client", "expires_at": EXPIRES,
        "state": {"loop": {"round": 1}}, **overrides,
    }  # fmt: skip
    return {"confirmation": NewConfirmation(**fields)}


async def running(store: ConversationStore, owner: Owner = OWNER) -> tuple[Any, str]:
    """A conversation of `owner` with one running turn: the conversation and the turn id."""
    opened = await store.open_turn(owner, None, now=NOW)
    assert opened is not None
    return opened.conversation, opened.turn.id


async def test_a_suspended_turn_keeps_its_items_its_confirmation_and_its_status(
    store: ConversationStore,
) -> None:
    conversation, turn_id = await running(store)
    later = NOW + timedelta(seconds=3)
    created = await store.suspend_turn(
        OWNER, conversation.id, turn_id, items=ITEMS, now=later, **asked()
    )
    assert isinstance(created, PendingConfirmation)
    assert (created.status, created.turn_id, created.approver) == ("pending", turn_id, "client")
    assert (created.created_at, created.expires_at) == (later, EXPIRES)
    assert await store.get_confirmation(created.id, owner=OWNER, now=later) == created
    stored = await store.messages(OWNER, conversation.id)
    assert [(m.position, m.item.kind, m.item.content) for m in stored] == [
        (0, "user", "Add a bolt"),
        (1, "assistant", ""),
    ]
    turn = await store.get_turn(turn_id)
    assert turn is not None and turn.status == "awaiting_confirmation"
    touched = await store.get_conversation(OWNER, conversation.id)
    assert touched is not None and touched.updated_at == later


async def test_a_turn_that_is_not_running_stores_nothing_of_the_suspension(
    store: ConversationStore,
) -> None:
    conversation, turn_id = await running(store)
    await store.update_turn(turn_id, status="aborted", now=NOW)
    with pytest.raises(TurnTransitionError):
        await store.suspend_turn(OWNER, conversation.id, turn_id, items=ITEMS, now=NOW, **asked())
    assert await store.messages(OWNER, conversation.id) == []
    assert await store.list_pending(now=NOW) == []
    assert (await store.get_turn(turn_id)).status == "aborted"


async def test_another_owners_conversation_stores_nothing_of_the_suspension(
    store: ConversationStore,
) -> None:
    conversation, turn_id = await running(store)
    with pytest.raises(ConversationNotFoundError):
        await store.suspend_turn(
            Owner.user(9), conversation.id, turn_id, items=ITEMS, now=NOW, **asked()
        )
    assert await store.messages(OWNER, conversation.id) == []
    assert await store.list_pending(now=NOW) == []
    assert (await store.get_turn(turn_id)).status == "running"


def test_an_unknown_approver_is_refused_before_any_store_is_asked() -> None:
    with pytest.raises(ValueError, match="approver must be 'client' or 'staff', got 'robot'"):
        asked(approver="robot")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("items", "position", "expected"),
    [
        (ITEMS, 0, ["UPDATE", "UPDATE", "INSERT", "INSERT"]),
        (ITEMS, None, ["UPDATE", "UPDATE", "SELECT", "INSERT", "INSERT"]),
        ([], None, ["UPDATE", "UPDATE", "INSERT"]),
    ],
)
def test_a_suspension_takes_few_statements(
    items: list[MessageItem], position: int | None, expected: list[str]
) -> None:
    # The turn's move, the conversation's touch (owner check, row lock), the items (at the
    # position the turn knows, else after reading the end), the confirmation. It replaced
    # three store calls: three commits, seven statements.
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    with CaptureQueriesContext(connection) as captured:
        turns.suspend_turn(
            OWNER, opened.conversation.id, opened.turn.id, items=items, now=NOW,
            position=position, **asked(),
        )  # fmt: skip
    sql = [query["sql"].upper() for query in captured.captured_queries]
    control = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
    assert [s.split()[0] for s in sql if not s.startswith(control)] == expected
    assert models.PendingConfirmation.objects.filter(turn_id=opened.turn.id).count() == 1


@pytest.mark.django_db
def test_a_position_another_turn_took_is_redone_at_the_end() -> None:
    # The hint is a guess: a concurrent turn of the conversation may have written there.
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    models.ChatMessage.objects.create(
        conversation_id=opened.conversation.id, position=0, created_at=NOW, kind="user",
        content="from another turn",
    )  # fmt: skip
    turns.suspend_turn(
        OWNER, opened.conversation.id, opened.turn.id, items=ITEMS, now=NOW, position=0,
        **asked(),
    )  # fmt: skip
    stored = models.ChatMessage.objects.filter(conversation_id=opened.conversation.id)
    assert list(stored.order_by("position").values_list("position", "content")) == [
        (0, "from another turn"),
        (1, "Add a bolt"),
        (2, ""),
    ]
    assert models.PendingConfirmation.objects.filter(turn_id=opened.turn.id).count() == 1
