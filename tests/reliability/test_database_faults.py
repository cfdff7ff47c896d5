"""PostgreSQL failing before, during and after a turn, on HTTP, SSE and WebSocket.

A real uvicorn server reaches its own PostgreSQL database through a loopback proxy the
test cuts and restores (`tests.reliability.faults.TcpProxy`: the machine's PostgreSQL is
never stopped), or has its sessions ended by PostgreSQL itself (`pg_terminate_backend`,
as a restart, a failover or an idle timeout does). The server keeps its connections the
two ways a deployment may without checking them (`tests.reliability.server_settings`):
persistent (`CONN_MAX_AGE`) and pooled, both without `CONN_HEALTH_CHECKS`.

What must hold (issue 19, item 4):
- while the database refuses connections, every chat request answers `chat_error` with
  `reason: "store_unavailable"` in its endpoint's format (HTTP: the JSON envelope, 503;
  SSE: an event stream, 503 when refused before it starts; WebSocket: an error event on
  the open socket), never Django's HTML 500;
- a turn in flight when the outage starts ends with that terminal event, and is recorded
  `aborted` once the database answers again (no turn is left `running`);
- after the database closed the server's idle connections, the next turn succeeds on
  every surface (no failed turn, no lost message), and so does a new socket's handshake
  (`chatomon.django.routing` reads the user through `released`);
- a socket opened while the database refuses connections gets that `chat_error` and a
  1011 close, never an HTTP 500 nor a close without a code;
- after each fault the next turn succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from chatomon.chat.pipeline.wire import STORE_UNAVAILABLE_REASON
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
from tests.ledger import Ledger
from tests.reliability.faults import TcpProxy, proxied_url, target_of
from tests.services import needs_postgres

pytestmark = needs_postgres

SETTINGS = "tests.reliability.server_settings"
MODEL_SECONDS = 2.0
"""How long the model takes in a turn the outage starts during (`slow` rule)."""
SURFACES = ("http", "sse", "websocket")


@dataclass
class Served:
    """A server reaching its database through `proxy`; `url` is the database's own."""

    server: AsgiServer
    proxy: TcpProxy
    url: str
    connections: str


@pytest.fixture(scope="module", params=["persistent", "pooled"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    with postgres_database("faults") as url, TcpProxy(target_of(url)) as proxy:
        env = server_environment(
            DATABASE_URL=proxied_url(url, proxy), CHATOMON_TEST_CONNECTIONS=request.param
        )
        env["DJANGO_SETTINGS_MODULE"] = SETTINGS
        migrate(env)
        server = AsgiServer(env).start()
        try:
            yield Served(server, proxy, url, request.param)
        finally:
            server.stop()


@pytest.fixture
async def db(served: Served) -> AsyncIterator[Served]:
    """The served database, reachable again after the test whatever it did."""
    yield served
    served.proxy.restore()


def running_turns(url: str) -> int:
    """How many turns the database holds as `running` (asked directly, not through the proxy)."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM chatomon_turn WHERE status = 'running'"
        ).fetchone()
    return int(row[0]) if row else 0


async def running_once_settled(url: str, wait: float = 30) -> int:
    """The running turns once none is left, or after `wait` seconds (the retries' pace)."""
    count = 0
    for _ in range(int(wait / 0.25)):
        count = await asyncio.to_thread(running_turns, url)
        if count == 0:
            break
        await asyncio.sleep(0.25)
    return count


def terminate_server_sessions(url: str) -> None:
    """End every session PostgreSQL has open to the database of `url` (as a restart does)."""
    name = urlsplit(url).path.lstrip("/")
    run_admin(
        admin_url(url),
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        f" WHERE datname = '{name}' AND pid <> pg_backend_pid()",
    )


class Client:
    """One logged-in (or anonymous) visitor chatting on one surface of the server."""

    def __init__(self, server: AsgiServer, surface: str, visitor: Visitor) -> None:
        self.server, self.surface, self.visitor = server, surface, visitor
        self.headers: dict[str, str] = {}
        self.socket: Any = None

    async def open(self) -> None:
        """Everything that needs the database before a fault: cookies, token, socket."""
        self.headers = await self.visitor.csrf_headers(self.server)
        if self.surface == "websocket":
            self.socket = await self.visitor.socket(self.server)

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()

    async def turn(self, text: str) -> tuple[int | None, list[dict[str, Any]]]:
        """The HTTP status (None on a socket) and the events of one turn."""
        if self.surface == "websocket":
            await self.socket.send(json.dumps({"type": "message", "text": text}))
            return None, await receive_until_terminal(self.socket, wait=60)
        path = "/chat/" if self.surface == "http" else "/chat/stream/"
        async with self.visitor.client(self.server) as client:
            client.timeout = 60
            response = await client.post(path, json={"text": text}, headers=self.headers)
        content_type = response.headers.get("content-type", "")
        if self.surface == "http":
            assert content_type.startswith("application/json"), (response.status_code, content_type)
            return response.status_code, response.json()["events"]
        assert content_type.startswith("text/event-stream"), (response.status_code, content_type)
        return response.status_code, sse_events(response.content)


@asynccontextmanager
async def chatting(
    served: Served, surface: str, *, logged_in: bool = True
) -> AsyncIterator[Client]:
    """A client of `surface`, set up while the database answers; closed after."""
    visitor = Visitor()
    if logged_in:  # the request then reads the user from the database
        await visitor.log_in(served.server, f"{surface}-{served.connections}")
    client = Client(served.server, surface, visitor)
    await client.open()
    try:
        yield client
    finally:
        await client.close()


def store_unavailable(event: dict[str, Any]) -> bool:
    """Whether `event` is the chat_error of a store that could not be reached."""
    return (event["type"], event.get("code"), event.get("reason")) == (
        "error",
        "chat_error",
        STORE_UNAVAILABLE_REASON,
    )


def answered(result: tuple[int | None, list[dict[str, Any]]]) -> bool:
    status, events = result
    return status in (None, 200) and bool(events) and events[-1]["type"] == "done"


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("logged_in", [True, False], ids=["user", "anonymous"])
async def test_a_turn_while_the_database_refuses_connections(
    db: Served, surface: str, logged_in: bool, ledger: Ledger
) -> None:
    async with chatting(db, surface, logged_in=logged_in) as client:
        db.proxy.cut()
        status, events = await client.turn("hello during the outage")
        db.proxy.restore()
        after = await client.turn("hello once it is back")
    # A stream refused before it started is a 503; one that started (an anonymous
    # visitor's needs no database first) carries the error as its one frame.
    expected = {None} if surface == "websocket" else {503}
    if surface == "sse" and not logged_in:
        expected = {200, 503}
    survived = status in expected and len(events) == 1 and store_unavailable(events[0])
    name = f"database refusing connections before a turn ({surface})"
    ledger.fault(name, survived=survived and answered(after))
    running = await running_once_settled(db.url)
    ledger.running(f"database faults ({db.connections})", count=running)
    assert survived, (status, events)
    assert answered(after), after
    assert running == 0


@pytest.mark.parametrize("surface", SURFACES)
async def test_a_turn_in_flight_when_the_database_goes_away(
    db: Served, surface: str, ledger: Ledger
) -> None:
    async with chatting(db, surface) as client:
        turn = asyncio.create_task(client.turn(f"slow {MODEL_SECONDS} caught in the outage"))
        await asyncio.sleep(MODEL_SECONDS / 3)  # the turn is open and waits on its model
        assert not turn.done()
        db.proxy.cut()
        status, events = await turn
        still_running = await asyncio.to_thread(running_turns, db.url)
        db.proxy.restore()
        running = await running_once_settled(db.url)
        after = await client.turn("hello once it is back")
    # HTTP answers once the turn ended (503: it could not be recorded); a stream had
    # started with its 200, and ends with the error event.
    expected = {"http": 503, "sse": 200, "websocket": None}[surface]
    survived = bool(events) and store_unavailable(events[-1]) and status == expected
    ledger.fault(f"database gone during a turn ({surface})", survived=survived and running == 0)
    ledger.running(f"database faults ({db.connections})", count=running)
    assert survived, (status, events)
    assert [e["type"] for e in events[:-1]] == ["text_chunk"] * (len(events) - 1)
    assert still_running == 1  # what could not be recorded while the database was away...
    assert running == 0  # ...is recorded as aborted once it is back
    assert answered(after), after


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("fault", ["proxy cut and restored", "sessions terminated"])
async def test_the_next_turn_after_the_database_closed_idle_connections(
    db: Served, surface: str, fault: str, ledger: Ledger
) -> None:
    async with chatting(db, surface) as client:
        first = await client.turn("hello before")
        if fault == "sessions terminated":
            await asyncio.to_thread(terminate_server_sessions, db.url)
        else:
            db.proxy.cut()
            db.proxy.restore()
        after = [await client.turn(f"hello after {n}") for n in range(3)]
    running = await running_once_settled(db.url)
    survived = all(answered(result) for result in after)
    ledger.fault(f"database closed idle connections ({fault}, {surface})", survived=survived)
    ledger.running(f"database faults ({db.connections})", count=running)
    assert answered(first), first
    assert survived, after
    assert running == 0


async def socket_after_sessions_ended(server: AsgiServer, url: str, username: str) -> list[Any]:
    """A socket's turn, then PostgreSQL ends the server's sessions, then a new socket's turn."""
    visitor = Visitor()
    await visitor.log_in(server, username)
    async with visitor.socket(server) as socket:  # the handshake reads the user
        await socket.send(json.dumps({"type": "message", "text": "hello before"}))
        await receive_until_terminal(socket)
    await asyncio.to_thread(terminate_server_sessions, url)
    try:
        async with visitor.socket(server) as socket:
            await socket.send(json.dumps({"type": "message", "text": "hello after"}))
            return await receive_until_terminal(socket)
    except InvalidStatus as refused:
        return [{"type": "handshake refused", "status": refused.response.status_code}]


async def test_a_socket_opened_after_closed_connections_with_health_checks(
    ledger: Ledger,
) -> None:
    # The set-up the README asks for with persistent or pooled connections:
    # CONN_HEALTH_CHECKS, which Channels' handshake (outside chatomon) relies on.
    with postgres_database("checked") as url:
        env = server_environment(
            DATABASE_URL=url,
            CHATOMON_TEST_CONNECTIONS="persistent",
            CHATOMON_TEST_HEALTH_CHECKS="1",
        )
        env["DJANGO_SETTINGS_MODULE"] = SETTINGS
        migrate(env)
        server = AsgiServer(env).start()
        try:
            events = await socket_after_sessions_ended(server, url, "checked-socket")
        finally:
            server.stop()
    survived = events[-1]["type"] == "done"
    ledger.fault(
        "database closed idle connections (a new socket's handshake, CONN_HEALTH_CHECKS)",
        survived=survived,
    )
    assert survived, events


async def test_a_socket_opened_after_the_database_closed_idle_connections(
    db: Served, ledger: Ledger
) -> None:
    events = await socket_after_sessions_ended(db.server, db.url, f"late-{db.connections}")
    survived = events[-1]["type"] == "done"
    ledger.fault("database closed idle connections (a new socket's handshake)", survived=survived)
    assert survived, events


async def test_a_socket_opened_while_the_database_refuses_connections(
    db: Served, ledger: Ledger
) -> None:
    # A logged-in visitor's handshake reads the user (the test project's sessions are
    # signed cookies: an anonymous one's needs no database until its first turn).
    visitor = Visitor()
    await visitor.log_in(db.server, f"refused-{db.connections}")
    db.proxy.cut()
    events: list[dict[str, Any]] = []
    code: int | None = None
    try:
        async with visitor.socket(db.server) as socket:
            with contextlib.suppress(ConnectionClosed):
                while True:
                    events.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
            code = socket.close_code
    except InvalidStatus as refused:
        events.append({"type": "handshake refused", "status": refused.response.status_code})
    finally:
        db.proxy.restore()
    survived = code == 1011 and len(events) == 1 and store_unavailable(events[0])
    ledger.fault("database refusing connections at a socket's handshake", survived=survived)
    assert survived, (code, events)
