"""Through a real ASGI server process (uvicorn) with real clients: httpx and websockets.

One server on loopback for the module, on its own SQLite file and the in-memory channel
layer (one process: the embedded default). The in-process tests cover every code; these
show that the same contract holds on the wire.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.asgi_app.fixtures import sse_events
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    latest_turn_status,
    migrate,
    receive_until_terminal,
    server_environment,
    staff_approval_over_socket,
)

CREATE = 'mutate createPart {"name": "Bolt"}'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AsgiServer]:
    database = Path(tmp_path_factory.mktemp("server")) / "chat.sqlite3"
    env = server_environment(DATABASE_URL=f"sqlite:///{database}")
    migrate(env)
    running = AsgiServer(env).start()
    yield running
    running.stop()


async def recent_turns(server: AsgiServer) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.url) as client:
        turns: list[dict[str, Any]] = (await client.get("/test/turns/")).json()["turns"]
        return turns


async def test_post_chat_answers_with_the_envelope_and_enforces_csrf_and_post(server):
    visitor = Visitor()
    response = await visitor.post(server, "/chat/", {"text": "hello"})
    assert response.status_code == 200
    assert response.json()["answer"] == "Echo: hello"
    async with httpx.AsyncClient(base_url=server.url) as bare:
        assert (await bare.post("/chat/", json={"text": "hi"})).status_code == 403
        assert (await bare.get("/chat/")).status_code == 405


async def test_sse_streams_incrementally_with_the_session_cookie_in_the_headers(server):
    visitor = Visitor()
    headers = await visitor.csrf_headers(server)
    chunks: list[bytes] = []
    async with (
        visitor.client(server) as client,
        client.stream(
            "POST", "/test/stream/", json={"text": "slow 0.4 hi"}, headers=headers
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-accel-buffering"] == "no"
        assert "sessionid" in response.cookies
        chunks.extend([chunk async for chunk in response.aiter_raw()])
    # Heartbeats arrived on their own before the answer: nothing buffered the stream.
    assert chunks[0] == b": heartbeat\n\n"
    body = b"".join(chunks)
    assert body.endswith(b"\n\n")
    assert [f["type"] for f in sse_events(body)] == ["text_chunk", "done"]


async def test_an_sse_client_that_goes_away_leaves_its_turn_to_complete(server):
    # Detached, not cancelled: it can be resumed (tests/django/test_resume_server.py).
    visitor = Visitor()
    headers = await visitor.csrf_headers(server)
    async with (
        visitor.client(server) as client,
        client.stream("POST", "/test/stream/", json={"text": "slow 1 x"}, headers=headers) as r,
    ):
        async for _chunk in r.aiter_raw():  # heartbeats until the turn runs, then hang up
            turns = await recent_turns(server)
            if turns and turns[0]["status"] == "running":
                break
    assert await latest_turn_status(server, "completed") == "completed"


async def test_a_websocket_turn_with_a_confirmation_then_a_resumed_answer(server):
    visitor = Visitor()
    await visitor.log_in(server, "alice")
    async with visitor.socket(server) as socket:
        await socket.send(json.dumps({"type": "message", "text": CREATE}))
        waiting = (await receive_until_terminal(socket))[-1]
        assert waiting["type"] == "confirm_mutation"
        await socket.send(json.dumps({"type": "message", "text": "too early"}))
        assert json.loads(await socket.recv())["code"] == "confirmation_pending"
        decision = {"type": "confirm", "confirmation_id": waiting["id"], "confirmed": True}
        await socket.send(json.dumps(decision))
        resumed = await receive_until_terminal(socket)
        assert [e["type"] for e in resumed] == [
            "confirmation_resolved",
            "tool_result",
            "text_chunk",
            "done",
        ]
        await socket.send("not json")
        assert json.loads(await socket.recv())["code"] == "bad_event"


async def test_a_staff_approval_reaches_the_waiting_socket(server):
    decided, received = await staff_approval_over_socket(server, server, "bob")
    assert decided[-1]["type"] == "done"
    assert [e["type"] for e in received] == [e["type"] for e in decided]
    assert received[0]["type"] == "confirmation_resolved"
    assert received[0]["decided_by"] == "a staff member"  # never the staff username
    assert received[1]["result"]["status"] == "executed"


async def test_closing_a_socket_mid_turn_leaves_the_turn_to_complete(server):
    visitor = Visitor()
    async with visitor.socket(server) as socket:
        await socket.send(json.dumps({"type": "message", "text": "slow 1 x"}))
        await asyncio.sleep(0.5)
    assert await latest_turn_status(server, "completed") == "completed"


async def test_a_denied_user_is_closed_with_4403_and_a_foreign_origin_refused(server):
    visitor = Visitor()
    await visitor.log_in(server, "blocked-eve")
    async with visitor.socket(server) as socket:
        with pytest.raises(ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    assert (await visitor.post(server, "/chat/", {"text": "hi"})).status_code == 403
    from websockets.asyncio.client import connect  # noqa: PLC0415

    with pytest.raises(InvalidStatus) as refused:
        async with connect(server.ws_url + "/chat/", origin="http://evil.example"):
            pass
    assert refused.value.response.status_code == 403
