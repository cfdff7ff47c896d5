"""`RequestThreadsHandler`: request threads outlive requests; sync middleware in one trip."""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from asgiref.sync import iscoroutinefunction, sync_to_async
from channels.layers import get_channel_layer
from django.core.signals import request_finished, request_started
from django.db import connections
from django.db.backends.signals import connection_created
from django.test import override_settings

from chatomon import Orbital, OrbitalContext, Verdict
from chatomon.django.asgi import (
    MiddlewareMode,
    RequestThreadsHandler,
    get_asgi_application,
    hopping_middleware,
)
from chatomon.django.audit.signals import chat_message_received
from chatomon.django.models import Turn
from tests.asgi_app import project
from tests.asgi_app.fixtures import configure, make_part
from tests.asgi_app.providers import RulesProvider
from tests.django import request_threads_urls

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_worker_connections"),
]
MODES = ["sync", "async"]
# The console package maps outside sdk/: imported by name, as the console tests do.
APPROVALS_GROUP = importlib.import_module("chatomon.console.live").APPROVALS_GROUP
CSRF = "handlerhandlerhandlerhandlerhand"


@pytest.fixture(params=MODES)
def handler(request: pytest.FixtureRequest) -> Iterator[RequestThreadsHandler]:
    with override_settings(ROOT_URLCONF="tests.django.request_threads_urls"):
        made = get_asgi_application(max_idle_threads=4, middleware=request.param)
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


async def test_a_task_outliving_its_request_cannot_use_the_request_thread(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/leave-task/")
    assert response.status_code == 200
    task = request_threads_urls.LEFT_BEHIND.pop()
    with pytest.raises(RuntimeError):
        await task


@pytest.fixture
def request_signals() -> Iterator[list[tuple[str, int]]]:
    """Each request_started and request_finished sent, with the thread it ran on."""
    sent: list[tuple[str, int]] = []

    def started(**kwargs: Any) -> None:
        sent.append(("started", threading.get_ident()))

    def finished(**kwargs: Any) -> None:
        sent.append(("finished", threading.get_ident()))

    request_started.connect(started, weak=False)
    request_finished.connect(finished, weak=False)
    yield sent
    request_started.disconnect(started)
    request_finished.disconnect(finished)


@pytest.mark.parametrize("path", ["/where/", "/fail/", "/stream/"])
async def test_each_request_is_started_and_finished_once_on_its_thread(
    client: httpx.AsyncClient, request_signals: list[tuple[str, int]], path: str
) -> None:
    thread = (await where(client))["thread"]
    request_signals.clear()
    await client.get(path)
    assert request_signals == [("started", thread), ("finished", thread)]


async def test_a_streaming_response_is_closed_after_its_last_chunk(
    client: httpx.AsyncClient, request_signals: list[tuple[str, int]]
) -> None:
    request_threads_urls.STREAMED.clear()

    def finished(**kwargs: Any) -> None:
        request_threads_urls.STREAMED.append("finished")

    request_finished.connect(finished, weak=False)
    try:
        response = await client.get("/stream/")
    finally:
        request_finished.disconnect(finished)
    assert response.content == b"one two"
    assert request_threads_urls.STREAMED == ["streamed", "finished"]


def http_scope(path: str, query_string: bytes = b"") -> dict[str, Any]:
    """The scope of a GET of `path` from a client on loopback."""
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": query_string, "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }  # fmt: skip


def request_body() -> Any:
    """An ASGI `receive` giving an empty body, then waiting (the client stays)."""
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    return receive


async def test_a_request_django_cannot_read_is_answered_400(
    handler: RequestThreadsHandler, request_signals: list[tuple[str, int]]
) -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    # A query string that is not UTF-8: Django answers 400 before any middleware.
    await handler(http_scope("/where/", query_string=b"\xff"), request_body(), send)
    assert sent[0]["status"] == 400
    assert [name for name, _ in request_signals] == ["started", "finished"]


async def test_a_client_gone_mid_request_still_finishes_it_once(
    handler: RequestThreadsHandler, request_signals: list[tuple[str, int]]
) -> None:
    waiting = asyncio.Event()
    loop = asyncio.get_running_loop()
    messages = [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await waiting.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        raise AssertionError(f"nothing is sent to a client that left: {message}")

    def started(**kwargs: Any) -> None:  # on the request thread; the view waits soon after
        loop.call_soon_threadsafe(loop.call_later, 0.1, waiting.set)

    request_started.connect(started, weak=False)
    try:
        await asyncio.wait_for(handler(http_scope("/hang/"), receive, send), timeout=5)
    finally:
        request_started.disconnect(started)
    assert [name for name, _ in request_signals] == ["started", "finished"]
    assert handler.idle_threads == 1


async def test_other_scope_types_are_refused(handler: RequestThreadsHandler) -> None:
    with pytest.raises(ValueError, match="not websocket"):
        await handler({"type": "websocket"}, None, None)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_idle_threads": -1}, "max_idle_threads must be 0 or more, not -1"),
        (
            {"middleware": "threads"},
            'middleware must be "auto", "async" or "sync", not \'threads\'',
        ),
    ],
)
def test_bad_arguments_are_refused(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RequestThreadsHandler(**arguments)


def test_hopping_middleware_names_the_synchronous_hooks() -> None:
    paths = [*project.MIDDLEWARE, "django_htmx.middleware.HtmxMiddleware"]
    # Session, CSRF and auth middleware have sync process_* hooks; HtmxMiddleware is async.
    assert hopping_middleware(paths) == project.MIDDLEWARE


def test_an_async_only_middleware_keeps_the_chain_async() -> None:
    paths = [*project.MIDDLEWARE, "tests.django.request_threads_urls.AsyncOnlyMiddleware"]
    assert hopping_middleware(paths) == []


@pytest.mark.parametrize("mode", ["auto", "sync", "async"])
def test_auto_runs_the_chain_sync_for_the_chat_projects_middleware(
    mode: str, settings: Any
) -> None:
    settings.MIDDLEWARE = project.MIDDLEWARE
    made = RequestThreadsHandler(middleware=mode)
    assert made.sync_middleware is (mode != "async")
    assert iscoroutinefunction(made._middleware_chain) is (mode == "async")


# The chat project through the handler, in both chain modes.


@pytest.fixture(params=MODES)
def chat_handler(
    request: pytest.FixtureRequest, chat_project: Any
) -> Iterator[RequestThreadsHandler]:
    made = RequestThreadsHandler(middleware=request.param)
    yield made
    made.close()


def chat_client(handler: RequestThreadsHandler) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=handler),
        base_url="http://testserver",
        cookies={"csrftoken": CSRF},
        headers={"X-CSRFToken": CSRF},
    )


async def test_a_chat_turn_answers_through_the_handler(chat_handler: RequestThreadsHandler) -> None:
    async with chat_client(chat_handler) as client:
        first = await client.post("/chat/", json={"text": "hello"})
        assert first.status_code == 200, first.text
        events = first.json()["events"]
        assert events[-1]["type"] == "done"
        # The session cookie keeps the anonymous identity: the next turn may continue.
        conversation = events[-1]["conversation_id"]
        again = await client.post("/chat/", json={"text": "more", "conversation_id": conversation})
        assert again.json()["events"][-1]["conversation_id"] == conversation


async def test_a_refused_csrf_token_never_reaches_the_view(
    chat_handler: RequestThreadsHandler,
) -> None:
    async with chat_client(chat_handler) as client:
        response = await client.post("/chat/", json={"text": "hi"}, headers={"X-CSRFToken": "x"})
    assert response.status_code == 403
    assert not await Turn.objects.aexists()


async def test_an_sse_turn_streams_through_the_handler(chat_handler: RequestThreadsHandler) -> None:
    async with chat_client(chat_handler) as client:
        response = await client.post(
            "/chat/stream/",
            json={"text": "query PartManager"},
            headers={"Accept": "text/event-stream"},
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]
    assert [frame["type"] for frame in frames][-3:] == ["tool_result", "text_chunk", "done"]


async def test_a_client_gone_mid_turn_aborts_the_turn(
    chat_handler: RequestThreadsHandler, settings: Any
) -> None:
    configure(settings, provider_config={"delay_seconds": 5})
    body = json.dumps({"text": "hello"}).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/chat/", "raw_path": b"/chat/", "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
        "headers": [
            (b"host", b"testserver"), (b"content-type", b"application/json"),
            (b"cookie", f"csrftoken={CSRF}".encode()), (b"x-csrftoken", CSRF.encode()),
        ],
    }  # fmt: skip
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_message(**kwargs: Any) -> None:  # runs on the request thread
        loop.call_soon_threadsafe(started.set)

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await started.wait()  # the client leaves once its turn has begun
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    chat_message_received.connect(on_message, weak=False)
    try:
        await asyncio.wait_for(chat_handler(scope, receive, send), timeout=4)
    finally:
        chat_message_received.disconnect(on_message)
    turn = await sync_to_async(Turn.objects.get)()
    assert turn.status == "aborted"


async def test_a_request_the_server_cancels_ends_its_tasks_and_finishes_once(
    request_signals: list[tuple[str, int]],
) -> None:
    # The sync chain's own handling (the async chain is Django's, which leaves the view's
    # task running when the server cancels the request).
    with override_settings(ROOT_URLCONF="tests.django.request_threads_urls"):
        handler = get_asgi_application(middleware="sync")
        try:
            await _cancel_while_hanging(handler, request_signals)
        finally:
            handler.close()


async def _cancel_while_hanging(
    handler: RequestThreadsHandler, request_signals: list[tuple[str, int]]
) -> None:
    started = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_started(**kwargs: Any) -> None:  # on the request thread
        loop.call_soon_threadsafe(started.set)

    async def send(message: dict[str, Any]) -> None:
        raise AssertionError(f"a cancelled request sends nothing: {message}")

    before = asyncio.all_tasks()
    request_started.connect(on_started, weak=False)
    try:
        serving = asyncio.create_task(handler(http_scope("/hang/"), request_body(), send))
        await asyncio.wait_for(started.wait(), timeout=5)
        await asyncio.sleep(0.05)  # the view is waiting now
        serving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await serving
    finally:
        request_started.disconnect(on_started)
    assert [name for name, _ in request_signals] == ["started", "finished"]
    assert handler.idle_threads == 1
    assert asyncio.all_tasks() - before == {asyncio.current_task()} - before


@pytest.fixture
def db_threads() -> Iterator[list[int]]:
    """The thread of every database statement run while the fixture is active."""
    threads: list[int] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        threads.append(threading.get_ident())
        return execute(sql, params, many, context)

    def install(sender: Any, connection: Any, **kwargs: Any) -> None:
        connection.execute_wrappers.append(record)

    connection_created.connect(install, weak=False)
    yield threads
    connection_created.disconnect(install)


@pytest.fixture
def provider_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of every completion the test project's provider starts."""
    threads: list[int] = []
    complete = RulesProvider.complete

    def recording(self: RulesProvider, *args: Any) -> Any:
        threads.append(threading.get_ident())
        return complete(self, *args)

    monkeypatch.setattr(RulesProvider, "complete", recording)
    return threads


async def chat_once(middleware: MiddlewareMode, text: str) -> list[dict[str, Any]]:
    """The events of one `POST chat/` through a new handler of that chain mode."""
    made = RequestThreadsHandler(middleware=middleware)
    try:
        async with chat_client(made) as client:
            response = await client.post("/chat/", json={"text": text})
    finally:
        made.close()
    return list(response.json()["events"])


async def test_a_chat_turn_runs_on_its_request_thread_with_the_sync_chain(
    chat_project: Any,
    request_signals: list[tuple[str, int]],
    db_threads: list[int],
    provider_threads: list[int],
) -> None:
    # One trip to the request thread: the provider round and the tool's query run there too.
    events = await chat_once("sync", "query PartManager")
    assert [event["type"] for event in events][-3:] == ["tool_result", "text_chunk", "done"]
    request_thread = request_signals[0][1]
    assert request_thread != threading.get_ident()
    assert provider_threads == [request_thread, request_thread]  # the query round, the answer
    assert db_threads and set(db_threads) == {request_thread}


async def test_with_the_async_chain_the_turn_runs_on_the_servers_loop(
    chat_project: Any, provider_threads: list[int]
) -> None:
    assert (await chat_once("async", "hello"))[-1]["type"] == "done"
    assert provider_threads == [threading.get_ident()]


async def test_a_staff_approval_asked_on_the_request_loop_reaches_open_consoles(
    chat_project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The console's announcement goes through the in-memory channel layer, whose waiting
    # receivers belong to the server's loop: it is sent from there, not the request's loop.
    live = importlib.import_module("chatomon.console.live")
    announce = live.announce_approvals_changed
    announced_on: list[asyncio.AbstractEventLoop] = []

    async def noting_the_loop() -> None:
        announced_on.append(asyncio.get_running_loop())
        await announce()

    monkeypatch.setattr(live, "announce_approvals_changed", noting_the_loop)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(APPROVALS_GROUP, channel)
    receiving = asyncio.create_task(layer.receive(channel))
    part = await make_part()
    made = RequestThreadsHandler(middleware="sync")
    try:
        async with chat_client(made) as client:
            assert (await client.post("/test/login/", json={"username": "alice"})).is_success
            token = (await client.get("/test/csrf/")).json()["token"]  # login rotated it
            text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "5.00"}}'
            response = await client.post(
                "/chat/", json={"text": text}, headers={"X-CSRFToken": token}
            )
    finally:
        made.close()
    last = response.json()["events"][-1]
    assert (last["type"], last["approver"]) == ("confirm_mutation", "staff")
    assert announced_on == [asyncio.get_running_loop()]
    assert (await asyncio.wait_for(receiving, timeout=2))["type"] == "approvals.changed"


class ThreadNoting(Orbital):
    """A blocking input check (run in a worker thread) noting the thread it ran on."""

    side = "input"
    run_in_thread = True

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def check(self, ctx: OrbitalContext) -> Verdict:
        self.threads.append(threading.current_thread())
        time.sleep(0.1)  # long enough for the other request to need a thread of its own
        return Verdict.allow()


async def test_blocking_checks_of_turns_share_one_pool_which_close_stops(
    chat_project: Any, settings: Any, request_signals: list[tuple[str, int]]
) -> None:
    noting = ThreadNoting()
    configure(settings, atom={"input": [noting]})
    made = RequestThreadsHandler(middleware="sync")
    try:
        async with chat_client(made) as client:
            answers = await asyncio.gather(
                client.post("/chat/", json={"text": "one"}),
                client.post("/chat/", json={"text": "two"}),
            )
        assert [a.json()["events"][-1]["type"] for a in answers] == ["done", "done"]
        # Two request threads, each with its own request loop; one pool for their checks.
        assert len({thread for _, thread in request_signals}) == 2
        assert len(noting.threads) == 2
        assert all(t.name.startswith("django-request-blocking") for t in noting.threads)
    finally:
        made.close()
    assert not any(thread.is_alive() for thread in noting.threads)
