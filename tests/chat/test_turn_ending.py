"""TurnEnding: a sync caller records and announces its completed turn on its own thread."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from asgiref.sync import async_to_sync

from chatomon.chat.activity import Activity
from chatomon.chat.store import ConversationStore, Owner
from chatomon.chat.turn_ending import TurnCloser, TurnEnding
from chatomon.django.persistence.store import DjangoStore
from chatomon.providers import ScriptedProvider

from .services import USER, collect, service

pytestmark = pytest.mark.usefixtures("close_worker_connections")
collect_now = async_to_sync(collect)


def closer_of(store: ConversationStore) -> TurnCloser:
    """The store's close_turn on this thread, as a sync view would call it."""
    if isinstance(store, DjangoStore):
        return store.close_turn_here
    return async_to_sync(store.close_turn)


def test_the_caller_records_the_turn_then_tells_the_listeners(store: ConversationStore) -> None:
    seen: list[tuple[str, str | None]] = []

    def listener(activity: Activity) -> None:
        status = None
        if activity.kind in ("turn_finished", "assistant_message"):  # told by finish()
            turn = async_to_sync(store.get_turn)(activity.turn_id)
            status = None if turn is None else turn.status
        seen.append((activity.kind, status))

    chat = service(store, ScriptedProvider([["Hello ", "there."]]), listeners=[listener])
    ending = TurnEnding()
    events = collect_now(chat.run_turn(USER, "Hi", ending=ending))
    assert [event["type"] for event in events] == ["text_chunk", "text_chunk"]
    assert ending.ready
    done = ending.finish(closer_of(store))
    assert (done["type"], done["reply"]) == ("done", "Hello there.")
    assert done["turn_id"] == events[0]["turn_id"]
    assert done["conversation_id"] == events[0]["conversation_id"]
    assert not ending.ready
    stored = async_to_sync(store.messages)(Owner.user(7), UUID(done["conversation_id"]))
    assert [m.item.content for m in stored] == ["Hi", "Hello there."]
    # Told in the stream's order, once the turn was stored as completed.
    assert seen == [
        ("message_received", None),
        ("turn_finished", "completed"),
        ("assistant_message", "completed"),
    ]


def test_a_failed_close_ends_the_turn_as_the_stream_would(store: ConversationStore) -> None:
    kinds: list[str] = []
    chat = service(store, ScriptedProvider([["Hi."]]), listeners=[lambda a: kinds.append(a.kind)])
    ending = TurnEnding()
    collect_now(chat.run_turn(USER, "Hi", ending=ending))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("database is gone: password=hunter2")

    error = ending.finish(broken)
    assert (error["type"], error["code"]) == ("error", "chat_error")
    assert "hunter2" not in str(error)
    turn = async_to_sync(store.get_turn)(error["turn_id"])
    assert turn is not None and turn.status == "aborted"
    assert kinds[-2:] == ["turn_finished", "error"]


def test_only_a_completed_turn_can_be_finished(store: ConversationStore) -> None:
    chat = service(store, ScriptedProvider([]))
    ending = TurnEnding()
    events = collect_now(chat.run_turn(USER, "Hi", "not-a-conversation", ending=ending))
    assert events[-1]["code"] == "conversation_not_found"
    assert not ending.ready
    with pytest.raises(RuntimeError, match="no completed turn"):
        ending.finish(closer_of(store))
