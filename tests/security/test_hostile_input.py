"""Hostile request bodies and WebSocket frames: a stable error code or a normal turn, always.

Hypothesis generates what a client can send that the endpoint does not expect: bytes that
are not UTF-8, JSON of every shape, JSON nested thousands deep, message and confirmation
objects whose fields hold NUL characters, unpaired surrogates (as JSON escapes, and as
raw CESU-8 bytes), numbers, lists and objects, multipart and form bodies, truncated JSON,
under every content type. Each answer must be a 4xx with one stable error event in the
endpoint's own format, or a normal turn; never a 500, never a `chat_error`, and a socket
never closes (with or without a close code) because of a frame.

The runs are seeded (`derandomize`: the same cases on every run, on every machine) and
large: `CASES` (10,000; `CHATOMON_HOSTILE_CASES` overrides it) per surface in process,
through the test project's ASGI application (Django's ASGIHandler, the Channels router)
with `EchoProvider`, so that ten thousand cases fit CI's time. `SERVER_CASES` more (300;
`CHATOMON_HOSTILE_SERVER_CASES`) go to a real uvicorn server over real sockets. Each case
goes to all four surfaces. Regression tests pin each bug this suite found, against a real
server on PostgreSQL when DATABASE_URL is set (SQLite otherwise), and check that no turn
is left `running`.
A failure prints the falsifying case (shrunk); the same run finds it again anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

import httpx
import pytest
from channels.testing.websocket import WebsocketCommunicator
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from chatomon.chat.pipeline.wire import TERMINAL_TYPES
from chatomon.chat.store import MemoryStore
from chatomon.chat.store.records import Owner
from chatomon.django.transports.requests import MAX_BODY_BYTES, MAX_JSON_DEPTH
from tests.asgi_app import project
from tests.asgi_app.fixtures import (  # noqa: F401 - fixtures, used by name
    chat_project,
    close_worker_connections,
    sse_events,
)
from tests.asgi_app.servers import (
    AsgiServer,
    Visitor,
    migrate,
    postgres_database,
    receive_until_terminal,
    server_environment,
)
from tests.chat.services import USER, collect, service
from tests.ledger import Ledger
from tests.security.providers import EchoProvider

CASES = int(os.environ.get("CHATOMON_HOSTILE_CASES", "10000"))
"""Generated cases per surface in process."""
SERVER_CASES = int(os.environ.get("CHATOMON_HOSTILE_SERVER_CASES", "300"))
"""Generated cases per surface against the uvicorn server."""
PROVIDER = "tests.security.providers.EchoProvider"
HTTP_PATHS = ("/chat/", "/chat/stream/", "/chat/confirm/")
REFUSALS = frozenset(
    {"bad_message", "bad_event", "message_too_long", "request_too_large", "rate_limited"}
)
"""The codes a refused body or frame may carry."""
TURN_ENDINGS = frozenset(
    {"conversation_not_found", "confirmation_unavailable", "bad_event", "turn_in_progress"}
)
"""The error codes a well-formed request may end with (never `chat_error`)."""


def seeded(cases: int) -> settings:
    """Hypothesis settings for `cases` seeded cases: the same ones on every run."""
    return settings(
        max_examples=cases,
        derandomize=True,  # a failure is reproducible: no random seed, no example database
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )


# --- What a client can send ------------------------------------------------------------

HOSTILE_CHARACTERS = ("\x00", "\ud800", "\udfff", "\ud83d", "\ufeff", "\u202e", "\x1b", "\uffff")

hostile_text = st.lists(
    st.one_of(
        st.text(max_size=8),
        st.sampled_from(HOSTILE_CHARACTERS),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
        st.sampled_from(["hello", "  ", "", "\n", "{{ x }}", "<script>"]),
    ),
    max_size=4,
).map("".join)
"""Strings with NULs, unpaired surrogates and other odd characters mixed into them."""

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)
shallow_values = st.one_of(
    json_scalars,
    st.lists(json_scalars, max_size=2),
    st.dictionaries(hostile_text, json_scalars, max_size=2),
)
"""JSON values one level deep: what a field may hold instead of what it should."""
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(hostile_text, inner, max_size=3)
    ),
    max_leaves=8,
)
"""Any JSON value (as a whole body)."""


def field_value(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's value: a good one, a hostile string, or another JSON value."""
    return st.one_of(good, hostile_text, shallow_values)


MESSAGE_TEXT = field_value(st.sampled_from(["hello", "what parts are there?"]))
IDS = field_value(st.one_of(st.uuids().map(str), st.just(""), st.just("call-1")))
FLAGS = field_value(st.booleans())
TYPES = field_value(st.sampled_from(["message", "confirm"]))
OPTIONAL = st.booleans()


@st.composite
def message_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Objects shaped like a chat message, with hostile values in their fields."""
    payload: dict[str, Any] = {"text": draw(MESSAGE_TEXT)}
    if draw(OPTIONAL):
        payload["conversation_id"] = draw(IDS)
    if draw(OPTIONAL):
        payload["new_conversation"] = draw(FLAGS)
    if draw(OPTIONAL):
        payload["type"] = draw(TYPES)
    if draw(OPTIONAL):
        payload[draw(hostile_text)] = draw(json_scalars)  # unknown fields are ignored
    return payload


@st.composite
def confirm_objects(draw: st.DrawFn) -> dict[str, Any]:
    """Objects shaped like a confirmation, with hostile values in their fields."""
    payload: dict[str, Any] = {"confirmation_id": draw(IDS), "confirmed": draw(FLAGS)}
    if draw(OPTIONAL):
        payload["conversation_id"] = draw(IDS)
    if draw(OPTIONAL):
        payload["type"] = draw(TYPES)
    return payload


def encoded(value: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """A JSON value as bytes: ASCII escapes, or raw UTF-8 with surrogates as CESU-8 bytes."""
    return st.tuples(value, st.booleans()).map(
        lambda pair: json.dumps(pair[0], ensure_ascii=pair[1]).encode("utf-8", "surrogatepass")
    )


@st.composite
def nested(draw: st.DrawFn) -> bytes:
    """JSON nested around the limit or far beyond it, closed or not, in a message or not."""
    depth = draw(st.one_of(st.integers(1, MAX_JSON_DEPTH + 2), st.integers(100, 5_000)))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ('[{"b":', "}]")]))
    closed = draw(st.booleans())
    inner = opener * depth + "1" + (closer * depth if closed else "")
    if draw(st.booleans()):
        inner = f'{{"text": "hi", "type": "message", "x": {inner}}}'
    return inner.encode()


@st.composite
def multipart(draw: st.DrawFn) -> tuple[bytes, str]:
    """A multipart/form-data body (well-formed or not) and its content type."""
    boundary = draw(st.sampled_from(["xyz", "----b0undary", "a" * 70]))
    names = draw(st.lists(st.sampled_from(["text", "confirmation_id", "file", "x"]), max_size=3))
    parts = []
    for name in names:
        filename = '; filename="a.json"' if draw(st.booleans()) else ""
        value = draw(st.binary(max_size=40))
        disposition = f'form-data; name="{name}"{filename}'
        head = f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n"
        parts.append(head.encode() + value + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    if draw(st.booleans()):
        body = draw(st.binary(max_size=80))  # announced as multipart, but not
    kind = draw(st.sampled_from(["; boundary=" + boundary, "", "; boundary="]))
    return body, "multipart/form-data" + kind


CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "application/json; charset=utf-16",
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/octet-stream",
        "text/html",
        "",
        "application/json; boundary=x",
        "multipart/mixed; boundary=x",
    ]
)


ACCEPTS = st.sampled_from(["", "application/json", "text/event-stream"])
FRAME_KINDS = st.sampled_from(["text", "bytes", "raw text"])


@dataclass(frozen=True)
class Case:
    """One generated input: a request body as HTTP sends it, and its bytes as a frame."""

    data: bytes
    content_type: str
    accept: str
    frame_kind: str

    def headers(self, token: str) -> dict[str, str]:
        """The request's headers, with a valid CSRF token (the body is what is tried)."""
        headers = {"X-CSRFToken": token}
        if self.content_type:
            headers["Content-Type"] = self.content_type
        if self.accept:
            headers["Accept"] = self.accept
        return headers

    def frame(self, *, raw_surrogates: bool) -> str | bytes:
        """The bytes as a frame: binary, or text (with raw surrogates where a sender can)."""
        if self.frame_kind == "bytes":
            return self.data
        if self.frame_kind == "raw text" and raw_surrogates:
            try:  # a str with lone surrogates: only an in-process sender can make one
                return self.data.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                pass
        return self.data.decode("utf-8", "replace")  # what a real client's text frame holds


raw_bodies = st.one_of(
    st.binary(max_size=200),
    encoded(json_values),
    encoded(message_objects()),
    encoded(confirm_objects()),
    nested(),
    encoded(message_objects()).map(lambda data: data[: len(data) // 2]),  # truncated
    st.sampled_from([b"", b"{}", b"null", b"\xef\xbb\xbf{}", b'{"text": "hi"}' * 2]),
)
"""The common bodies (not multipart, whose content type goes with it; not the largest)."""
large_bodies = st.integers(MAX_BODY_BYTES - 20, MAX_BODY_BYTES + 20).map(
    lambda size: (b'{"type": "message", "text": "' + b"x" * size + b'"}')[:size]
)
"""Bodies about the size limit: a few are enough, and each costs a mebibyte per surface."""


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """One generated input, with its content type, Accept header and frame kind."""
    accept, frame_kind = draw(ACCEPTS), draw(FRAME_KINDS)
    kind = draw(st.integers(0, 199))
    if kind < 20:  # one in ten
        data, content_type = draw(multipart())
        return Case(data, content_type, accept, frame_kind)
    data = draw(large_bodies if kind == 20 else raw_bodies)  # one in two hundred
    return Case(data, draw(CONTENT_TYPES), accept, frame_kind)


# --- What must come back ---------------------------------------------------------------


def http_events(path: str, status: int, content_type: str, body: bytes) -> list[dict[str, Any]]:
    """The events of an answer, after checking its status and its format."""
    assert status < 500, f"{path} answered {status}: {body[:300]!r}"
    if content_type.startswith("text/event-stream"):
        events = sse_events(body)
    else:
        assert content_type == "application/json", f"{path} answered {content_type}: {body[:300]!r}"
        events = json.loads(body)["events"]
    assert events, f"{path} answered {status} with no event"
    return events


def http_outcome(path: str, status: int, content_type: str, body: bytes) -> str:
    """`refused` (a 4xx with one refusal event) or `answered` (200, ended normally)."""
    events = http_events(path, status, content_type, body)
    if status != 200:
        assert status in (400, 413, 429), (path, status, events)
        assert [e["type"] for e in events] == ["error"], (path, events)
        assert events[0]["code"] in REFUSALS, (path, events)
        return "refused"
    check_ending(events)
    return "answered"


def frame_outcome(events: list[dict[str, Any]]) -> str:
    """`refused` (one refusal event) or `answered` (the service ran and ended normally)."""
    check_ending(events)
    refused = len(events) == 1 and events[0].get("code") in REFUSALS
    return "refused" if refused else "answered"


def check_ending(events: list[dict[str, Any]]) -> None:
    """The events end with a terminal one, and an error is never `chat_error`."""
    last = events[-1]
    assert last["type"] in TERMINAL_TYPES, events
    if last["type"] == "error":
        assert last["code"] in REFUSALS | TURN_ENDINGS, events


class Frames:
    """A WebSocket that answers frame by frame (in process, or on a real server)."""

    raw_surrogates = False

    async def send(self, frame: str | bytes) -> list[dict[str, Any]]:
        """Send one frame; the events it answered with, up to the terminal one."""
        raise NotImplementedError


class CommunicatorFrames(Frames):
    """Frames to the in-process Channels application, through its communicator."""

    raw_surrogates = True

    def __init__(self, socket: WebsocketCommunicator) -> None:
        self.socket = socket

    async def send(self, frame: str | bytes) -> list[dict[str, Any]]:
        # send_input: send_to refuses an empty frame, which a client can send.
        kind = "bytes" if isinstance(frame, bytes) else "text"
        await self.socket.send_input({"type": "websocket.receive", kind: frame})
        events: list[dict[str, Any]] = []
        while not events or events[-1]["type"] not in TERMINAL_TYPES:
            output = await self.socket.receive_output(10)
            assert output["type"] == "websocket.send", f"the socket closed: {output}"
            events.append(json.loads(output["text"]))
        return events


class ConnectionFrames(Frames):
    """Frames over a real WebSocket connection to a server."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket

    async def send(self, frame: str | bytes) -> list[dict[str, Any]]:
        await self.socket.send(frame)
        try:
            return await receive_until_terminal(self.socket)
        except ConnectionClosed as closed:
            raise AssertionError(
                f"the socket closed: {closed.rcvd} after {frame[:200]!r}"
            ) from None


@dataclass
class Surfaces:
    """The four surfaces every case goes to: the three chat endpoints and a WebSocket."""

    client: httpx.AsyncClient
    token: str
    frames: Frames
    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)

    async def try_case(self, case: Case) -> None:
        """Send `case` everywhere; check every answer."""
        for path in HTTP_PATHS:
            # A fresh anonymous session per request: no conversation grows over a run.
            self.client.cookies.delete("sessionid")
            response = await self.client.post(
                path, content=case.data, headers=case.headers(self.token)
            )
            content_type = response.headers.get("content-type", "")
            outcome = http_outcome(path, response.status_code, content_type, response.content)
            self.outcomes[path, outcome] += 1
        events = await self.frames.send(case.frame(raw_surrogates=self.frames.raw_surrogates))
        self.outcomes["websocket", frame_outcome(events)] += 1

    def record(self, ledger: Ledger, where: str) -> None:
        """Cases per surface into the ledger (a case that broke the contract failed the test)."""
        for surface in (*HTTP_PATHS, "websocket"):
            tried = self.outcomes[surface, "refused"] + self.outcomes[surface, "answered"]
            name = f"HTTP {surface} bodies" if surface != "websocket" else "WebSocket frames"
            ledger.cases(f"{name} ({where})", tried=tried)


def run_generated(loop: asyncio.Runner, surfaces: Surfaces, count: int) -> float:
    """`count` seeded cases through `surfaces`; the seconds it took."""
    started = time.monotonic()

    @seeded(count)
    @given(case=cases())
    def each(case: Case) -> None:
        loop.run(surfaces.try_case(case))

    each()
    return time.monotonic() - started


def assert_every_surface_tried(surfaces: Surfaces, count: int) -> None:
    """Every surface saw `count` cases: some refused, some answered by the service."""
    for surface in (*HTTP_PATHS, "websocket"):
        refused = surfaces.outcomes[surface, "refused"]
        answered = surfaces.outcomes[surface, "answered"]
        assert refused + answered >= count, (surface, refused, answered)
        assert refused and answered, (surface, refused, answered)


# --- In process: the test project's ASGI application -----------------------------------


@contextlib.contextmanager
def refusals_unlogged() -> Iterator[None]:
    """Django's warning for each 4xx off while thousands are expected (errors still log)."""
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


async def _csrf_token(client: httpx.AsyncClient) -> str:
    token: str = (await client.get("/test/csrf/")).json()["token"]
    return token


async def _running_turns() -> int:
    from chatomon.django.models import Turn  # noqa: PLC0415 - needs the settings

    return await Turn.objects.filter(status="running").acount()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("chat_project", "close_worker_connections")
def test_generated_bodies_and_frames_get_a_stable_code_in_process(settings, ledger):
    settings.CHATOMON = project.chatomon(
        provider=PROVIDER, rate_limit={"requests": None, "window_seconds": 3600}
    )
    from tests.asgi_app.asgi import application  # noqa: PLC0415 - after the settings

    with asyncio.Runner() as loop:
        transport = httpx.ASGITransport(app=application)
        client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
        socket = WebsocketCommunicator(
            application, "/chat/", headers=[(b"origin", b"http://testserver")]
        )
        assert loop.run(socket.connect())[0]
        surfaces = Surfaces(client, loop.run(_csrf_token(client)), CommunicatorFrames(socket))
        try:
            with refusals_unlogged():
                seconds = run_generated(loop, surfaces, CASES)
            # The socket outlived every frame: it still chats.
            still = loop.run(surfaces.frames.send(json.dumps({"type": "message", "text": "hi"})))
            assert still[-1]["type"] == "done"
        finally:
            surfaces.record(ledger, "in process")
            loop.run(socket.disconnect())
            loop.run(client.aclose())
        left = loop.run(_running_turns())
    print(f"\n{CASES} cases x 4 surfaces in process: {seconds:.1f} s; {dict(surfaces.outcomes)}")
    assert_every_surface_tried(surfaces, CASES)
    ledger.running("hostile input (in process)", count=left)
    assert left == 0


# --- On a real server: uvicorn, PostgreSQL (or SQLite), real sockets -------------------


@dataclass
class Served:
    """The uvicorn server of this module and its database."""

    server: AsgiServer
    database_url: str

    def running_turns(self) -> int:
        """How many turns of the server's database are `running`."""
        return self._count("SELECT count(*) FROM chatomon_turn WHERE status = 'running'")

    def turns(self) -> int:
        """How many turns the server's database holds."""
        return self._count("SELECT count(*) FROM chatomon_turn")

    def _count(self, query: str) -> int:
        if self.database_url.startswith("sqlite:"):
            with sqlite3.connect(urlsplit(self.database_url).path) as connection:
                count: int = connection.execute(query).fetchone()[0]
                return count
        import psycopg  # noqa: PLC0415 - only with PostgreSQL

        with psycopg.connect(self.database_url) as connection:
            row = connection.execute(query).fetchone()
            assert row is not None
            return int(row[0])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One uvicorn server on PostgreSQL when DATABASE_URL is set (a new database), else SQLite."""
    with contextlib.ExitStack() as stack:
        if os.environ.get("DATABASE_URL"):
            url = stack.enter_context(postgres_database("hostile"))
        else:
            url = f"sqlite:///{tmp_path_factory.mktemp('hostile') / 'chat.sqlite3'}"
        env = server_environment(DATABASE_URL=url, CHATOMON_TEST_PREFIX=uuid4().hex)
        migrate(env)
        server = AsgiServer(env).start()
        stack.callback(server.stop)
        yield Served(server, url)


async def _connected(connecting: Any) -> ClientConnection:
    connection: ClientConnection = await connecting
    return connection


def test_generated_bodies_and_frames_get_a_stable_code_on_a_server(served, ledger):
    visitor = Visitor()
    with asyncio.Runner() as loop:
        headers = loop.run(visitor.csrf_headers(served.server))
        client = visitor.client(served.server)
        socket = loop.run(_connected(visitor.socket(served.server)))
        surfaces = Surfaces(client, headers["X-CSRFToken"], ConnectionFrames(socket))
        try:
            seconds = run_generated(loop, surfaces, SERVER_CASES)
        finally:
            surfaces.record(ledger, "uvicorn")
            loop.run(socket.close())
            loop.run(client.aclose())
    print(f"\n{SERVER_CASES} cases x 4 surfaces on uvicorn: {seconds:.1f} s")
    assert_every_surface_tried(surfaces, SERVER_CASES)
    left = served.running_turns()
    ledger.running("hostile input (uvicorn)", count=left)
    assert left == 0


# --- Regressions: each bug found, on the real server ------------------------------------

DEEP = b'{"text": "hi", "x": ' + b"[" * 1000 + b"]" * 1000 + b"}"
"""JSON nested 1,000 deep in 2 KB: Python's parser raised RecursionError on it (a 500)."""
ENDPOINT_CODES = [
    ("/chat/", "bad_message"),
    ("/chat/stream/", "bad_message"),
    ("/chat/confirm/", "bad_event"),
]
MULTIPART = (
    b'--xyz\r\nContent-Disposition: form-data; name="text"\r\n\r\nhello\r\n--xyz--\r\n',
    "multipart/form-data; boundary=xyz",
)


async def post_raw(
    served: Served, path: str, data: bytes, content_type: str
) -> tuple[int, list[dict[str, Any]]]:
    """POST `data` as `content_type` with a CSRF token; the status and the answer's events."""
    visitor = Visitor()
    headers = {**await visitor.csrf_headers(served.server), "Content-Type": content_type}
    async with visitor.client(served.server) as client:
        response = await client.post(path, content=data, headers=headers)
    content_type = response.headers.get("content-type", "")
    return response.status_code, http_events(
        path, response.status_code, content_type, response.content
    )


def assert_refused(
    status: int, events: list[dict[str, Any]], code: str, field_name: str | None = None
) -> None:
    """One error event with `code` (naming `field_name`), HTTP 400."""
    assert status == 400, events
    assert [(e["type"], e["code"]) for e in events] == [("error", code)]
    if field_name is not None:
        assert events[0]["field"] == field_name
        assert "cannot be stored" in events[0]["message"]


def assert_nothing_ran(served: Served, turns_before: int, ledger: Ledger, where: str) -> None:
    """No turn opened, none left running."""
    assert served.turns() == turns_before
    left = served.running_turns()
    ledger.running(where, count=left)
    assert left == 0


@pytest.mark.parametrize(("path", "code"), ENDPOINT_CODES)
async def test_json_nested_a_thousand_deep_gets_the_endpoints_code(served, path, code, ledger):
    assert len(DEEP) < 2100
    before = served.turns()
    status, events = await post_raw(served, path, DEEP, "application/json")
    assert_refused(status, events, code)
    assert events[0]["max_depth"] == MAX_JSON_DEPTH
    assert_nothing_ran(served, before, ledger, f"deep JSON on {path} (uvicorn)")


async def test_a_deeply_nested_frame_is_refused_and_the_socket_stays_open(served):
    async with Visitor().socket(served.server) as socket:
        for frame in (DEEP.decode().replace('"text"', '"type": "message", "text"'), DEEP):
            await socket.send(frame)
            events = await receive_until_terminal(socket)
            assert [(e["type"], e["code"]) for e in events] == [("error", "bad_event")]
        await socket.send(json.dumps({"type": "message", "text": "still here"}))
        assert (await receive_until_terminal(socket))[-1]["type"] == "done"


@pytest.mark.parametrize(("path", "code"), ENDPOINT_CODES)
@pytest.mark.parametrize(
    "body",
    [
        MULTIPART,
        (b"not multipart", "multipart/form-data; boundary=xyz"),
        (b"x", "multipart/form-data"),
    ],
    ids=["well-formed", "malformed", "no-boundary"],
)
async def test_a_multipart_body_gets_the_endpoints_code(served, path, code, body):
    status, events = await post_raw(served, path, body[0], body[1])
    assert_refused(status, events, code)


async def test_form_bodies_django_cannot_parse_get_the_endpoints_code(served):
    fields = b"&".join(b"f%d=1" % number for number in range(1001))  # over Django's 1,000
    status, events = await post_raw(served, "/chat/", fields, "application/x-www-form-urlencoded")
    assert_refused(status, events, "bad_message")


UNSTORABLE = [("\\ud800", "an unpaired surrogate"), ("\\u0000", "a NUL character")]


@pytest.mark.parametrize(("escape", "kind"), UNSTORABLE)
@pytest.mark.parametrize("path", ["/chat/", "/chat/stream/"])
async def test_text_no_store_can_keep_is_a_bad_message_over_http(
    served, path, escape, kind, ledger
):
    before = served.turns()
    body = f'{{"text": "hello {escape} there"}}'.encode()
    status, events = await post_raw(served, path, body, "application/json")
    assert_refused(status, events, "bad_message", "text")
    assert kind in events[0]["message"]
    assert_nothing_ran(served, before, ledger, f"unstorable text on {path} (uvicorn)")


@pytest.mark.parametrize(("escape", "kind"), UNSTORABLE)
async def test_text_no_store_can_keep_is_a_bad_message_over_a_websocket(
    served, escape, kind, ledger
):
    before = served.turns()
    async with Visitor().socket(served.server) as socket:
        await socket.send(f'{{"type": "message", "text": "hello {escape}"}}')
        events = await receive_until_terminal(socket)
        assert [(e["type"], e["code"], e["field"]) for e in events] == [
            ("error", "bad_message", "text")
        ]
        await socket.send(json.dumps({"type": "message", "text": "still here"}))
        assert (await receive_until_terminal(socket))[-1]["type"] == "done"
    assert served.turns() == before + 1  # only the second message ran
    left = served.running_turns()
    ledger.running("unstorable text over a WebSocket (uvicorn)", count=left)
    assert left == 0


@pytest.mark.parametrize(("escape", "kind"), UNSTORABLE)
async def test_ids_no_store_can_keep_are_refused_naming_the_field(served, escape, kind):
    message = f'{{"text": "hi", "conversation_id": "{escape}"}}'.encode()
    status, events = await post_raw(served, "/chat/", message, "application/json")
    assert_refused(status, events, "bad_message", "conversation_id")
    confirm = f'{{"confirmation_id": "a{escape}", "confirmed": true}}'.encode()
    status, events = await post_raw(served, "/chat/confirm/", confirm, "application/json")
    assert_refused(status, events, "bad_event", "confirmation_id")
    async with Visitor().socket(served.server) as socket:
        await socket.send(
            f'{{"type": "confirm", "confirmation_id": "{escape}", "confirmed": true}}'
        )
        events = await receive_until_terminal(socket)
        assert [(e["code"], e["field"]) for e in events] == [("bad_event", "confirmation_id")]


# --- The SDK: ChatService called directly -------------------------------------------------


@pytest.mark.parametrize("text", ["hello \ud800", "hello \x00 there"])
async def test_chat_service_refuses_text_no_store_can_keep_and_stores_nothing(text):
    store = MemoryStore()
    with pytest.raises(ValueError, match="cannot be stored"):
        await collect(service(store, EchoProvider()).run_turn(USER, text))
    assert await store.list_turns(limit=10) == []
    assert await store.list_conversations(Owner.user(USER.id)) == []
