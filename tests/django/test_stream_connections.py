"""Streamed turns share the server's database connections and replace a dead one.

One uvicorn process on a PostgreSQL database of its own (runs only where DATABASE_URL is
PostgreSQL), with Django's default `CONN_MAX_AGE` (0), once through Django's connection
pool (the tests' setting, `tests.django_settings.database_from_url`) and once without it.
While SSE streams and WebSocket turns wait on a slow model, the server's connections to
that database, counted by PostgreSQL itself, stay a handful (without a pool) or within the
pool's size (with one): a connection per stream would exhaust `max_connections` (100 by
default) under a few hundred concurrent chats. In process: a session PostgreSQL ended (as
a server restart does) fails no turn (tests/reliability/test_database_faults.py: the
same with connections kept by `CONN_MAX_AGE` or pooled, both unchecked).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from chatomon.chat.store.records import Owner
from chatomon.django.service import chat_service
from tests.asgi_app.fixtures import sse_events
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    admin_url,
    migrate,
    postgres_database,
    receive_until_terminal,
    run_admin,
    server_environment,
)
from tests.django_settings import database_from_url
from tests.services import needs_postgres

pytestmark = needs_postgres
MODEL_SECONDS = 2.0
MOST_UNPOOLED_CONNECTIONS = min(32, (os.cpu_count() or 1) + 4) + 3
"""Without a pool: a store call on each worker thread of the server loop's executor
(asyncio's default size), or a few requests in their sync part (the session, the user,
the admission's read of a pending confirmation), each briefly."""
STREAMS = MOST_UNPOOLED_CONNECTIONS + 12
"""More streams than connections allowed: one held per stream would fail the count."""


def most_connections(url: str) -> int:
    """The most connections a server on `url` may hold while every stream waits.

    With a pool, what the pool keeps open (up to its `max_size`, fewer than STREAMS).
    """
    pool = database_from_url(url).get("OPTIONS", {}).get("pool")
    if pool:
        assert pool["max_size"] < STREAMS, "a pool as large as the streams proves nothing"
        return int(pool["max_size"])
    return MOST_UNPOOLED_CONNECTIONS


@pytest.fixture(scope="module", params=["pooled", "unpooled"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[AsgiServer, str, int]]:
    """The server, its database's URL, and the most connections it may hold while streams wait."""
    with postgres_database("streams") as url:
        query = "pool=off" if request.param == "unpooled" else ""
        served = urlunsplit(urlsplit(url)._replace(query=query))
        env = server_environment(DATABASE_URL=served)
        migrate(env)
        running = AsgiServer(env).start()
        try:
            yield running, url, most_connections(served)
        finally:
            running.stop()


def connections_to(url: str) -> int:
    """How many sessions PostgreSQL has open to the database of `url`, ours left out."""
    import psycopg  # noqa: PLC0415

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(admin_url(url), autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)
        ).fetchone()
    return int(row[0]) if row else 0


async def most_connections_while(url: str, waiting: list[asyncio.Task[object]]) -> int:
    """The most connections seen while every task of `waiting` is still running."""
    seen = 0
    await asyncio.sleep(MODEL_SECONDS / 3)
    for _ in range(5):
        assert not any(task.done() for task in waiting), "a turn ended before the count"
        seen = max(seen, await asyncio.to_thread(connections_to, url))
        await asyncio.sleep(MODEL_SECONDS / 20)
    return seen


async def stream(server: AsgiServer, index: int, *, logged_in: bool) -> list[str]:
    visitor = Visitor()
    if logged_in:  # the request thread then reads the user from the database
        await visitor.log_in(server, f"streamer{index}")
    headers = await visitor.csrf_headers(server)
    async with visitor.client(server) as client:
        text = f"slow {MODEL_SECONDS} stream {index}"
        response = await client.post("/chat/stream/", json={"text": text}, headers=headers)
    return [event["type"] for event in sse_events(response.content)]


async def socket_turn(server: AsgiServer, index: int) -> list[str]:
    async with Visitor().socket(server) as socket:
        text = f"slow {MODEL_SECONDS} socket {index}"
        await socket.send(json.dumps({"type": "message", "text": text}))
        return [event["type"] for event in await receive_until_terminal(socket, wait=30)]


async def test_waiting_sse_streams_share_the_servers_database_connections(server):
    running, url, most = server
    streams = [
        asyncio.create_task(stream(running, i, logged_in=i % 2 == 0)) for i in range(STREAMS)
    ]
    await asyncio.sleep(0.3)  # the log-ins first: their requests connect while they run
    assert await most_connections_while(url, streams) <= most
    for events in await asyncio.gather(*streams):
        assert events == ["text_chunk", "done"]


async def test_waiting_websocket_turns_share_the_servers_database_connections(server):
    running, url, most = server
    turns = [asyncio.create_task(socket_turn(running, i)) for i in range(STREAMS)]
    assert await most_connections_while(url, turns) <= most
    for events in await asyncio.gather(*turns):
        assert events == ["text_chunk", "done"]


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def terminate_sessions_but(pid: int) -> None:
    """End every other session on the test database (up to 5 s each), as a restart does."""
    database = connection.settings_dict["NAME"]
    run_admin(
        admin_url(os.environ["DATABASE_URL"]),
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        f" WHERE datname = '{database}' AND pid <> {int(pid)}",
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("chat_project", "close_worker_connections")
def test_turns_after_the_databases_sessions_died_connect_anew() -> None:
    owner = Owner.session("reconnecting")

    async def run() -> dict[str, object]:
        return [e async for e in chat_service().run_turn(None, "hello", owner=owner)][-1]

    def turn() -> dict[str, object]:
        return async_to_sync(run)()

    assert turn()["type"] == "done"
    # Every session of the store's worker threads ends, as a database restart ends them
    # (this thread's, which the test database's teardown needs, is spared).
    terminate_sessions_but(backend_pid())
    # Without a pool the next store call connects anew (the dead sessions were closed as
    # spent); with one, the pool checks a connection as it lends it (CONN_HEALTH_CHECKS),
    # and a store call whose first statement meets a dead one anyway runs again on
    # another (chatomon.django.persistence.connections.released): no turn fails. Enough
    # turns to draw every pooled connection once.
    pool = connection.settings_dict["OPTIONS"].get("pool") or {}
    ends = [turn() for _ in range(int(pool.get("max_size", 0)) + 3)]
    assert [end["type"] for end in ends] == ["done"] * len(ends), ends
