"""Resuming a turn over the wire: uvicorn processes, httpx and websockets clients.

An SSE client that hangs up mid-turn comes back with `Last-Event-ID` (a new request) and
reads each event after that position once, then the terminal event once; the turn is
recorded completed. Another visitor cannot follow it (404 `turn_not_found`). A WebSocket
client that drops comes back on a new socket. With PostgreSQL and Redis, a turn dropped
on one process is resumed through the other (the cache log).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest

from chatomon.chat.pipeline.wire import TERMINAL_TYPES
from chatomon.django.transports.relay import parse_event_id
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    latest_turn_status,
    migrate,
    postgres_database,
    receive_until_terminal,
    server_environment,
)
from tests.services import needs_postgres_and_redis

Framed = tuple[str | None, dict[str, Any]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AsgiServer]:
    database = Path(tmp_path_factory.mktemp("resume")) / "chat.sqlite3"
    env = server_environment(DATABASE_URL=f"sqlite:///{database}")
    migrate(env)
    running = AsgiServer(env).start()
    yield running
    running.stop()


def frames_of(block: str) -> Framed | None:
    """One SSE block's `id:` and event (None for a comment)."""
    ident, data = None, None
    for line in block.split("\n"):
        if line.startswith("id: "):
            ident = line.removeprefix("id: ")
        elif line.startswith("data: "):
            data = json.loads(line.removeprefix("data: "))
    return None if data is None else (ident, data)


async def read_frames(response: httpx.Response, stop_after: int | None = None) -> list[Framed]:
    """The stream's frames up to its terminal event, or after `stop_after` frames."""
    framed: list[Framed] = []
    buffer = ""
    async for text in response.aiter_text():
        buffer += text
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            found = frames_of(block)
            if found is None:
                continue
            framed.append(found)
            if found[1]["type"] in TERMINAL_TYPES or len(framed) == stop_after:
                return framed
    return framed


async def dropped_stream(visitor: Visitor, server: AsgiServer, text: str) -> list[Framed]:
    """POST chat/stream/, read its first frame, hang up."""
    headers = await visitor.csrf_headers(server)
    async with (
        visitor.client(server) as client,
        client.stream("POST", "/chat/stream/", json={"text": text}, headers=headers) as response,
    ):
        assert response.status_code == 200
        visitor.cookies.update(response.cookies)  # the session the turn belongs to
        return await read_frames(response, stop_after=1)


async def resumed_stream(
    visitor: Visitor, server: AsgiServer, headers: dict[str, str], query: str = ""
) -> tuple[int, list[Framed]]:
    async with (
        visitor.client(server) as client,
        client.stream("GET", f"/chat/stream/resume/{query}", headers=headers) as response,
    ):
        return response.status_code, await read_frames(response)


async def test_an_sse_client_that_hung_up_resumes_after_its_last_event_id(server):
    visitor = Visitor()
    first = await dropped_stream(visitor, server, "drip 2 tick")
    last_id, event = first[-1]
    assert last_id is not None and parse_event_id(last_id) == (event["turn_id"], 1)
    status, rest = await resumed_stream(visitor, server, {"Last-Event-ID": last_id})
    assert status == 200
    kinds = [e["type"] for _, e in first + rest]
    assert kinds == ["text_chunk", "text_chunk", "done"]
    assert [e.get("content") for _, e in first + rest][:2] == ["tick 1 ", "tick 2 "]
    assert [parse_event_id(i) for i, _ in rest] == [(event["turn_id"], 2), (event["turn_id"], 3)]
    assert await latest_turn_status(server, "completed") == "completed"
    # Finished while away, it still replays once (from this process's memory), by query too.
    again = f"?turn_id={event['turn_id']}&after=2"
    status, last = await resumed_stream(visitor, server, {}, again)
    assert (status, [e["type"] for _, e in last]) == (200, ["done"])


async def test_a_resume_of_another_visitors_turn_or_of_none_is_refused(server):
    owner, stranger = Visitor(), Visitor()
    first = await dropped_stream(owner, server, "drip 1 tick")
    turn_id = first[-1][1]["turn_id"]
    await stranger.csrf_headers(server)  # a session of its own
    status, refused = await resumed_stream(stranger, server, {"Last-Event-ID": f"{turn_id}:1"})
    assert status == 404 and refused[0][1]["code"] == "turn_not_found"
    status, refused = await resumed_stream(owner, server, {})
    assert status == 400 and refused[0][1]["code"] == "bad_event"
    status, rest = await resumed_stream(owner, server, {"Last-Event-ID": f"{turn_id}:1"})
    assert [e["type"] for _, e in rest] == ["done"]


async def test_a_websocket_client_that_dropped_resumes_on_a_new_socket(server):
    visitor = Visitor()
    await visitor.log_in(server, f"dropper-{uuid4().hex[:6]}")
    async with visitor.socket(server) as socket:
        await socket.send(json.dumps({"type": "message", "text": "drip 2 tick"}))
        seen = [json.loads(await socket.recv())]
    async with visitor.socket(server) as socket:
        resume = {"type": "resume", "turn_id": seen[0]["turn_id"], "after": len(seen)}
        await socket.send(json.dumps(resume))
        rest = await receive_until_terminal(socket)
    assert [e["type"] for e in seen + rest] == ["text_chunk", "text_chunk", "done"]
    assert await latest_turn_status(server, "completed") == "completed"


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[AsgiServer, AsgiServer]]:
    with postgres_database("resume") as url:
        env = server_environment(
            DATABASE_URL=url,
            REDIS_URL=os.environ["REDIS_URL"],
            CHATOMON_TEST_PREFIX=f"chatomon-resume-{uuid4().hex}",
        )
        first, second = AsgiServer(env), AsgiServer(env)
        try:
            migrate(env)
            first.start()
            second.start()
            yield first, second
        finally:
            first.stop()
            second.stop()


@needs_postgres_and_redis
async def test_a_turn_dropped_on_one_process_is_resumed_through_the_other(pair):
    first, second = pair
    visitor = Visitor()
    dropped = await dropped_stream(visitor, first, "drip 3 tick")
    last_id, event = dropped[-1]
    assert last_id is not None
    status, rest = await resumed_stream(visitor, second, {"Last-Event-ID": last_id})
    assert status == 200
    assert [e["type"] for _, e in dropped + rest] == ["text_chunk"] * 3 + ["done"]
    assert [parse_event_id(i) for i, _ in rest] == [(event["turn_id"], n) for n in (2, 3, 4)]
    stranger = Visitor()
    await stranger.csrf_headers(second)
    status, refused = await resumed_stream(stranger, second, {"Last-Event-ID": last_id})
    assert status == 404 and refused[0][1]["code"] == "turn_not_found"
