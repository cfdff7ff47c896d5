"""`RequestThreadsHandler`: request threads, and their database connections, outlive requests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from django.db import connections
from django.test import override_settings

from chatomon.django.asgi import RequestThreadsHandler, get_asgi_application
from tests.django import request_threads_urls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_worker_connections"),
]


@pytest.fixture
def handler() -> Any:
    with override_settings(
        ROOT_URLCONF="tests.django.request_threads_urls", DEBUG_PROPAGATE_EXCEPTIONS=False
    ):
        made = get_asgi_application(max_idle_threads=4)
        yield made
        made.close()


@pytest.fixture
async def client(handler: RequestThreadsHandler) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=handler, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as made:
        yield made


async def where(client: httpx.AsyncClient, path: str = "/where/") -> dict[str, Any]:
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_sequential_requests_run_on_one_thread(client: httpx.AsyncClient) -> None:
    first, second = await where(client), await where(client)
    assert first["thread"] == second["thread"]
    assert (first["served"], second["served"]) == (1, 2)


async def test_concurrent_requests_each_get_a_thread_of_their_own(
    client: httpx.AsyncClient, handler: RequestThreadsHandler
) -> None:
    first, second = await asyncio.gather(where(client, "/slow/"), where(client, "/slow/"))
    assert first["thread"] != second["thread"]
    assert handler.idle_threads == 2
    third = await where(client)
    assert third["thread"] in {first["thread"], second["thread"]}


async def test_a_persistent_connection_serves_the_next_request(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 60)
    first, second = await where(client), await where(client)
    assert (first["was_open"], second["was_open"]) == (False, True)


async def test_without_conn_max_age_each_request_connects_anew(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 0)
    first, second = await where(client), await where(client)
    assert first["thread"] == second["thread"]
    # request_finished closed the first connection on its own thread, as Django documents
    # (except an in-memory SQLite database's, which closing would destroy).
    kept = connections["default"].vendor == "sqlite" and connections["default"].is_in_memory_db()
    assert (first["was_open"], second["was_open"]) == (False, kept)


async def test_a_failing_view_gives_its_thread_back(
    client: httpx.AsyncClient, handler: RequestThreadsHandler
) -> None:
    before = await where(client)
    response = await client.get("/fail/")
    assert response.status_code == 500
    assert (await where(client))["thread"] == before["thread"]
    assert handler.idle_threads == 1


async def test_threads_beyond_the_idle_limit_are_stopped(
    client: httpx.AsyncClient, handler: RequestThreadsHandler
) -> None:
    handler.max_idle_threads = 1
    results = await asyncio.gather(*(where(client, "/slow/") for _ in range(3)))
    assert len({found["thread"] for found in results}) == 3
    assert handler.idle_threads == 1


async def test_close_stops_the_idle_threads(
    client: httpx.AsyncClient, handler: RequestThreadsHandler
) -> None:
    assert (await where(client))["served"] == 1
    handler.close()
    assert handler.idle_threads == 0
    assert (await where(client))["served"] == 1  # a new thread


async def test_other_scope_types_are_refused(handler: RequestThreadsHandler) -> None:
    with pytest.raises(ValueError, match="not websocket"):
        await handler({"type": "websocket"}, None, None)


def test_a_negative_idle_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_idle_threads must be 0 or more, not -1"):
        RequestThreadsHandler(max_idle_threads=-1)


async def test_a_task_outliving_its_request_cannot_use_the_request_thread(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/leave-task/")
    assert response.status_code == 200
    task = request_threads_urls.LEFT_BEHIND.pop()
    with pytest.raises(RuntimeError, match="ThreadSensitiveContext has exited"):
        await task
