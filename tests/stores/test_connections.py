"""Every DjangoStore call releases its thread's connections, as the edges of a request do."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction

from chatomon.chat.store import (
    ConversationNotFoundError,
    ConversationStore,
    ConversationSummary,
    MessageItem,
    NewConfirmation,
    Owner,
)
from chatomon.django import models
from chatomon.django.persistence.connections import (
    holds_server_connections,
    in_caller_transaction,
    in_tool_worker,
    released,
)
from chatomon.django.persistence.store import DjangoStore

OWNER = Owner.user(7)
SQLITE = connection.vendor == "sqlite"  # connections kept: no server slot to free


def holds_a_connection() -> bool:
    """Whether the calling thread has an open (not pooled back) default connection."""
    return connection.connection is not None


@pytest.fixture
def releases(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each release a store call made, on the worker thread that made it: whether that
    thread held no connection afterwards."""
    from chatomon.django.persistence import connections as module  # noqa: PLC0415

    seen: list[bool] = []
    real = module.close_old_connections

    def recording() -> None:
        real()
        seen.append(not holds_a_connection())

    monkeypatch.setattr(module, "close_old_connections", recording)
    return seen


@pytest.mark.skipif(SQLITE, reason="SQLite connections are kept: no server connection")
@pytest.mark.django_db(transaction=True)
async def test_a_store_call_leaves_its_thread_without_a_connection_even_when_it_fails(
    releases: list[bool],
) -> None:
    # With CONN_MAX_AGE = 0 the connection is closed, with a pool it goes back to the pool:
    # either way a turn that now waits on its model holds none.
    store = DjangoStore()
    conversation = await store.create_conversation(OWNER)
    assert releases[-1:] == [True]
    releases.clear()
    with pytest.raises(ConversationNotFoundError):
        await store.messages(Owner.user(8), conversation.id)
    assert releases[-1:] == [True]
    assert await store.get_conversation(OWNER, conversation.id) == conversation


@pytest.mark.django_db(transaction=True)
def test_a_store_call_is_its_own_unit_of_work_beside_the_callers_transaction() -> None:
    # It runs on a worker thread with its own connection: a caller's transaction neither
    # holds it back nor rolls it back (the store's writes are whole turns, committed alone).
    store = DjangoStore()
    with transaction.atomic():
        conversation = async_to_sync(store.create_conversation)(OWNER)
        transaction.set_rollback(True)
    assert models.Conversation.objects.filter(pk=conversation.id).exists()


@pytest.mark.skipif(SQLITE, reason="SQLite connections are kept: no server connection")
@pytest.mark.django_db(transaction=True)
def test_released_releases_after_a_failure_and_not_inside_a_transaction() -> None:
    def fail() -> None:
        models.Conversation.objects.exists()  # connects
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        released(fail)
    assert not holds_a_connection()
    with transaction.atomic():
        assert released(models.Conversation.objects.exists) is False
        assert holds_a_connection() and in_caller_transaction()
    assert not in_caller_transaction()


@pytest.mark.django_db(transaction=True)
async def test_work_in_a_worker_thread_runs_off_the_loop_and_releases_its_connection(
    releases: list[bool],
) -> None:
    # A tool's read in a chat turn runs so: on SQLite the worker keeps its connection
    # (no server slot; reopening costs its set-up), elsewhere it is released.
    loop_thread = threading.current_thread()

    def count() -> tuple[int, threading.Thread]:
        return models.Conversation.objects.count(), threading.current_thread()

    rows, thread = await in_tool_worker(count)
    assert rows == 0
    assert thread is not loop_thread
    assert thread.name.startswith("chatomon-tools")  # not the loop's executor: the store's
    assert releases[-1:] == ([] if SQLITE else [True])


@pytest.mark.django_db(transaction=True)
def test_a_tools_work_is_a_unit_of_its_own_beside_the_callers_transaction() -> None:
    # Unlike the SDK's default (asgiref's thread-sensitive mode, the caller's thread).
    def create() -> Any:
        now = datetime.now(UTC)
        return models.Conversation.objects.create(
            owner_kind="user", owner_key="7", created_at=now, updated_at=now
        )

    with transaction.atomic():
        created = async_to_sync(in_tool_worker)(create)
        transaction.set_rollback(True)
    assert models.Conversation.objects.filter(pk=created.pk).exists()


@pytest.mark.skipif(SQLITE, reason="SQLite connections are kept: no server connection")
@pytest.mark.django_db(transaction=True)
async def test_every_store_method_releases_its_connection(releases: list[bool]) -> None:
    store = DjangoStore()
    released_after = []

    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        releases.clear()
        result = await getattr(store, name)(*args, **kwargs)
        released_after.append((name, releases[-1:] == [True]))
        return result

    conversation = await call("create_conversation", OWNER)
    await call("get_conversation", OWNER, conversation.id)
    await call("list_conversations", OWNER)
    stored = await call("append_messages", OWNER, conversation.id, [MessageItem.user("Hi")])
    await call("save_summary", OWNER, conversation.id, ConversationSummary("s", stored[0].id, 0))
    await call("messages", OWNER, conversation.id)
    started = await call("start_turn", OWNER, conversation.id)
    await call("update_turn", started.id, status="aborted")
    opened = await call("open_turn", OWNER, conversation.id)
    await call("close_turn", OWNER, conversation.id, opened.turn.id, items=[], status="completed")
    await call("get_turn", opened.turn.id)
    await call("list_turns", conversation_id=conversation.id)
    suspending = await call("start_turn", OWNER, conversation.id)
    confirmation = await call(
        "suspend_turn", OWNER, conversation.id, suspending.id, items=[MessageItem.user("Go")],
        confirmation=NewConfirmation(
            call_id="c2", mutation="m", input={}, preview=None, approver="staff",
            expires_at=datetime.now(UTC) + timedelta(minutes=5), state={},
        ),
    )  # fmt: skip
    await call("get_confirmation", confirmation.id)
    await call("list_pending")
    await call("pending_client_confirmation", OWNER, None, latest=True)
    await call("claim", confirmation.id, decision="approved", decided_by="u")
    await call("expire_due")
    await call("prune", datetime.now(UTC) - timedelta(days=1))
    assert {name for name, _ in released_after} == {
        name for name in dir(ConversationStore) if not name.startswith("_")
    }
    assert [name for name, released in released_after if not released] == []


@pytest.mark.skipif(not SQLITE, reason="the SQLite rule")
@pytest.mark.django_db(transaction=True)
def test_a_store_call_on_sqlite_leaves_its_connection_open(monkeypatch: Any) -> None:
    # A file handle holds no server slot; closing and reopening it would cost a WAL
    # checkpoint and the connection's set-up on every call.
    from chatomon.django.persistence import connections as module  # noqa: PLC0415

    closes: list[None] = []
    monkeypatch.setattr(module, "close_old_connections", lambda: closes.append(None))
    assert released(models.Conversation.objects.exists) is False
    assert holds_a_connection() and not holds_server_connections()
    assert closes == []
