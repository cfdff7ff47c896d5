"""Every DjangoStore call releases its thread's connections, as the edges of a request do."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection, transaction

from chatomon.chat.store import ConversationNotFoundError, Owner
from chatomon.django import models
from chatomon.django.persistence.connections import in_caller_transaction, released
from chatomon.django.persistence.store import DjangoStore

OWNER = Owner.user(7)
IN_MEMORY = connection.vendor == "sqlite"  # the tests' SQLite: Django never closes it


def holds_a_connection() -> bool:
    """Whether the calling thread has an open (not pooled back) default connection."""
    return connection.connection is not None


@pytest.mark.skipif(IN_MEMORY, reason="Django keeps an in-memory SQLite database open")
@pytest.mark.django_db(transaction=True)
async def test_a_store_call_leaves_its_thread_without_a_connection_even_when_it_fails() -> None:
    # With CONN_MAX_AGE = 0 the connection is closed, with a pool it goes back to the pool:
    # either way a turn that now waits on its model holds none.
    store = DjangoStore()
    conversation = await store.create_conversation(OWNER)
    assert not await sync_to_async(holds_a_connection)()
    with pytest.raises(ConversationNotFoundError):
        await store.messages(Owner.user(8), conversation.id)
    assert not await sync_to_async(holds_a_connection)()
    assert await store.get_conversation(OWNER, conversation.id) == conversation


@pytest.mark.django_db(transaction=True)
def test_a_store_call_inside_the_callers_transaction_joins_it() -> None:
    store = DjangoStore()
    with transaction.atomic():
        # From sync code the call runs on this thread, in this transaction: the release
        # must leave the transaction's connection alone.
        conversation = async_to_sync(store.create_conversation)(OWNER)
        assert in_caller_transaction()
        assert models.Conversation.objects.filter(pk=conversation.id).exists()
        transaction.set_rollback(True)
    assert not models.Conversation.objects.filter(pk=conversation.id).exists()


@pytest.mark.skipif(IN_MEMORY, reason="Django keeps an in-memory SQLite database open")
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
