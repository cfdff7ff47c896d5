"""Scale-out: two uvicorn processes sharing PostgreSQL, the Redis cache and channels_redis.

Runs only where DATABASE_URL (PostgreSQL) and REDIS_URL are set. The servers share a
database of their own on that PostgreSQL server, created and dropped by the fixture; every
key in Redis carries a prefix of this run.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest

from chatomon.chat.pipeline.wire import TERMINAL_TYPES
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    migrate,
    postgres_database,
    server_environment,
    staff_approval_over_socket,
)
from tests.services import needs_postgres_and_redis

pytestmark = needs_postgres_and_redis
BUDGET = 6
CREATE = 'mutate createPart {"name": "Bolt"}'


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[AsgiServer, AsgiServer]]:
    with postgres_database("scaleout") as url:
        env = server_environment(
            DATABASE_URL=url,
            REDIS_URL=os.environ["REDIS_URL"],
            CHATOMON_TEST_PREFIX=f"chatomon-scaleout-{uuid4().hex}",
            CHATOMON_TEST_RATE_REQUESTS=str(BUDGET),
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


async def stream_events(visitor: Visitor, server: AsgiServer, text: str) -> list[dict[str, Any]]:
    """The turn's events up to its terminal one (the stream of a client confirmation stays
    open until it is decided or expires: read up to it, as a client would)."""
    headers = await visitor.csrf_headers(server)
    events: list[dict[str, Any]] = []
    async with (
        visitor.client(server) as client,
        client.stream("POST", "/chat/stream/", json={"text": text}, headers=headers) as r,
    ):
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
                if events[-1]["type"] in TERMINAL_TYPES:
                    break
    return events


async def test_a_confirmation_created_through_one_process_is_approved_through_the_other(servers):
    first, second = servers
    visitor = Visitor()
    await visitor.log_in(first, "alice")
    waiting = (await stream_events(visitor, first, CREATE))[-1]
    assert waiting["type"] == "confirm_mutation"
    approved = await visitor.post(
        second, "/chat/confirm/", {"confirmation_id": waiting["id"], "confirmed": True}
    )
    events = approved.json()["events"]
    assert [e["type"] for e in events] == [
        "confirmation_resolved",
        "tool_result",
        "text_chunk",
        "done",
    ]
    assert events[1]["result"]["status"] == "executed"
    again = await visitor.post(
        first, "/chat/confirm/", {"confirmation_id": waiting["id"], "confirmed": True}
    )
    assert again.json()["events"][0]["code"] == "confirmation_unavailable"


async def test_a_staff_approval_in_one_process_reaches_a_socket_on_the_other(servers):
    first, second = servers
    decided, received = await staff_approval_over_socket(second, first, "bob")
    assert decided[-1]["type"] == "done"
    assert [e["type"] for e in received] == [e["type"] for e in decided]
    assert received[0]["decided_by"] == "a staff member"  # never the staff username
    assert received[1]["result"]["status"] == "executed"


async def test_the_request_budget_holds_across_both_processes(servers):
    visitor = Visitor()
    await visitor.log_in(servers[0], "carol")
    headers = await visitor.csrf_headers(servers[0])

    async def one(index: int) -> int:
        async with visitor.client(servers[index % 2]) as client:
            response = await client.post("/chat/", json={"text": "hi"}, headers=headers)
            return response.status_code

    statuses = await asyncio.gather(*(one(i) for i in range(3 * BUDGET)))
    assert statuses.count(200) == BUDGET
    assert statuses.count(429) == 2 * BUDGET
