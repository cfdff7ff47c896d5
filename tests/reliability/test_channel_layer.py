"""WebSockets on the Redis channel layer: long-lived sockets, Redis down, logout closes.

Real uvicorn processes sharing PostgreSQL, the Redis cache and channels_redis (as
tests/django/test_scaleout.py). Runs only where DATABASE_URL (PostgreSQL) and REDIS_URL
are set. Issue 19:

- item 1: with redis-py 8 a Redis client gives up on a read after 5 s by default, and
  channels_redis' blocking receive waits 5 s: every socket was dropped, with no close
  frame, about 5 s after it connected. Each long-lived case runs twice: with the README's
  layer configuration (socket_timeout 10 s) and with redis-py's default left in place (the
  set-up of check chatomon.W003), which the consumer must survive too.
- item 5: Redis unreachable: the socket chats on (its own turns need no layer), degraded,
  and the outage is logged once.
- item 9: a logout in one process closes the user's sockets in the other with 4401.
- Redis back after an outage (cut through `tests.reliability.faults.TcpProxy` while a
  socket waits for a staff approval, then restored, with its data kept or lost as a
  restart without persistence loses it): the socket rejoins its groups, and the approval
  decided in the other process reaches it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from chatomon.django.service import conversation_group
from chatomon.django.transports.logout import CLOSE_LOGGED_OUT
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    free_port,
    latest_turn_status,
    migrate,
    postgres_database,
    receive_until_terminal,
    server_environment,
)
from tests.ledger import Ledger
from tests.reliability.faults import TcpProxy, proxied_url, target_of
from tests.services import needs_postgres_and_redis

pytestmark = needs_postgres_and_redis
LAYER_CONFIGS = {"README config": "10", "redis-py default timeout": "default"}


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    with postgres_database("layer") as url:
        migrate(server_environment(DATABASE_URL=url))
        yield url


def environment(database: str, **values: str) -> dict[str, str]:
    return server_environment(
        DATABASE_URL=database,
        REDIS_URL=os.environ["REDIS_URL"],
        CHATOMON_TEST_PREFIX=f"chatomon-layer-{uuid4().hex}",
        **values,
    )


@pytest.fixture(scope="module", params=list(LAYER_CONFIGS), ids=list(LAYER_CONFIGS))
def servers(request: Any, database: str) -> Iterator[tuple[str, AsgiServer, AsgiServer]]:
    """Two processes, one Redis prefix, the channel layer configured as `request.param`."""
    env = environment(database, CHATOMON_TEST_LAYER_SOCKET_TIMEOUT=LAYER_CONFIGS[request.param])
    first, second = AsgiServer(env), AsgiServer(env)
    try:
        first.start()
        second.start()
        yield request.param, first, second
    finally:
        first.stop()
        second.stop()


async def stays_silent(socket: Any, seconds: float) -> bool:
    """Whether `socket` stays open and sends nothing for `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            await socket.recv()
    except TimeoutError:
        return True
    except ConnectionClosed:
        return False
    return False


async def close_code(socket: Any, wait: float = 10) -> int | None:
    """The code `socket` closes with, reading what comes before (None: still open)."""
    try:
        async with asyncio.timeout(wait):
            while True:
                await socket.recv()
    except ConnectionClosed:
        return int(socket.close_code) if socket.close_code is not None else 1006
    except TimeoutError:
        return None


async def chat(socket: Any, text: str, wait: float = 15) -> list[dict[str, Any]]:
    await socket.send(json.dumps({"type": "message", "text": text}))
    return await receive_until_terminal(socket, wait)


async def wait_for_staff(socket: Any, seeding: AsgiServer, unit_cost: str) -> dict[str, Any]:
    """Ask over `socket` for a mutation staff must approve; its `confirm_mutation` event."""
    async with httpx.AsyncClient(base_url=seeding.url) as client:
        part = (await client.post("/test/seed/")).json()["id"]
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "{unit_cost}"}}'
    waiting = (await chat(socket, text))[-1]
    assert waiting["type"] == "confirm_mutation" and waiting["approver"] == "staff"
    return waiting


async def approve_as_staff(deciding: AsgiServer, waiting: dict[str, Any]) -> None:
    """Staff approve the confirmation of `waiting` through the `deciding` process."""
    async with httpx.AsyncClient(base_url=deciding.url, timeout=30) as staff:
        decision = {"confirmation_id": waiting["id"], "confirmed": True}
        await staff.post("/test/staff/decide/", json=decision)


RESUMED = ["confirmation_resolved", "tool_result", "text_chunk", "done"]
"""The events a socket receives of its turn resumed by a staff approval."""


async def test_a_socket_idle_for_30_seconds_stays_open_and_chats(servers, ledger: Ledger):
    config, first, _ = servers
    visitor = Visitor()
    await visitor.log_in(first, f"idle-{uuid4().hex[:6]}")
    async with visitor.socket(first) as socket:
        silent = await stays_silent(socket, 30)
        events = await chat(socket, "still there?") if silent else []
    survived = silent and events[-1]["type"] == "done"
    ledger.fault(f"Redis layer ({config}): WebSocket idle 30 s", survived=survived)
    assert silent, f"the socket closed while idle: {socket.close_code}"
    assert events[-1]["type"] == "done"


async def test_a_turn_streaming_for_20_seconds_completes(servers, ledger: Ledger):
    config, first, _ = servers
    visitor = Visitor()
    await visitor.log_in(first, f"drip-{uuid4().hex[:6]}")
    async with visitor.socket(first) as socket:
        try:
            events = await chat(socket, "drip 20 tick", wait=60)
        except ConnectionClosed:
            events = []
    status = await latest_turn_status(first, "completed")
    chunks = [e for e in events if e["type"] == "text_chunk"]
    survived = bool(events) and events[-1]["type"] == "done" and status == "completed"
    ledger.fault(f"Redis layer ({config}): turn streaming 20 s", survived=survived)
    ledger.running(f"Redis layer ({config}) server", count=int(status == "running"))
    assert events and events[-1]["type"] == "done", events[-3:]
    assert len(chunks) == 20
    assert status == "completed"


async def test_a_socket_waits_30_seconds_for_a_staff_approval_decided_in_the_other_process(
    servers, ledger: Ledger
):
    config, first, second = servers
    visitor = Visitor()
    await visitor.log_in(first, f"waiting-{uuid4().hex[:6]}")
    async with visitor.socket(first) as socket:
        waiting = await wait_for_staff(socket, second, "3.00")
        silent = await stays_silent(socket, 30)
        received: list[dict[str, Any]] = []
        if silent:
            await approve_as_staff(second, waiting)
            received = await receive_until_terminal(socket, 15)
    survived = silent and received[-1]["type"] == "done"
    ledger.fault(f"Redis layer ({config}): socket waits 30 s for staff", survived=survived)
    assert silent, f"the socket closed while waiting: {socket.close_code}"
    assert [e["type"] for e in received] == RESUMED
    assert received[1]["result"]["status"] == "executed"


@pytest.fixture(scope="module")
def redis_down(database: str, tmp_path_factory: Any) -> Iterator[tuple[AsgiServer, Path]]:
    """One process whose Redis (cache and channel layer) is a port nothing listens on."""
    log = tmp_path_factory.mktemp("redis-down") / "server.log"
    env = environment(database)
    env["REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    server = AsgiServer(env, log=log)
    try:
        yield server.start(), log
    finally:
        server.stop()


async def test_with_redis_down_a_socket_chats_degraded_and_the_outage_is_logged_once(
    redis_down, ledger: Ledger
):
    server, log = redis_down
    visitor = Visitor()
    await visitor.log_in(server, f"degraded-{uuid4().hex[:6]}")
    async with visitor.socket(server) as socket:
        first = await chat(socket, "hello")
        silent = await stays_silent(socket, 4)  # the layer's receive keeps failing meanwhile
        second = await chat(socket, "again") if silent else []
    answered = first[-1]["type"] == "done" and bool(second) and second[-1]["type"] == "done"
    ledger.fault("Redis down: WebSocket chats on (degraded)", survived=answered and silent)
    assert [e["type"] for e in first] == ["text_chunk", "text_chunk", "done"]
    assert silent, f"the socket closed: {socket.close_code}"
    assert second[-1]["type"] == "done"
    warnings = log.read_text().count("chat channel layer failed")
    assert warnings == 1, log.read_text()[-3000:]


async def test_with_redis_down_a_staff_decision_still_resumes_the_turn(redis_down, ledger):
    server, _ = redis_down
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        part = (await client.post("/test/seed/")).json()["id"]
        visitor = Visitor()
        await visitor.log_in(server, f"approved-{uuid4().hex[:6]}")
        async with visitor.socket(server) as socket:
            text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "4.00"}}'
            waiting = (await chat(socket, text))[-1]
            decision = {"confirmation_id": waiting["id"], "confirmed": True}
            response = await client.post("/test/staff/decide/", json=decision)
            events = response.json()["events"]
    ledger.fault(
        "Redis down: staff decision publishes nothing", survived=events[-1]["type"] == "done"
    )
    assert response.status_code == 200
    assert events[-1]["type"] == "done"
    assert events[1]["result"]["status"] == "executed"


@pytest.fixture(scope="module")
def pair(database: str) -> Iterator[tuple[AsgiServer, AsgiServer]]:
    env = environment(database)
    first, second = AsgiServer(env), AsgiServer(env)
    try:
        first.start()
        second.start()
        yield first, second
    finally:
        first.stop()
        second.stop()


async def test_a_logout_in_one_process_closes_the_users_sockets_in_the_other(pair, ledger):
    first, second = pair
    visitor = Visitor()
    await visitor.log_in(first, f"leaving-{uuid4().hex[:6]}")
    async with visitor.socket(first) as idle, visitor.socket(first) as busy:
        await busy.send(json.dumps({"type": "message", "text": "drip 20 tick"}))
        await busy.recv()  # the turn streams
        await visitor.post(second, "/test/logout/", {})
        codes = [await close_code(idle), await close_code(busy)]
    status = await latest_turn_status(first, "aborted")
    ledger.fault("logout in another process closes the sockets", survived=codes == [4401] * 2)
    ledger.running("logout (Redis layer) server", count=int(status == "running"))
    assert codes == [CLOSE_LOGGED_OUT, CLOSE_LOGGED_OUT]
    assert status == "aborted"


@pytest.fixture(scope="module")
def behind_proxy(
    database: str, tmp_path_factory: Any
) -> Iterator[tuple[str, TcpProxy, AsgiServer, AsgiServer]]:
    """A process reaching Redis through a proxy the test cuts, and one reaching it directly.

    Both share one key prefix (returned first): the same cache, the same channel layer.
    """
    redis_url = os.environ["REDIS_URL"]
    env = environment(database)
    log = tmp_path_factory.mktemp("redis-back") / "asking.log"
    with TcpProxy(target_of(redis_url)) as proxy:
        asking = AsgiServer({**env, "REDIS_URL": proxied_url(redis_url, proxy)}, log=log)
        deciding = AsgiServer(env)
        try:
            asking.start()
            deciding.start()
            yield env["CHATOMON_TEST_PREFIX"], proxy, asking, deciding
        finally:
            asking.stop()
            deciding.stop()


def forget_everything(prefix: str) -> int:
    """Delete every Redis key of `prefix`, as a Redis restarted without persistence would."""
    import redis  # noqa: PLC0415

    with redis.Redis.from_url(os.environ["REDIS_URL"]) as client:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        return int(client.delete(*keys)) if keys else 0


def group_size(group_key: str) -> int:
    """How many channels the channel layer holds in a group (asked of Redis directly)."""
    import redis  # noqa: PLC0415

    with redis.Redis.from_url(os.environ["REDIS_URL"]) as client:
        return int(client.zcard(group_key))


async def until_rejoined(group_key: str, wait: float = 45) -> bool:
    """Whether the group has a member again within `wait` seconds (the back-off's pace)."""
    for _ in range(int(wait / 0.25)):
        if await asyncio.to_thread(group_size, group_key) > 0:
            return True
        await asyncio.sleep(0.25)
    return False


@pytest.mark.parametrize("data", ["kept", "lost"])
async def test_a_socket_rejoins_its_groups_when_redis_comes_back(
    behind_proxy, data: str, ledger: Ledger
):
    prefix, proxy, asking, deciding = behind_proxy
    visitor = Visitor()
    await visitor.log_in(asking, f"rejoin-{uuid4().hex[:6]}")
    async with visitor.socket(asking) as socket:
        waiting = await wait_for_staff(socket, deciding, "5.00")
        group_key = f"{prefix}:group:{conversation_group(waiting['conversation_id'])}"
        proxy.cut()
        silent = await stays_silent(socket, 4)  # the socket's layer receive fails meanwhile
        if data == "lost":
            assert await asyncio.to_thread(forget_everything, prefix) > 0
        proxy.restore()
        rejoined = await until_rejoined(group_key)
        received: list[dict[str, Any]] = []
        if rejoined:
            await approve_as_staff(deciding, waiting)
            received = await receive_until_terminal(socket, 30)
    survived = silent and rejoined and received[-1]["type"] == "done"
    ledger.fault(
        f"Redis cut and restored (data {data}): a staff approval reaches the socket",
        survived=survived,
    )
    assert silent, f"the socket closed during the outage: {socket.close_code}"
    assert rejoined, "the socket did not rejoin its conversation's group"
    assert [e["type"] for e in received] == RESUMED
