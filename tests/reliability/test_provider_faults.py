"""Provider failures at every point of a turn's stream, and providers that cannot be built.

In process (`ChatService` on both stores, beside tests/chat/test_service_failures.py,
which covers a failure before the first chunk, in the round after a tool result and on a
resumed turn): a failure after some text, one while a tool call streams (before its
completion ends), a model that never answers past `timeout_seconds`, one that stalls
mid-answer past `stream_timeout_seconds`, and a resumed turn that hangs after a staff
approval.

Over a real uvicorn server (`tests.reliability.fault_providers.FaultProvider`), on HTTP,
SSE and WebSocket: every point, the confirmation's resumed turn included (decided by
staff, through `chat/confirm/`, or over the socket). Each turn ends with a terminal
`error` event naming no secret of the exception, is recorded `aborted`, and leaves no
turn `running`.

A provider that cannot be built (issue 19, item 6: an unknown `provider_config` key, a
missing vendor extra, a constructor that raises): `chat/`, `chat/stream/` and
`chat/confirm/` answer `chat_error` with HTTP 500 in their own format (the JSON envelope,
a one-frame event stream), never Django's HTML 500, and the problem is logged once per
process and settings, not once per request.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import AsyncClient

from chatomon.chat.store import ConversationStore, MemoryStore
from chatomon.django.persistence.store import DjangoStore
from chatomon.errors import ProviderUnavailableError
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import Delay, tool_call
from tests.asgi_app.fixtures import chat_project, close_worker_connections, configure, sse_events
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    receive_until_terminal,
    server_environment,
)
from tests.chat.services import RENAME, STAFF, USER, collect, confirm_settings, service
from tests.ledger import Ledger
from tests.reliability.fault_providers import SECRET
from tests.reliability.faults import migrated_database

__all__ = ["chat_project", "close_worker_connections"]  # fixtures used by name

SETTINGS = "tests.reliability.server_settings"
GENERIC = "Something went wrong. Please try again."


@pytest.fixture(
    params=["memory", pytest.param("django", marks=pytest.mark.django_db(transaction=True))]
)
def store(request: pytest.FixtureRequest, close_worker_connections: None) -> ConversationStore:
    """The in-memory store, then the Django store."""
    return MemoryStore() if request.param == "memory" else DjangoStore()


async def ended_aborted(store: ConversationStore, events: list[dict[str, Any]]) -> bool:
    """Whether the last event is a terminal error and its turn is aborted, none running."""
    last = events[-1]
    turn = await store.get_turn(last["turn_id"])
    running = await store.list_turns(status="running")
    return last["type"] == "error" and turn is not None and turn.status == "aborted" and not running


def timed(provider: ScriptedProvider, **timeouts: float) -> ScriptedProvider:
    """`provider` with its own `timeout_seconds` / `stream_timeout_seconds` (the contract's)."""
    provider.settings = {**provider.settings, **timeouts}
    return provider


IN_PROCESS: dict[str, tuple[Callable[[], ScriptedProvider], list[str] | None, str]] = {
    "after some text": (
        lambda: ScriptedProvider(
            [["Partial ", "answer", ProviderUnavailableError(SECRET, provider="v")]]
        ),
        ["text_chunk", "text_chunk", "error"],
        "provider_failed",
    ),
    "while a tool call streams": (
        lambda: ScriptedProvider(
            [[tool_call("search_managers", {"query": "parts"}), RuntimeError(SECRET)]]
        ),
        None,  # whether the call was streamed before the failure is the loop's business
        "chat_error",
    ),
    "no first event within timeout_seconds": (
        lambda: timed(ScriptedProvider([[Delay(30), "late"]]), timeout_seconds=0.3),
        ["error"],
        "deadline_exceeded",
    ),
    "stalled past stream_timeout_seconds": (
        lambda: timed(
            ScriptedProvider([["Partial ", Delay(30), "late"]]), stream_timeout_seconds=0.3
        ),
        ["text_chunk", "error"],
        "deadline_exceeded",
    ),
}


@pytest.mark.parametrize("point", sorted(IN_PROCESS))
async def test_a_provider_failing_at_a_point_of_the_stream_aborts_the_turn(
    store: ConversationStore, point: str, ledger: Ledger
) -> None:
    provider, types, code = IN_PROCESS[point]
    events = await collect(service(store, provider()).run_turn(USER, "Hi"))
    survived = await ended_aborted(store, events) and events[-1]["code"] == code
    ledger.fault(f"provider failing {point} (in process)", survived=survived)
    ledger.running(
        "provider faults (in process)", count=len(await store.list_turns(status="running"))
    )
    assert survived, events
    if types is not None:
        assert [e["type"] for e in events] == types
    assert "tool_result" not in [e["type"] for e in events]  # no tool ran on a broken completion
    assert SECRET not in json.dumps(events)


async def test_a_resumed_turn_hanging_after_a_staff_approval_aborts(
    store: ConversationStore, ledger: Ledger
) -> None:
    provider = timed(ScriptedProvider([[RENAME], [Delay(30), "late"]]), timeout_seconds=0.3)
    chat = service(store, provider, settings=confirm_settings(staff=True))
    pending = (await collect(chat.run_turn(USER, "Rename steel")))[-1]
    assert pending["type"] == "confirm_mutation"
    events = await collect(chat.resolve_confirmation(STAFF, pending["id"], True, decided_by="s"))
    survived = await ended_aborted(store, events) and events[-1]["code"] == "deadline_exceeded"
    ledger.fault("provider hanging on the resumed turn after a staff approval", survived=survived)
    ledger.running(
        "provider faults (in process)", count=len(await store.list_turns(status="running"))
    )
    assert survived, events
    assert [e["type"] for e in events] == ["confirmation_resolved", "tool_result", "error"]


# --- over a real server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database of its own: PostgreSQL when DATABASE_URL names it, else SQLite."""
    with migrated_database("providers", tmp_path_factory.mktemp("providers")) as url:
        yield url


def provider_server(url: str, provider: str, log: Path | None = None) -> AsgiServer:
    env = server_environment(DATABASE_URL=url, CHATOMON_TEST_PROVIDER=provider)
    env["DJANGO_SETTINGS_MODULE"] = SETTINGS
    return AsgiServer(env, log=log)


@pytest.fixture(scope="module")
def faulty(database_url: str) -> Iterator[AsgiServer]:
    """A server whose model is the FaultProvider."""
    server = provider_server(database_url, "tests.reliability.fault_providers.FaultProvider")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def running_on(server: AsgiServer) -> int:
    async with httpx.AsyncClient(base_url=server.url) as client:
        turns = (await client.get("/test/turns/")).json()["turns"]
    return sum(turn["status"] == "running" for turn in turns)


async def latest_status(server: AsgiServer) -> str:
    async with httpx.AsyncClient(base_url=server.url) as client:
        return str((await client.get("/test/turns/")).json()["turns"][0]["status"])


async def http_turn(server: AsgiServer, visitor: Visitor, text: str) -> list[dict[str, Any]]:
    response = await visitor.post(server, "/chat/", {"text": text})
    assert response.headers["content-type"].startswith("application/json")
    events: list[dict[str, Any]] = response.json()["events"]
    return events


async def sse_turn(
    server: AsgiServer, visitor: Visitor, path: str, payload: dict[str, Any]
) -> list[dict[str, Any]]:
    """The events of a stream up to its terminal one (a confirmation keeps it open)."""
    headers = await visitor.csrf_headers(server)
    events: list[dict[str, Any]] = []
    body = b""
    async with (
        visitor.client(server) as client,
        client.stream("POST", path, json=payload, headers=headers) as response,
    ):
        async for chunk in response.aiter_bytes():
            body += chunk
            events = sse_events(body)
            if events and events[-1]["type"] in ("done", "error", "confirm_mutation"):
                break
    return events


@contextlib.asynccontextmanager
async def socket_of(server: AsgiServer, visitor: Visitor) -> AsyncIterator[Any]:
    async with visitor.socket(server) as socket:
        yield socket


async def socket_turn(socket: Any, frame: dict[str, Any]) -> list[dict[str, Any]]:
    await socket.send(json.dumps(frame))
    return await receive_until_terminal(socket, wait=30)


async def one_turn(server: AsgiServer, surface: str, text: str) -> list[dict[str, Any]]:
    visitor = Visitor()
    if surface == "http":
        return await http_turn(server, visitor, text)
    if surface == "sse":
        return await sse_turn(server, visitor, "/chat/stream/", {"text": text})
    async with socket_of(server, visitor) as socket:
        return await socket_turn(socket, {"type": "message", "text": text})


POINTS = {
    "fail before": ("provider_failed", "chat_error"),
    "fail after text": ("provider_failed",),
    "fail in tool call": ("provider_failed",),
    "fail after tool": ("provider_failed",),
    "hang first": ("deadline_exceeded",),
    "hang midway": ("deadline_exceeded",),
}


@pytest.mark.parametrize("surface", ["http", "sse", "websocket"])
@pytest.mark.parametrize("point", sorted(POINTS))
async def test_a_provider_failing_on_a_real_server_ends_the_turn(
    faulty: AsgiServer, surface: str, point: str, ledger: Ledger
) -> None:
    events = await one_turn(faulty, surface, point)
    status = await latest_status(faulty)
    running = await running_on(faulty)
    last = events[-1]
    survived = last["type"] == "error" and last["code"] in POINTS[point] and status == "aborted"
    ledger.fault(f"provider: {point} ({surface}, real server)", survived=survived)
    ledger.running("provider faults (real server)", count=running)
    assert survived, (events, status)
    assert SECRET not in json.dumps(events)
    assert running == 0


async def test_a_provider_failing_on_the_resumed_turn_after_each_kind_of_decision(
    faulty: AsgiServer, ledger: Ledger
) -> None:
    async with httpx.AsyncClient(base_url=faulty.url) as client:
        part = (await client.post("/test/seed/")).json()["id"]
    staff_change = f'fail after confirm updatePartCost {{"part_id": {part}, "unit_cost": "2.00"}}'
    client_change = 'fail after confirm createPart {"name": "Bolt"}'
    endings: dict[str, list[dict[str, Any]]] = {}

    visitors = {name: Visitor() for name in ("http", "sse", "websocket")}
    for name, visitor in visitors.items():  # changing data needs a signed-in user
        await visitor.log_in(faulty, f"resumed-{name}")

    # HTTP: a staff approval, decided as the console does.
    asked = await http_turn(faulty, visitors["http"], staff_change)
    assert asked[-1]["type"] == "confirm_mutation" and asked[-1]["approver"] == "staff", asked
    async with httpx.AsyncClient(base_url=faulty.url, timeout=30) as staff:
        decision = {"confirmation_id": asked[-1]["id"], "confirmed": True}
        endings["staff approval"] = (await staff.post("/test/staff/decide/", json=decision)).json()[
            "events"
        ]

    # SSE: the end user's confirmation through chat/confirm/.
    visitor = visitors["sse"]
    asked = await sse_turn(faulty, visitor, "/chat/stream/", {"text": client_change})
    assert asked[-1]["type"] == "confirm_mutation" and asked[-1]["approver"] == "client"
    decision = {"confirmation_id": asked[-1]["id"], "confirmed": True}
    endings["chat/confirm/"] = (await visitor.post(faulty, "/chat/confirm/", decision)).json()[
        "events"
    ]

    # WebSocket: the end user's confirmation over the socket.
    async with socket_of(faulty, visitors["websocket"]) as socket:
        asked = await socket_turn(socket, {"type": "message", "text": client_change})
        assert asked[-1]["type"] == "confirm_mutation"
        frame = {"type": "confirm", "confirmation_id": asked[-1]["id"], "confirmed": True}
        endings["socket confirmation"] = await socket_turn(socket, frame)

    running = await running_on(faulty)
    ledger.running("provider faults (real server)", count=running)
    for how, events in endings.items():
        survived = events[-1]["type"] == "error" and events[-1]["code"] == "provider_failed"
        ledger.fault(f"provider failing on the resumed turn ({how})", survived=survived)
        assert survived, (how, events)
        assert [e["type"] for e in events][:2] == ["confirmation_resolved", "tool_result"]
        assert SECRET not in json.dumps(events)
    assert running == 0


# --- a provider that cannot be built ----------------------------------------------------

UNBUILDABLE = {
    "unknown provider_config key": {
        "provider": "tests.asgi_app.providers.RulesProvider",
        "provider_config": {"delay_secs": 1},
    },
    "missing vendor extra": {"provider": "tests.reliability.fault_providers.MissingExtraProvider"},
    "constructor raises": {"provider": "tests.reliability.fault_providers.RaisingProvider"},
}


def unbuildable_logs(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "cannot be built" in r.getMessage()]


@pytest.mark.django_db
@pytest.mark.usefixtures("chat_project")
@pytest.mark.parametrize("problem", sorted(UNBUILDABLE))
async def test_an_unbuildable_provider_answers_chat_error_and_is_logged_once(
    settings: Any, caplog: pytest.LogCaptureFixture, problem: str, ledger: Ledger
) -> None:
    configure(settings, **UNBUILDABLE[problem])
    client = AsyncClient()
    answers = []
    with caplog.at_level(logging.ERROR, logger="chatomon.django.service"):
        for _ in range(2):
            answers.append(await client.post("/chat/", {"text": "hi"}, "application/json"))
            answers.append(await client.post("/chat/stream/", {"text": "hi"}, "application/json"))
        decision = {"confirmation_id": "x", "confirmed": True}
        answers.append(await client.post("/chat/confirm/", decision, "application/json"))
    logged_once = len(unbuildable_logs(caplog)) == 1
    errors = []
    for response in answers:
        content_type = response["Content-Type"]
        if content_type.startswith("text/event-stream"):
            (event,) = sse_events(response.content)
        else:
            assert content_type == "application/json", content_type
            (event,) = response.json()["events"]
        errors.append((response.status_code, event["type"], event["code"], event["message"]))
    survived = logged_once and set(errors) == {(500, "error", "chat_error", GENERIC)}
    ledger.fault(f"provider that cannot be built: {problem} (in process)", survived=survived)
    assert set(errors) == {(500, "error", "chat_error", GENERIC)}, errors
    assert logged_once, [r.getMessage() for r in caplog.records]
    assert all(SECRET not in response.content.decode() for response in answers)

    # Other settings (a fixed CHATOMON, or another broken one) are logged anew.
    configure(settings, **UNBUILDABLE[problem], max_message_chars=999)
    with caplog.at_level(logging.ERROR, logger="chatomon.django.service"):
        await client.post("/chat/", {"text": "hi"}, "application/json")
    assert len(unbuildable_logs(caplog)) == 2


async def test_an_unbuildable_provider_on_a_real_server(
    database_url: str, tmp_path: Path, ledger: Ledger
) -> None:
    log = tmp_path / "server.log"
    server = provider_server(
        database_url, "tests.reliability.fault_providers.RaisingProvider", log=log
    ).start()
    try:
        visitor = Visitor()
        answers = [await visitor.post(server, "/chat/", {"text": "hi"}) for _ in range(3)]
        answers += [await visitor.post(server, "/chat/stream/", {"text": "hi"}) for _ in range(3)]
    finally:
        server.stop()
    logged = log.read_text().count("cannot be built")
    statuses = {(r.status_code, r.headers["content-type"].split(";")[0]) for r in answers}
    survived = logged == 1 and statuses == {(500, "application/json"), (500, "text/event-stream")}
    ledger.fault("provider that cannot be built (real server)", survived=survived)
    assert statuses == {(500, "application/json"), (500, "text/event-stream")}, statuses
    assert logged == 1, log.read_text()[-3000:]
    assert all(SECRET not in r.text for r in answers)
