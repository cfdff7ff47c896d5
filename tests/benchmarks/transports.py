"""The chat transports on Django's own `ASGIHandler`: the server's time per request, and load.

Run: `python tests/benchmarks/transports.py` (`--profile` instead: where the time of a
plain answer and of a read goes, see `tests/benchmarks/transport_profile.py`).

1. Single client, in process. `POST` requests driven straight into Django's `ASGIHandler`
   (`django.core.asgi.get_asgi_application`; no socket, so the figure is the server's own
   time), the provider answering at once; the median of 300 after 30 warm-up requests:
   - the floor: `POST /test/ping/`, an async view answering `{}` behind the test project's
     middleware (sessions, CSRF, authentication), what any request of this stack costs
     before chat does anything;
   - a plain answer (`POST /chat/` "hello") and a read with one query round
     ("query PartManager");
   - the same two turns straight through `ChatService` (no HTTP), so that the transport's
     share shows.
   Targets (issue 17): plain <= floor + 2 ms, read <= floor + 3 ms of the median server
   time; the table says pass or fail (timings are reported, never asserted). Beside it,
   the median CPU time of the process per request (all threads): on a machine busy with
   other work, wall times wait for a CPU at every thread hop, CPU times much less so.
   Then what the database alone costs (a round trip, a commit, a SQLite reconnection:
   `tests/benchmarks/database_costs.py`), which no transport can go below.
   Each series runs on one event loop, as under an ASGI server; the HTTP series and the
   ChatService series each run in a process of their own, as a deployment serves. The test
   project's own settings apply, its `permission` check and rate limit included; one
   client keeps the session cookie its first chat request got and starts a new
   conversation with every message.
2. Load: one uvicorn process serving the test project, the rules provider answering after
   200 ms: 500 concurrent WebSocket conversations (one message each, until `done`), then
   200 concurrent SSE streams. Reported: p50/p99 turn latency, errors (any fails the run,
   after the results are written), the server's peak resident memory (VmHWM), and on
   PostgreSQL the most sessions its database had at once beside the server's
   `max_connections`. Only the database varies: one process is served by the local-memory
   cache and the in-memory channel layer (with channels_redis, 500 sockets at once also
   measure its connection pool: redis-py's asyncio pool holds 100 connections by default).

Stacks: SQLite in a file (WAL, as `tests.django_settings` configures a file URL), the
local-memory cache and the in-memory channel layer, always; PostgreSQL when DATABASE_URL
is set (fresh databases beside DATABASE_URL's, dropped afterwards), on Django's connection
pool when psycopg_pool is importable (`tests/benchmarks/transports_settings.py`: the test
project's own settings do not pool), with the Redis cache (which the rate limit then goes
through) when REDIS_URL is set, for the single client. Writes results/transports.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.database_costs import REPEATS as COST_REPEATS
from tests.benchmarks.database_costs import database_costs
from tests.benchmarks.reporting import percentile, print_table, run_child, write_results

WEBSOCKETS = 500
STREAMS = 200
REQUESTS = 300
WARMUP = 30
SETTINGS = "tests.benchmarks.transports_settings"
"""The test project's settings, with Django's PostgreSQL pool when psycopg_pool is there."""
CHILD = "--series"
"""The argument that makes this script a child measuring one series (see `measure`)."""
HTTP = "Django ASGIHandler"
SERVICE = "ChatService alone"
"""The two single-client series, each measured in a child process of its own."""


@dataclass(frozen=True)
class SingleRequest:
    """One kind of request the single client sends."""

    key: str
    label: str
    path: str
    text: str
    target_over_floor_ms: float | None
    """How much slower than the floor it may be (issue 17); None for the floor itself."""

    @property
    def is_turn(self) -> bool:
        """Whether it runs a chat turn (so that ChatService alone can run it too)."""
        return self.target_over_floor_ms is not None


FLOOR = SingleRequest("floor", "empty view (floor)", "/test/ping/", "", None)
SINGLE_REQUESTS = (
    FLOOR,
    SingleRequest("plain", "plain answer", "/chat/", "hello", 2.0),
    SingleRequest("read", "read, one query round", "/chat/", "query PartManager", 3.0),
)


@dataclass(frozen=True)
class Stack:
    """A database (and cache) the benchmark runs on."""

    database: str
    """"sqlite" or "postgresql"."""
    redis_url: str = ""
    """The Redis cache and channel layer; empty: local memory and the in-memory layer."""

    @property
    def label(self) -> str:
        """How the tables name the stack."""
        database = self.database
        if database == "postgresql":
            database += " (pool)" if postgres_pooled() else " (no pool)"
        return f"{database} + {'redis' if self.redis_url else 'local memory'}"

    def environment(self, database_url: str) -> dict[str, str]:
        """The environment of a process (a child or the server) of this stack."""
        from tests.asgi_app.servers import server_environment  # noqa: PLC0415

        env = server_environment(
            DATABASE_URL=database_url,
            REDIS_URL=self.redis_url,
            # Keys of its own in Redis: counters and groups of earlier runs stay apart.
            CHATOMON_TEST_PREFIX=f"chatomon-bench-{uuid4().hex[:8]}",
        )
        env["DJANGO_SETTINGS_MODULE"] = SETTINGS
        return env


def stacks() -> list[Stack]:
    """SQLite with local memory; PostgreSQL (and Redis) when DATABASE_URL (REDIS_URL) is set."""
    found = [Stack("sqlite")]
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        found.append(Stack("postgresql", os.environ.get("REDIS_URL", "")))
    return found


def postgres_pooled() -> bool:
    """Whether the benchmark's settings put PostgreSQL on Django's pool (psycopg_pool)."""
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("psycopg_pool") is not None


@contextlib.contextmanager
def fresh_database(stack: Stack, folder: str, purpose: str) -> Iterator[str]:
    """The URL of an empty database of `stack` for `purpose`; a PostgreSQL one is dropped after."""
    if stack.database == "sqlite":
        yield f"sqlite:///{folder}/{purpose}.sqlite3"
        return
    from tests.asgi_app.servers import postgres_database  # noqa: PLC0415

    with postgres_database(f"bench_{purpose}") as url:
        yield url


# --- 1. Single client, in process -------------------------------------------------------


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
        # The client stays connected: the handler's disconnect listener waits here until
        # the response is sent, and is then cancelled.
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


Series = dict[str, list[float]]
"""Milliseconds per request: "wall" (the server's time) and "cpu" (the process's CPU time,
every thread's: what the request costs whatever else the machine runs)."""


async def serve(application: Any, request: SingleRequest) -> Series:
    """The times of WARMUP + REQUESTS posts (the warm-up ones dropped)."""
    # Each request a turn of a new conversation, as the figures before conversations
    # continued by default: a conversation's growing history is another measurement.
    body = json.dumps({"text": request.text, "new_conversation": True}).encode()
    cookie = b"csrftoken=benchmarkbenchmarkbenchmarkbench"
    samples: Series = {"wall": [], "cpu": []}
    for number in range(WARMUP + REQUESTS):
        cpu = time.process_time()
        status, content, seconds, headers = await asgi_post(application, request.path, body, cookie)
        cpu = time.process_time() - cpu
        assert status == 200, content[:300]
        answer = json.loads(content)
        assert answer["events"][-1]["type"] == "done" if request.is_turn else answer == {}, answer
        cookie = _with_session(cookie, headers)
        if number >= WARMUP:
            samples["wall"].append(seconds * 1000)
            samples["cpu"].append(cpu * 1000)
    return samples


def _with_session(cookie: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    for name, value in headers:
        if name.lower() == b"set-cookie" and value.startswith(b"sessionid="):
            return cookie + b"; " + value.split(b";", 1)[0]
    return cookie


async def direct_turns(text: str) -> Series:
    """The times of the same turns run straight through ChatService."""
    from chatomon.chat.store.records import Owner  # noqa: PLC0415
    from chatomon.django.service import chat_service  # noqa: PLC0415

    samples: Series = {"wall": [], "cpu": []}
    owner = Owner.session("bench")
    for number in range(WARMUP + REQUESTS):
        started, cpu = time.perf_counter(), time.process_time()
        turn = chat_service().run_turn(None, text, owner=owner, new_conversation=True)
        events = [e async for e in turn]
        assert events[-1]["type"] == "done", events[-1]
        if number >= WARMUP:
            samples["wall"].append((time.perf_counter() - started) * 1000)
            samples["cpu"].append((time.process_time() - cpu) * 1000)
    return samples


def prepare_child() -> Any:
    """Set Django up on the environment's settings and database, create and seed the
    tables; Django's ASGI application."""
    from django.core.asgi import get_asgi_application  # noqa: PLC0415

    application = get_asgi_application()
    from django.core.management import call_command  # noqa: PLC0415
    from django.db import connections  # noqa: PLC0415

    from tests.benchmarks.chat import seed  # noqa: PLC0415

    call_command("migrate", verbosity=0)
    seed()
    # The set-up's connection goes back (to the pool, on PostgreSQL): requests use their own.
    connections.close_all()
    return application


def measure(series: str) -> dict[str, Series]:
    """The times of each single-client request of `series` (HTTP or SERVICE), by key.

    Each kind of request runs on one event loop, as under an ASGI server.
    """
    application = prepare_child()
    if series == SERVICE:
        return {r.key: asyncio.run(direct_turns(r.text)) for r in SINGLE_REQUESTS if r.is_turn}
    return {r.key: asyncio.run(serve(application, r)) for r in SINGLE_REQUESTS}


def single_client_rows(stack: Stack, database_url: str) -> list[dict[str, Any]]:
    """The single-client rows of one stack: the HTTP series and ChatService's, each
    measured in a process of its own."""
    environment = stack.environment(database_url)
    measured = {name: run_child(__file__, CHILD, name, env=environment) for name in (HTTP, SERVICE)}
    floor = statistics.median(measured[HTTP][FLOOR.key]["wall"])
    floor_cpu = statistics.median(measured[HTTP][FLOOR.key]["cpu"])
    rows = []
    for request in SINGLE_REQUESTS:
        http = measured[HTTP][request.key]
        median = statistics.median(http["wall"])
        cpu = statistics.median(http["cpu"])
        row: dict[str, Any] = {
            "stack": stack.label,
            "request": request.label,
            "http_median_ms": round(median, 3),
            "http_p90_ms": round(percentile(http["wall"], 0.9), 2),
            "http_cpu_ms": round(cpu, 3),
        }
        if request.target_over_floor_ms is not None:
            service = measured[SERVICE][request.key]
            over = median - floor
            row |= {
                "service_median_ms": round(statistics.median(service["wall"]), 3),
                "service_cpu_ms": round(statistics.median(service["cpu"]), 3),
                "transport_ms": round(median - statistics.median(service["wall"]), 3),
                "over_floor_ms": round(over, 3),
                "cpu_over_floor_ms": round(cpu - floor_cpu, 3),
                "target": f"floor + {request.target_over_floor_ms:g} ms",
                "verdict": "pass" if over <= request.target_over_floor_ms else "FAIL",
            }
        rows.append(row)
    return rows


# --- 2. Load: one uvicorn process -------------------------------------------------------


async def one_socket(server: Any, index: int) -> float:
    """Milliseconds from sending one message over a new WebSocket to its terminal event."""
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


async def one_stream(client: Any, token: str, index: int) -> float:
    """Milliseconds of one SSE turn, from the request to the end of the stream."""
    started = time.perf_counter()
    headers = {"X-CSRFToken": token, "Accept": "text/event-stream"}
    async with client.stream(
        "POST", "/chat/stream/", json={"text": f"hello {index}"}, headers=headers
    ) as response:
        body = b"".join([chunk async for chunk in response.aiter_raw()])
    if b'"type":"done"' not in body:
        raise RuntimeError(body[-200:].decode())
    return (time.perf_counter() - started) * 1000


@dataclass
class Outcome:
    """The latencies of the jobs that succeeded, and what failed the others."""

    latencies: list[float]
    failures: list[str]


async def gather_all(jobs: list[Any]) -> Outcome:
    """Run the jobs concurrently; none of their failures stops the others."""
    results = await asyncio.gather(*jobs, return_exceptions=True)
    return Outcome(
        [r for r in results if isinstance(r, float)],
        [f"{type(r).__name__}: {r}"[:200] for r in results if isinstance(r, BaseException)],
    )


def peak_memory_mb(pid: int) -> float:
    """The peak resident memory of a process (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class SessionWatch:
    """The most sessions a PostgreSQL database had at once, sampled every 20 ms while open.

    The watch itself connects to the `postgres` maintenance database, so it never counts.
    """

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.peak = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        import psycopg  # noqa: PLC0415

        from tests.asgi_app.servers import admin_url  # noqa: PLC0415

        name = urlsplit(self.database_url).path.lstrip("/")
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
        admin = admin_url(self.database_url)
        async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as connection:
            while not self._stop.is_set():
                row = await (await connection.execute(query, (name,))).fetchone()
                self.peak = max(self.peak, row[0] if row else 0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 0.02)

    async def __aenter__(self) -> SessionWatch:
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


def max_connections(database_url: str) -> int:
    """The PostgreSQL server's `max_connections`."""
    import psycopg  # noqa: PLC0415

    from tests.asgi_app.servers import admin_url  # noqa: PLC0415

    with psycopg.connect(admin_url(database_url)) as connection:
        row = connection.execute("SHOW max_connections").fetchone()
    return int(row[0]) if row else 0


@contextlib.asynccontextmanager
async def watched(stack: Stack, database_url: str) -> Any:
    """A SessionWatch on PostgreSQL, nothing on SQLite (sessions are a server's notion)."""
    if stack.database != "postgresql":
        yield None
        return
    async with SessionWatch(database_url) as watch:
        yield watch


async def load(stack: Stack, database_url: str) -> list[dict[str, Any]]:
    """The load rows of one stack: WebSocket conversations, then SSE streams."""
    import httpx  # noqa: PLC0415

    from tests.asgi_app.servers import AsgiServer, migrate  # noqa: PLC0415

    env = stack.environment(database_url) | {"CHATOMON_TEST_PROVIDER_DELAY": "0.2"}
    migrate(env)
    server = AsgiServer(env).start()
    rows = []
    try:
        assert server.process is not None
        started = time.perf_counter()
        async with watched(stack, database_url) as watch:
            outcome = await gather_all([one_socket(server, i) for i in range(WEBSOCKETS)])
        rows.append(_row(stack, "WebSocket", WEBSOCKETS, outcome, started, server, watch))
        limits = httpx.Limits(max_connections=STREAMS + 10)
        async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as client:
            token = (await client.get("/test/csrf/")).json()["token"]
            started = time.perf_counter()
            async with watched(stack, database_url) as watch:
                outcome = await gather_all([one_stream(client, token, i) for i in range(STREAMS)])
        rows.append(_row(stack, "SSE", STREAMS, outcome, started, server, watch))
    finally:
        server.stop()
    return rows


def _row(
    stack: Stack,
    kind: str,
    count: int,
    outcome: Outcome,
    started: float,
    server: Any,
    watch: SessionWatch | None,
) -> dict[str, Any]:
    latencies = outcome.latencies
    return {
        "stack": stack.label,
        "transport": kind,
        "concurrent": count,
        "p50_ms": round(percentile(latencies, 0.5), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99), 1) if latencies else None,
        "errors": len(outcome.failures),
        "wall_s": round(time.perf_counter() - started, 2),
        "server_peak_mb": peak_memory_mb(server.process.pid),
        "db_sessions_peak": None if watch is None else watch.peak,
        "first_errors": sorted(set(outcome.failures))[:3],
    }


# --- The run ----------------------------------------------------------------------------

SINGLE_COLUMNS = [
    "stack",
    "request",
    "http_median_ms",
    "http_p90_ms",
    "http_cpu_ms",
    "service_median_ms",
    "service_cpu_ms",
    "transport_ms",
    "over_floor_ms",
    "cpu_over_floor_ms",
    "target",
    "verdict",
]
LOAD_COLUMNS = [
    "stack",
    "transport",
    "concurrent",
    "p50_ms",
    "p99_ms",
    "errors",
    "wall_s",
    "server_peak_mb",
    "db_sessions_peak",
]


def run_benchmark() -> None:
    """Both parts on every stack; the tables, then results/transports.json."""
    single_rows: list[dict[str, Any]] = []
    load_rows: list[dict[str, Any]] = []
    cost_rows: list[dict[str, Any]] = []
    limits: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        for stack in stacks():
            with fresh_database(stack, folder, "single") as database_url:
                single_rows += single_client_rows(stack, database_url)
                cost_rows.append({"stack": stack.label, **database_costs(database_url)})
            # The load varies the database only (see the module docstring).
            loaded = replace(stack, redis_url="")
            with fresh_database(loaded, folder, "load") as database_url:
                if loaded.database == "postgresql":
                    limits[loaded.label] = max_connections(database_url)
                load_rows += asyncio.run(load(loaded, database_url))
    print_table(
        f"Server time in process, Django's ASGIHandler, instant provider (median of {REQUESTS})",
        single_rows,
        SINGLE_COLUMNS,
    )
    print()
    for row in single_rows:
        if "over_floor_ms" in row:
            print(
                f"{row['stack']}: {row['request']} - floor = {row['over_floor_ms']:.2f} ms"
                f" (target <= {row['target']}: {row['verdict']});"
                f" CPU time - floor's = {row['cpu_over_floor_ms']:.2f} ms"
            )
    print_table(
        f"The database alone, through its driver (median of {COST_REPEATS}; database_costs.py)",
        cost_rows,
        ["stack", "round_trip_ms", "commit_ms", "reopen_write_ms"],
    )
    print_table(
        "Concurrent conversations, provider answering after 200 ms (one uvicorn process)",
        load_rows,
        LOAD_COLUMNS,
    )
    for label, limit in limits.items():
        print(f"{label}: the server's max_connections = {limit}")
    for row in load_rows:
        for failure in row["first_errors"]:
            print(f"{row['stack']} {row['transport']} failed: {failure}")
    payload = {
        "single_client": single_rows,
        "database_costs": cost_rows,
        "load": load_rows,
        "max_connections": limits,
    }
    print(f"written: {write_results('transports', payload)}")
    failed = sum(row["errors"] for row in load_rows)
    if failed:
        raise SystemExit(f"{failed} conversation(s) under load failed")


def main() -> None:
    """The benchmark; with `--series NAME`, a child measuring one single-client series."""
    if sys.argv[1:2] == [CHILD]:
        print(json.dumps(measure(sys.argv[2])))
        return
    if sys.argv[1:2] == ["--profile"]:
        from tests.benchmarks.transport_profile import main as profile  # noqa: PLC0415

        profile()
        return
    run_benchmark()


if __name__ == "__main__":
    main()
