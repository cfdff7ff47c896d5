"""Fixtures of the chat tests: each service test runs on both conversation stores."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from chatomon.chat.store import ConversationStore, MemoryStore
from chatomon.django.persistence.store import DjangoStore


@pytest.fixture(
    params=["memory", pytest.param("django", marks=pytest.mark.django_db(transaction=True))]
)
def store(request: pytest.FixtureRequest) -> ConversationStore:
    """The in-memory store, then the Django store."""
    return MemoryStore() if request.param == "memory" else DjangoStore()


@pytest.fixture
def close_worker_connections() -> Iterator[None]:
    """Close the connection asgiref's worker thread opened, or the test database stays busy."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())
