"""The worker process killed (SIGKILL) while a turn waits for a confirmation.

Two uvicorn processes share one database (PostgreSQL when DATABASE_URL names it, else a
SQLite file both open). A signed-in user's turn asks for a mutation on the first; while it
waits for the decision, that process is killed with SIGKILL (no clean-up runs, its
sockets and streams die with it). The second process resumes the turn from the stored
confirmation: a staff approval (as the console decides), or the end user's own decision
through `chat/confirm/`. The resumed turn completes (its mutation ran, the model
answered), and no turn is left `running`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.asgi_app.fixtures import sse_events
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    receive_until_terminal,
    server_environment,
)
from tests.ledger import Ledger
from tests.reliability.faults import migrated_database


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """A migrated database both processes share."""
    with migrated_database("killed", tmp_path) as url:
        yield url


@pytest.fixture
def workers(database_url: str) -> Iterator[tuple[AsgiServer, AsgiServer]]:
    """Two server processes on the one database: the one to kill, and the survivor."""
    env = server_environment(DATABASE_URL=database_url)
    first, second = AsgiServer(env), AsgiServer(env)
    try:
        yield first.start(), second.start()
    finally:
        first.stop()
        second.stop()


def kill(server: AsgiServer) -> None:
    """SIGKILL the server's process and reap it: nothing of it runs any more."""
    assert server.process is not None
    server.process.kill()
    assert server.process.wait(10) == -9
    server.process = None


async def turns_of(server: AsgiServer) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.url) as client:
        turns: list[dict[str, Any]] = (await client.get("/test/turns/")).json()["turns"]
    return turns


def record(
    ledger: Ledger, how: str, events: list[dict[str, Any]], turns: list[dict[str, Any]]
) -> bool:
    running = sum(turn["status"] == "running" for turn in turns)
    completed = bool(events) and events[-1]["type"] == "done"
    ledger.fault(f"worker killed while a turn waits for {how}", survived=completed)
    ledger.running("worker killed (the surviving worker)", count=running)
    return completed and running == 0


async def test_a_staff_approval_resumes_in_another_worker_after_a_sigkill(
    workers: tuple[AsgiServer, AsgiServer], ledger: Ledger
) -> None:
    doomed, survivor = workers
    visitor = Visitor()
    await visitor.log_in(doomed, "killed-staff")
    async with httpx.AsyncClient(base_url=doomed.url) as client:
        part = (await client.post("/test/seed/")).json()["id"]
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "7.00"}}'
    async with visitor.socket(doomed) as socket:
        await socket.send(json.dumps({"type": "message", "text": text}))
        waiting = (await receive_until_terminal(socket))[-1]
        assert waiting["type"] == "confirm_mutation" and waiting["approver"] == "staff"
        kill(doomed)  # the socket waiting for the approval dies with its process
    async with httpx.AsyncClient(base_url=survivor.url, timeout=30) as staff:
        decision = {"confirmation_id": waiting["id"], "confirmed": True}
        events = (await staff.post("/test/staff/decide/", json=decision)).json()["events"]
    turns = await turns_of(survivor)
    assert record(ledger, "a staff approval", events, turns), (events, turns)
    assert [e["type"] for e in events][:2] == ["confirmation_resolved", "tool_result"]
    assert events[1]["result"]["status"] == "executed", events[1]
    assert events[1]["result"]["result"]["unit_cost"] == "7.00"
    assert {t["id"]: t["status"] for t in turns}[waiting["turn_id"]] == "completed"


async def test_the_users_confirmation_resumes_in_another_worker_after_a_sigkill(
    workers: tuple[AsgiServer, AsgiServer], ledger: Ledger
) -> None:
    doomed, survivor = workers
    visitor = Visitor()
    await visitor.log_in(doomed, "killed-client")
    headers = await visitor.csrf_headers(doomed)
    events: list[dict[str, Any]] = []
    body = b""
    async with (
        visitor.client(doomed) as client,
        client.stream(
            "POST", "/chat/stream/", json={"text": 'mutate createPart {"name": "Bolt"}'},
            headers=headers,
        ) as response,
    ):  # fmt: skip
        async for chunk in response.aiter_bytes():
            body += chunk
            events = sse_events(body)
            if events and events[-1]["type"] == "confirm_mutation":
                break
        waiting = events[-1]
        assert waiting["type"] == "confirm_mutation" and waiting["approver"] == "client"
        kill(doomed)  # the stream waiting on the user's decision dies with its process
    decision = {"confirmation_id": waiting["id"], "confirmed": True}
    response = await visitor.post(survivor, "/chat/confirm/", decision)
    events = response.json()["events"]
    turns = await turns_of(survivor)
    assert record(ledger, "the user's confirmation (chat/confirm/)", events, turns), (events, turns)
    assert response.status_code == 200
    assert [e["type"] for e in events][:2] == ["confirmation_resolved", "tool_result"]
    assert events[1]["result"]["status"] == "executed", events[1]
    assert {t["id"]: t["status"] for t in turns}[waiting["turn_id"]] == "completed"
