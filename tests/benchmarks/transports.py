"""The chat transports under load, and the server's own time per request.

Run: `python tests/benchmarks/transports.py`.

1. Load: one uvicorn process serving the test project (tests/asgi_app), the rules provider
   answering after 200 ms. 500 concurrent WebSocket conversations (one message each, until
   `done`), then 200 concurrent SSE streams. Reported: p50/p99 turn latency, errors (any
   fails the run, after the results are written), the server's peak resident memory (VmHWM).
2. Single client, in process: `POST /chat/` driven straight into the ASGI application (no
   socket: the server's own time) with an instant provider — a plain answer and a read with
   one query round — beside the same turns run directly through ChatService, so the
   transport's share is visible, and an empty view behind the same middleware (the floor
   any request pays before chat runs). Targets: plain ≤ 2 ms median, read ≤ 5 ms median.
   Each series runs on one event loop, as under an ASGI server, with Django's
   `ASGIHandler` and with `chatomon.django.asgi.RequestThreadsHandler`, whose middleware
   chain runs as Django runs it ("async") or on the request thread in one trip ("auto",
   the test project's). Django's handler runs every request in its own
   `ThreadSensitiveContext`, so its sync work gets a new worker thread (started and joined
   per request) and a new database connection whatever CONN_MAX_AGE says; the
   request-threads handler keeps both. In Django's async chain each method of a sync-only
   middleware (sessions, CSRF, auth) is a thread hop, and so are `request_started`,
   closing the response and every ORM call of the turn; with the sync chain the whole
   request, its turn included (`chatomon.django.request_loop`), is one trip to the request
   thread. The test project's own settings apply, its `permission` check included. Each
   handler is measured in a process of its own, as a deployment serves with one.

Single client: the embedded defaults (SQLite in a file, the local-memory cache), and the
scale-out stack too when DATABASE_URL is set (PostgreSQL; the Redis cache, which the rate
limit then goes through, when REDIS_URL is set). Load: SQLite, or PostgreSQL when
DATABASE_URL is set. Writes results/transports.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.reporting import percentile, print_table, run_child, write_results

WEBSOCKETS = 500
STREAMS = 200
REQUESTS = 300
WARMUP = 30


async def one_socket(server: Any, index: int) -> float:
    from websockets.asyncio.client import connect  # noqa: PLC0415

    async with connect(server.ws_url + "/chat/", origin=server.url, open_timeout=60) as socket:
        started = time.perf_counter()
        await socket.send(json.dumps({"type": "message", "text": f"hello {index}"}))
        while True:
            event = json.loads(await socket.recv())
            if event["type"] in ("done", "error"):
                if event["type"] == "error":
                    raise RuntimeError(event["code"])
                return (time.perf_counter() - started) * 1000


async def one_stream(server: Any, client: Any, token: str, index: int) -> float:
    started = time.perf_counter()
    headers = {"X-CSRFToken": token, "Accept": "text/event-stream"}
    async with client.stream(
        "POST", "/chat/stream/", json={"text": f"hello {index}"}, headers=headers
    ) as response:
        body = b"".join([chunk async for chunk in response.aiter_raw()])
    if b'"type":"done"' not in body:
        raise RuntimeError(body[-200:].decode())
    return (time.perf_counter() - started) * 1000


async def gather_all(jobs: list[Any]) -> tuple[list[float], int]:
    results = await asyncio.gather(*jobs, return_exceptions=True)
    latencies = [r for r in results if isinstance(r, float)]
    return latencies, len(results) - len(latencies)


def peak_memory_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


async def load(database_url: str) -> list[dict[str, Any]]:
    import httpx  # noqa: PLC0415

    from tests.asgi_app.servers import AsgiServer, migrate, server_environment  # noqa: PLC0415

    env = server_environment(
        DATABASE_URL=database_url,
        CHATOMON_TEST_PROVIDER_DELAY="0.2",
    )
    migrate(env)
    server = AsgiServer(env).start()
    rows = []
    try:
        assert server.process is not None
        started = time.perf_counter()
        latencies, errors = await gather_all([one_socket(server, i) for i in range(WEBSOCKETS)])
        rows.append(_row("WebSocket", WEBSOCKETS, latencies, errors, started, server))
        limits = httpx.Limits(max_connections=STREAMS + 10)
        async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as client:
            token = (await client.get("/test/csrf/")).json()["token"]
            started = time.perf_counter()
            jobs = [one_stream(server, client, token, i) for i in range(STREAMS)]
            latencies, errors = await gather_all(jobs)
        rows.append(_row("SSE", STREAMS, latencies, errors, started, server))
    finally:
        server.stop()
    return rows


def _row(
    kind: str, count: int, latencies: list[float], errors: int, started: float, server: Any
) -> dict[str, Any]:
    return {
        "transport": kind,
        "concurrent": count,
        "p50_ms": round(percentile(latencies, 0.5), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99), 1) if latencies else None,
        "errors": errors,
        "wall_s": round(time.perf_counter() - started, 2),
        "server_peak_mb": peak_memory_mb(server.process.pid),
    }


async def asgi_post(
    application: Any, path: str, body: bytes, cookie: bytes
) -> tuple[int, bytes, float, list[tuple[bytes, bytes]]]:
    """One POST straight into the ASGI application: status, body, seconds, headers."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80),
        "headers": [
            (b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()), (b"cookie", cookie),
            (b"x-csrftoken", b"benchmarkbenchmarkbenchmarkbench"),
        ],
    }  # fmt: skip
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    started = time.perf_counter()
    await application(scope, receive, send)
    elapsed = time.perf_counter() - started
    start = next(m for m in sent if m["type"] == "http.response.start")
    return (
        start["status"],
        b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"),
        elapsed,
        list(start.get("headers", [])),
    )


HANDLERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Django ASGIHandler", {}),
    ("RequestThreadsHandler, async chain", {"middleware": "async"}),
    ("RequestThreadsHandler (auto: sync chain)", {"middleware": "auto"}),
)
"""The HTTP handlers compared: Django's own; chatomon's keeping request threads, with the
middleware run as Django runs it; and the test project's (the sync middleware in one trip)."""
SINGLE_REQUESTS = (
    ("empty view (floor)", "/test/ping/", ""),
    ("plain answer", "/chat/", "hello"),
    ("read, one query round", "/chat/", "query PartManager"),
)
"""What the single client sends: the floor is an empty view behind the same middleware."""


async def serve(application: Any, path: str, text: str) -> list[float]:
    """Milliseconds per request of WARMUP + REQUESTS posts (the warm-up ones dropped).

    One client: it keeps the session cookie its first chat request got (its anonymous chat
    identity), and starts a new conversation with every message.
    """
    body = json.dumps({"text": text}).encode()
    cookie = b"csrftoken=benchmarkbenchmarkbenchmarkbench"
    samples = []
    for number in range(WARMUP + REQUESTS):
        status, content, seconds, headers = await asgi_post(application, path, body, cookie)
        assert status == 200, content[:300]
        assert path != "/chat/" or b'"done"' in content, content[:300]
        cookie = _with_session(cookie, headers)
        if number >= WARMUP:
            samples.append(seconds * 1000)
    return samples


def _with_session(cookie: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    for name, value in headers:
        if name.lower() == b"set-cookie" and value.startswith(b"sessionid="):
            return cookie + b"; " + value.split(b";", 1)[0]
    return cookie


async def direct_turns(text: str) -> list[float]:
    """Milliseconds per turn of the same turns run straight through ChatService."""
    from chatomon.chat.store.records import Owner  # noqa: PLC0415
    from chatomon.django.service import chat_service  # noqa: PLC0415

    samples = []
    for number in range(WARMUP + REQUESTS):
        started = time.perf_counter()
        owner = Owner.session("bench")
        events = [e async for e in chat_service().run_turn(None, text, owner=owner)]
        assert events[-1]["type"] == "done", events[-1]
        if number >= WARMUP:
            samples.append((time.perf_counter() - started) * 1000)
    return samples


SERVICE = "ChatService alone"
"""The child measuring the same turns run straight through ChatService, not over HTTP."""


def single_client(database_url: str, measured: str) -> dict[str, list[float]]:
    """Milliseconds of each single-client request of one handler (`measured`, a name of
    HANDLERS), or of the same turns straight through ChatService (`SERVICE`).

    Each series runs on one event loop, as under an ASGI server. Persistent database
    connections are on (`CONN_MAX_AGE`), which only a handler keeping its threads can use.
    """
    os.environ.update(DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="tests.asgi_app.settings")
    import django  # noqa: PLC0415
    from django.core.handlers.asgi import ASGIHandler  # noqa: PLC0415
    from django.core.management import call_command  # noqa: PLC0415
    from django.db import connections  # noqa: PLC0415

    from chatomon.django.asgi import RequestThreadsHandler  # noqa: PLC0415

    django.setup()
    connections.settings["default"]["CONN_MAX_AGE"] = 60
    call_command("migrate", verbosity=0)
    from tests.benchmarks.chat import seed  # noqa: PLC0415

    seed()
    samples: dict[str, list[float]] = {}
    for label, path, text in SINGLE_REQUESTS:
        if measured == SERVICE:
            if text:
                samples[label] = asyncio.run(direct_turns(text))
            continue
        options = dict(HANDLERS)[measured]
        handler = RequestThreadsHandler(**options) if options else ASGIHandler()
        samples[label] = asyncio.run(serve(handler, path, text))
        if isinstance(handler, RequestThreadsHandler):
            handler.close()
    return samples


def single_client_rows(database: str, environment: dict[str, str]) -> list[dict[str, Any]]:
    """The single-client rows of one stack: each handler measured in a process of its own.

    A process serves with one handler, as a deployment does: measured one after the other
    in one process, the handlers that start a thread and a connection per request slowed
    the series after them down.
    """
    measured = {
        name: run_child(__file__, database, name, env=environment)
        for name in (SERVICE, *dict(HANDLERS))
    }
    rows = []
    for label, _, text in SINGLE_REQUESTS:
        service = statistics.median(measured[SERVICE][label]) if text else None
        for name, _ in HANDLERS:
            http = measured[name][label]
            median = statistics.median(http)
            rows.append({
                "request": label,
                "handler": name,
                "http_median_ms": round(median, 3),
                "http_p90_ms": round(percentile(http, 0.9), 1),
                "service_median_ms": None if service is None else round(service, 3),
                "transport_ms": None if service is None else round(median - service, 3),
            })  # fmt: skip
    return rows


def main() -> None:
    if len(sys.argv) == 3:  # child: one handler's (or ChatService's) series on one database
        print(json.dumps(single_client(sys.argv[1], sys.argv[2])))
        return
    single_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        # The embedded defaults (SQLite, local-memory cache), then the scale-out stack
        # (PostgreSQL, and the Redis cache the rate limits use when REDIS_URL is set).
        embedded = {**os.environ, "REDIS_URL": ""}
        stacks = [(f"sqlite:///{folder}/single.sqlite3", "sqlite + local memory", embedded)]
        if os.environ.get("DATABASE_URL", "").startswith("postgres"):
            cache = "redis" if os.environ.get("REDIS_URL") else "local memory"
            stacks.append((os.environ["DATABASE_URL"], f"postgresql + {cache}", dict(os.environ)))
        for database, label, environment in stacks:
            rows = single_client_rows(database, environment)
            single_rows += [{"stack": label, **row} for row in rows]
    print_table(
        f"POST /chat/ in process, instant provider (median of {REQUESTS}; targets 2 ms / 5 ms)",
        single_rows,
        [
            "stack",
            "request",
            "handler",
            "http_median_ms",
            "http_p90_ms",
            "service_median_ms",
            "transport_ms",
        ],
    )
    with tempfile.TemporaryDirectory() as folder:
        database = os.environ.get("DATABASE_URL") or f"sqlite:///{folder}/load.sqlite3"
        label = "postgresql" if database.startswith("postgres") else "sqlite"
        load_rows = [{"database": label, **row} for row in asyncio.run(load(database))]
    print_table(
        "Concurrent conversations, provider answering after 200 ms (one uvicorn process)",
        load_rows,
        [
            "database",
            "transport",
            "concurrent",
            "p50_ms",
            "p99_ms",
            "errors",
            "wall_s",
            "server_peak_mb",
        ],
    )
    payload = {"load": load_rows, "single_client": single_rows}
    print(f"written: {write_results('transports', payload)}")
    failed = sum(row["errors"] for row in load_rows)
    if failed:
        raise SystemExit(f"{failed} conversation(s) under load failed")


if __name__ == "__main__":
    main()
