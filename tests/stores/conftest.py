"""The shared store suite runs every test against MemoryStore and DjangoStore."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from chatomon.chat.store import ConversationStore, MemoryStore
from chatomon.django.persistence.store import DjangoStore

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(
    params=["memory", pytest.param("django", marks=pytest.mark.django_db(transaction=True))]
)
def store(request: pytest.FixtureRequest) -> ConversationStore:
    if request.param == "memory":
        return MemoryStore()
    # The ORM runs in asgiref's worker thread, outside any test transaction: the Django
    # parameter is marked django_db(transaction=True), committed and flushed after each test.
    return DjangoStore()


@pytest.fixture(autouse=True)
def _close_worker_connections() -> Iterator[None]:
    """Close the connection asgiref's worker thread opened, or the test database stays busy."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())
