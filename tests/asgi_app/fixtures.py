"""Fixtures and helpers of the in-process transport tests (import the fixtures by name)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from tests.asgi_app import project


class ChatProject:
    """The test project's settings applied to this test."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        settings.MIDDLEWARE = project.MIDDLEWARE
        settings.SESSION_ENGINE = project.SESSION_ENGINE
        settings.ROOT_URLCONF = project.ROOT_URLCONF
        settings.ALLOWED_HOSTS = project.ALLOWED_HOSTS
        settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
        # A cache of its own per test: rate-limit counters never leak between tests.
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                "LOCATION": uuid4().hex,
            }
        }
        settings.CHATOMON = project.chatomon()


def configure(settings: Any, **overrides: Any) -> None:
    """Replace CHATOMON by the test project's with `overrides` (pytest-django `settings`)."""
    settings.CHATOMON = project.chatomon(**overrides)


@pytest.fixture
def chat_project(settings: Any) -> ChatProject:
    """The test project's chat settings, URLs and middleware for this test."""
    return ChatProject(settings)


@pytest.fixture
def close_worker_connections() -> Iterator[None]:
    """Close the connections asgiref's worker thread opened, so the database can be flushed."""
    yield
    asyncio.run(sync_to_async(connections.close_all)())


def sse_events(body: bytes) -> list[dict[str, Any]]:
    """The events of an SSE body (comments skipped)."""
    lines = body.decode().split("\n")  # an event's `id:` line comes before its `data:`
    return [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]


async def sse_until(response: Any, kind: str = "confirm_mutation") -> list[dict[str, Any]]:
    """The events of a streamed response up to the first of type `kind`, then closed.

    A stream waiting on its client's confirmation stays open after `confirm_mutation`
    (until it is decided or expires): a client reads up to that event and decides.
    """
    chunks = response.streaming_content
    body = b""
    events: list[dict[str, Any]] = []
    async for chunk in chunks:
        body += chunk  # each chunk is one whole frame
        events = sse_events(body)
        if events and events[-1]["type"] == kind:
            break
    await chunks.aclose()
    return events


async def make_user(username: str = "alice", *, staff: bool = False) -> Any:
    """A user in the test database."""
    from django.contrib.auth import get_user_model  # noqa: PLC0415

    model = get_user_model()

    def create() -> Any:
        user, _ = model.objects.get_or_create(username=username, defaults={"is_staff": staff})
        return user

    return await sync_to_async(create)()


async def make_part() -> int:
    """A part to change; its id."""
    from django.utils import timezone  # noqa: PLC0415

    from tests.testapp.models import Part  # noqa: PLC0415

    def create() -> int:
        part: int = Part.objects.create(name="Gear", unit_cost="1.00", created_at=timezone.now()).pk
        return part

    return await sync_to_async(create)()


def types(events: list[dict[str, Any]]) -> list[str]:
    """The event types, in order."""
    return [event["type"] for event in events]
