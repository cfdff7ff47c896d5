"""Load and soak on the documented multi-worker stack: PostgreSQL, Redis, channels_redis.

Run: `make soak` (needs DATABASE_URL on PostgreSQL and REDIS_URL), or
`python tests/reliability/soak.py [--part load|memory|all] [--websockets N] [--streams N]
[--turns N] [--seed N]`. Not part of `make test`: the full run takes a few minutes.

1. Load: TWO uvicorn processes serving the test project (the transport benchmark's
   settings: Django's PostgreSQL pool when psycopg_pool is there), sharing a database of
   their own, the Redis cache (the rate limiter) and the channels_redis layer.
   `--websockets` (500) WebSocket conversations, each of `--conversation-turns` (2)
   messages, and `--streams` (200) SSE streams run all at once, every client alternating
   between the two processes. The rules provider (`tests.asgi_app.providers`) answers
   each message after 2 to 20 s, drawn from `--seed`: `slow <s>` waits and then answers,
   `drip <s>` streams a chunk every second, so every socket lives well past any 5 s
   timeout, idle or streaming. Every turn must end with `done` (an error event, a socket
   closed early, a timeout: each is an error, and any error fails the run); reported are
   p50/p99 of the turn's latency and of its overhead (the latency less the provider's
   scripted wait), the servers' peak memory, the database's peak sessions, and the turns
   the database holds by status once the clients are done (none may be left `running`).
   A WebSocket turn is timed from its message on the open socket, an SSE turn from its
   request: the SSE figures include the burst of every client connecting at once.
2. Memory: ONE uvicorn process on the same stack serves `--turns` (10,000) turns, the
   provider answering at once, from 16 clients at a time rotating HTTP `chat/`, SSE and a
   WebSocket each (a conversation continued for ten turns, then a new one). The server's
   resident memory (VmRSS) is read after every 1,000 turns; reported are RSS after the
   first 1,000 and after the last, the growth between them and per 1,000 turns, and the
   peak (VmHWM). The memory is flat when it grew by at most 10 % from the 1,000th turn to
   the last (the first thousand warm the caches, pools and imports).

Progress goes to stderr while it runs; the tables to stdout at the end, and
results/soak.json beside the benchmarks' (tests/benchmarks/results/). The exit status is 1
when any turn failed, a turn was left running, or the memory was not flat.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.asgi_app.servers import AsgiServer, migrate, postgres_database, receive_until_terminal
from tests.benchmarks.reporting import percentile, print_table, write_results
from tests.benchmarks.transports import SessionWatch, Stack, gather_all, peak_memory_mb

SHORTEST, LONGEST = 2.0, 20.0
"""The provider's scripted wait before (or while) it answers, in seconds."""
TURN_TIMEOUT = 90.0
"""How long a client waits for a turn beyond its scripted wait before it counts an error."""
MEMORY_CLIENTS = 16
MEMORY_SAMPLE_EVERY = 1000
FLAT_GROWTH = 0.10
"""The largest growth of RSS from the first sample to the last that is still flat."""


def log(message: str) -> None:
    """A progress line on stderr (the tables go to stdout)."""
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Tally:
    """What the clients of one part did so far: turns ended, and every failure."""

    label: str
    planned: int
    done: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    overheads_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def record(self, started: float, scripted: float) -> None:
        """One turn ended with `done`, `scripted` seconds of it the provider's own wait."""
        elapsed = (time.perf_counter() - started) * 1000
        self.done += 1
        self.latencies_ms.append(elapsed)
        self.overheads_ms.append(elapsed - scripted * 1000)

    def line(self) -> str:
        """The progress line."""
        errors = len(self.failures)
        return f"{self.label} {self.done}/{self.planned} turns done, {errors} errors"

    async def counted(self, job: Awaitable[float]) -> float:
        """`job`'s result; its failure recorded (for the progress line), then raised again."""
        try:
            return await job
        except Exception as error:
            self.failures.append(failure(type(error).__name__, error))
            raise


@contextlib.asynccontextmanager
async def reporting(label: str, tallies: list[Tally], every: float = 5.0) -> AsyncIterator[None]:
    """Print the tallies' progress every `every` seconds while the block runs."""

    async def report() -> None:
        started = time.perf_counter()
        while True:
            await asyncio.sleep(every)
            lines = "; ".join(tally.line() for tally in tallies)
            log(f"{label} {time.perf_counter() - started:5.0f} s: {lines}")

    task = asyncio.create_task(report())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def scripted_text(rng: random.Random, label: str) -> tuple[str, float]:
    """A message the rules provider answers after 2-20 s, and that wait in seconds."""
    seconds = round(rng.uniform(SHORTEST, LONGEST), 1)
    if rng.random() < 0.5:
        return f"slow {seconds} {label}", seconds
    whole = max(int(SHORTEST), int(seconds))  # drip streams one chunk a second
    return f"drip {whole} {label}", float(whole)


def failure(kind: str, detail: Any) -> str:
    """One failure, short enough to group in the report."""
    return f"{kind}: {detail}"[:160]


class TurnFailedError(Exception):
    """A turn that did not end with `done` (what it ended with instead)."""


# --- 1. Load: two worker processes ------------------------------------------------------


async def socket_conversation(
    server: AsgiServer, messages: list[tuple[str, float]], tally: Tally
) -> float:
    """One WebSocket, one conversation: every message answered `done`, in one conversation."""
    from websockets.asyncio.client import connect  # noqa: PLC0415

    conversation = None
    async with connect(server.ws_url + "/chat/", origin=server.url, open_timeout=60) as socket:
        for text, scripted in messages:
            started = time.perf_counter()
            await socket.send(json.dumps({"type": "message", "text": text}))
            last = (await receive_until_terminal(socket, scripted + TURN_TIMEOUT))[-1]
            if last["type"] != "done":
                raise TurnFailedError(f"WebSocket turn ended {last['type']} {last.get('code')}")
            if conversation not in (None, last["conversation_id"]):
                raise TurnFailedError("the socket's conversation changed")
            conversation = last["conversation_id"]
            tally.record(started, scripted)
    return 0.0


async def sse_stream(client: Any, token: str, text: str, scripted: float, tally: Tally) -> float:
    """One SSE turn of a new conversation, read to the end of the stream: it ends `done`."""
    started = time.perf_counter()
    headers = {"X-CSRFToken": token, "Accept": "text/event-stream"}
    payload = {"text": text, "new_conversation": True}
    async with asyncio.timeout(scripted + TURN_TIMEOUT):
        async with client.stream(
            "POST", "/chat/stream/", json=payload, headers=headers
        ) as response:
            body = b"".join([chunk async for chunk in response.aiter_raw()])
    events = [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    if response.status_code != 200 or not events or events[-1]["type"] != "done":
        last = events[-1] if events else {"type": f"HTTP {response.status_code}"}
        raise TurnFailedError(f"SSE turn ended {last['type']} {last.get('code')}")
    tally.record(started, scripted)
    return 0.0


async def turn_statuses(database_url: str) -> dict[str, int]:
    """How many turns the database holds, by status."""
    import psycopg  # noqa: PLC0415

    async with await psycopg.AsyncConnection.connect(database_url) as connection:
        rows = await (
            await connection.execute("SELECT status, count(*) FROM chatomon_turn GROUP BY status")
        ).fetchall()
    return {str(status): int(count) for status, count in rows}


async def settled_statuses(database_url: str, wait: float = 30) -> dict[str, int]:
    """The turns by status once none is `running` (or as they are after `wait` seconds)."""
    deadline = time.monotonic() + wait
    statuses = await turn_statuses(database_url)
    while statuses.get("running") and time.monotonic() < deadline:
        await asyncio.sleep(1)
        statuses = await turn_statuses(database_url)
    return statuses


def logged_errors(path: Path) -> list[str]:
    """The lines of a server's log that report an error (tracebacks, ERROR records)."""
    if not path.exists():
        return []
    lines = path.read_text(errors="replace").splitlines()
    return [line for line in lines if "Traceback" in line or "ERROR" in line]


@dataclass
class LoadPlan:
    """What the load part runs."""

    websockets: int
    streams: int
    conversation_turns: int
    seed: int


async def drive_load(
    servers: tuple[AsgiServer, AsgiServer], plan: LoadPlan, tallies: dict[str, Tally]
) -> float:
    """Run every WebSocket conversation and SSE stream at once, across both servers;
    the seconds it took."""
    import httpx  # noqa: PLC0415

    rng = random.Random(plan.seed)
    sockets = tallies["WebSocket"]
    socket_jobs = [
        sockets.counted(
            socket_conversation(
                servers[index % 2],
                [scripted_text(rng, f"ws{index}") for _ in range(plan.conversation_turns)],
                sockets,
            )
        )
        for index in range(plan.websockets)
    ]
    limits = httpx.Limits(max_connections=plan.streams + 10)
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=server.url, timeout=TURN_TIMEOUT, limits=limits)
            )
            for server in servers
        ]
        tokens = [(await client.get("/test/csrf/")).json()["token"] for client in clients]
        streams = tallies["SSE"]
        stream_jobs = []
        for index in range(plan.streams):
            text, scripted = scripted_text(rng, f"sse{index}")
            client, token = clients[index % 2], tokens[index % 2]
            stream_jobs.append(streams.counted(sse_stream(client, token, text, scripted, streams)))
        started = time.perf_counter()
        await gather_all([*socket_jobs, *stream_jobs])  # failures: in the tallies
    return round(time.perf_counter() - started, 1)


async def run_load(plan: LoadPlan, folder: Path) -> dict[str, Any]:
    """The load part (see the module docstring): its rows and what the database holds."""
    tallies = {
        "WebSocket": Tally("WebSocket", plan.websockets * plan.conversation_turns),
        "SSE": Tally("SSE", plan.streams),
    }
    with postgres_database("soak_load") as database_url:
        env = Stack("postgresql", os.environ["REDIS_URL"]).environment(database_url)
        migrate(env)
        logs = [folder / "load-server-1.log", folder / "load-server-2.log"]
        servers = (AsgiServer(env, log=logs[0]), AsgiServer(env, log=logs[1]))
        try:
            for server in servers:
                server.start()
            log(
                f"load: {plan.websockets} WebSocket conversations x {plan.conversation_turns} "
                f"turns and {plan.streams} SSE streams on two processes "
                f"(ports {servers[0].port}, {servers[1].port})"
            )
            async with SessionWatch(database_url) as watch, reporting("load", [*tallies.values()]):
                wall = await drive_load(servers, plan, tallies)
            statuses = await settled_statuses(database_url)
            peaks = [peak_memory_mb(server.process.pid) for server in servers if server.process]
        finally:
            for server in servers:
                server.stop()
        _clear_redis(env["CHATOMON_TEST_PREFIX"])
    rows = [
        _load_row(kind, tally, plan, wall, peaks, watch.peak) for kind, tally in tallies.items()
    ]
    return {
        "rows": rows,
        "turns_by_status": statuses,
        "running_left": statuses.get("running", 0),
        "server_log_errors": [line for path in logs for line in logged_errors(path)][:20],
        "failures": sorted({item for tally in tallies.values() for item in tally.failures})[:20],
    }


def _load_row(
    kind: str, tally: Tally, plan: LoadPlan, wall: float, peaks: list[float], sessions: int
) -> dict[str, Any]:
    concurrent = plan.websockets if kind == "WebSocket" else plan.streams

    def rank(samples: list[float], fraction: float) -> float | None:
        return round(percentile(samples, fraction), 1) if samples else None

    return {
        "transport": kind,
        "concurrent": concurrent,
        "turns": tally.planned,
        "done": tally.done,
        "errors": tally.planned - tally.done,
        "p50_ms": rank(tally.latencies_ms, 0.5),
        "p99_ms": rank(tally.latencies_ms, 0.99),
        "overhead_p50_ms": rank(tally.overheads_ms, 0.5),
        "overhead_p99_ms": rank(tally.overheads_ms, 0.99),
        "wall_s": wall,
        "servers_peak_mb": "/".join(f"{peak:g}" for peak in peaks),
        "db_sessions_peak": sessions,
    }


def _clear_redis(prefix: str) -> None:
    """Delete the run's keys (cache, rate limits, channel layer) from Redis."""
    import redis  # noqa: PLC0415

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        stale = list(client.scan_iter(f"*{prefix}*"))
        if stale:
            client.delete(*stale)
    finally:
        client.close()


# --- 2. Memory: one process, many turns -------------------------------------------------


def resident_mb(pid: int) -> float:
    """The resident memory of a process now (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


@dataclass
class MemoryRun:
    """The turns of the memory part, numbered as they are taken, and the RSS samples."""

    turns: int
    pid: int
    tally: Tally
    taken: int = 0
    samples: list[tuple[int, float]] = field(default_factory=list)

    def next_turn(self) -> int | None:
        """The number of the next turn to run, None once all are taken."""
        if self.taken >= self.turns:
            return None
        self.taken += 1
        return self.taken

    def ended(self) -> None:
        """One turn ended: sample the server's RSS after every MEMORY_SAMPLE_EVERY turns."""
        ended = self.tally.done + len(self.tally.failures)
        if ended % MEMORY_SAMPLE_EVERY == 0:
            self.samples.append((ended, resident_mb(self.pid)))
            log(f"memory: {ended} turns, server RSS {self.samples[-1][1]} MiB")


async def memory_client(server: AsgiServer, run: MemoryRun) -> float:
    """One client: turns over HTTP `chat/`, SSE and its WebSocket in rotation."""
    import httpx  # noqa: PLC0415
    from websockets.asyncio.client import connect  # noqa: PLC0415

    async with (
        httpx.AsyncClient(base_url=server.url, timeout=TURN_TIMEOUT) as client,
        connect(server.ws_url + "/chat/", origin=server.url, open_timeout=60) as socket,
    ):
        token = (await client.get("/test/csrf/")).json()["token"]
        senders: list[Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]] = [
            lambda payload: _over_http(client, token, payload),
            lambda payload: _over_sse(client, token, payload),
            lambda payload: _over_socket(socket, payload),
        ]
        while (number := run.next_turn()) is not None:
            payload = {"text": f"hello {number}", "new_conversation": number % 10 == 1}
            started = time.perf_counter()
            try:
                last = await senders[number % 3](payload)
            except Exception as error:  # counted, and the client goes on
                run.tally.failures.append(failure(type(error).__name__, error))
            else:
                if last.get("type") == "done":
                    run.tally.record(started, 0.0)
                else:
                    ended = f"{last.get('type')} {last.get('code')}"
                    run.tally.failures.append(failure("turn ended", ended))
            run.ended()
    return 0.0


async def _over_http(client: Any, token: str, payload: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/chat/", json=payload, headers={"X-CSRFToken": token})
    last: dict[str, Any] = response.json()["events"][-1]
    return last


async def _over_sse(client: Any, token: str, payload: dict[str, Any]) -> dict[str, Any]:
    headers = {"X-CSRFToken": token, "Accept": "text/event-stream"}
    async with client.stream("POST", "/chat/stream/", json=payload, headers=headers) as response:
        body = b"".join([chunk async for chunk in response.aiter_raw()])
    frames = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]
    last: dict[str, Any] = json.loads(frames[-1]) if frames else {"code": "empty stream"}
    return last


async def _over_socket(socket: Any, payload: dict[str, Any]) -> dict[str, Any]:
    await socket.send(json.dumps({"type": "message", **payload}))
    return (await receive_until_terminal(socket, TURN_TIMEOUT))[-1]


async def run_memory(turns: int, folder: Path) -> dict[str, Any]:
    """The memory part (see the module docstring): its row and RSS samples."""
    tally = Tally("memory", turns)
    with postgres_database("soak_memory") as database_url:
        env = Stack("postgresql", os.environ["REDIS_URL"]).environment(database_url)
        migrate(env)
        log_path = folder / "memory-server.log"
        server = AsgiServer(env, log=log_path).start()
        try:
            assert server.process is not None
            run = MemoryRun(turns, server.process.pid, tally)
            run.samples.append((0, resident_mb(run.pid)))
            log(f"memory: {turns} turns on one process (port {server.port}), RSS at start "
                f"{run.samples[0][1]} MiB")  # fmt: skip
            started = time.perf_counter()
            async with reporting("memory", [tally], every=10):
                clients = [memory_client(server, run) for _ in range(MEMORY_CLIENTS)]
                outcome = await gather_all(clients)  # a client that could not start
            wall = time.perf_counter() - started
            peak = peak_memory_mb(run.pid)
            statuses = await settled_statuses(database_url)
        finally:
            server.stop()
        _clear_redis(env["CHATOMON_TEST_PREFIX"])
    return {
        "row": _memory_row(run, wall, peak),
        "rss_samples": [{"turns": n, "rss_mb": mb} for n, mb in run.samples],
        "turns_by_status": statuses,
        "running_left": statuses.get("running", 0),
        "server_log_errors": logged_errors(log_path)[:20],
        "failures": sorted({*outcome.failures, *tally.failures})[:20],
    }


def _memory_row(run: MemoryRun, wall: float, peak: float) -> dict[str, Any]:
    measured = [(n, mb) for n, mb in run.samples if n >= MEMORY_SAMPLE_EVERY]
    first = measured[0] if measured else (0, 0.0)
    last = measured[-1] if measured else (0, 0.0)
    growth = round(last[1] - first[1], 1)
    thousands = (last[0] - first[0]) / 1000
    flat = bool(measured) and growth <= first[1] * FLAT_GROWTH
    return {
        "turns": run.turns,
        "done": run.tally.done,
        "errors": run.turns - run.tally.done,
        "turns_per_s": round(run.tally.done / wall, 1) if wall else None,
        "p50_ms": round(percentile(run.tally.latencies_ms, 0.5), 1) if run.tally.done else None,
        "p99_ms": round(percentile(run.tally.latencies_ms, 0.99), 1) if run.tally.done else None,
        "rss_first_mb": f"{first[1]:g} @ {first[0]}",
        "rss_last_mb": f"{last[1]:g} @ {last[0]}",
        "growth_mb": growth,
        "growth_per_1000_mb": round(growth / thousands, 2) if thousands else None,
        "peak_mb": peak,
        "verdict": "flat" if flat else "GROWING",
    }


# --- The run ----------------------------------------------------------------------------

LOAD_COLUMNS = [
    "transport", "concurrent", "turns", "done", "errors", "p50_ms", "p99_ms",
    "overhead_p50_ms", "overhead_p99_ms", "wall_s", "servers_peak_mb", "db_sessions_peak",
]  # fmt: skip
MEMORY_COLUMNS = [
    "turns", "done", "errors", "turns_per_s", "p50_ms", "p99_ms", "rss_first_mb",
    "rss_last_mb", "growth_mb", "growth_per_1000_mb", "peak_mb", "verdict",
]  # fmt: skip


def arguments() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["load", "memory", "all"], default="all")
    parser.add_argument("--websockets", type=int, default=500)
    parser.add_argument("--conversation-turns", type=int, default=2)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=19)
    return parser.parse_args()


def main() -> None:
    """Run the parts asked for; print the tables, write results/soak.json, exit 1 on failure."""
    options = arguments()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "REDIS_URL"
    ):
        raise SystemExit("the soak needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    results: dict[str, Any] = {"options": vars(options)}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="chatomon-soak-") as folder:
        if options.part in ("load", "all"):
            plan = LoadPlan(
                options.websockets, options.streams, options.conversation_turns, options.seed
            )
            load = asyncio.run(run_load(plan, Path(folder)))
            results["load"] = load
            print_table("Load: two worker processes (PostgreSQL, Redis, channels_redis)",
                        load["rows"], LOAD_COLUMNS)  # fmt: skip
            _summarize(load, "load", problems)
        if options.part in ("memory", "all"):
            memory = asyncio.run(run_memory(options.turns, Path(folder)))
            results["memory"] = memory
            print_table("Memory: one process, many turns", [memory["row"]], MEMORY_COLUMNS)
            _summarize(memory, "memory", problems)
            if memory["row"]["verdict"] != "flat":
                problems.append("memory: the server's RSS grew by more than 10 %")
    results["problems"] = problems
    path = write_results("soak", results)
    print(f"\nwritten: {path}")
    if problems:
        print("\n".join(["FAILED:", *problems]))
        raise SystemExit(1)


def _summarize(part: dict[str, Any], name: str, problems: list[str]) -> None:
    """Print what the part left behind; note what fails the run."""
    print(f"{name}: turns by status {part['turns_by_status']}")
    for line in part["failures"]:
        print(f"  failure: {line}")
    for line in part["server_log_errors"][:5]:
        print(f"  server log: {line}")
    rows = part["rows"] if "rows" in part else [part["row"]]
    errors = sum(row["errors"] for row in rows)
    if errors:
        problems.append(f"{name}: {errors} turns did not end with done")
    if part["running_left"]:
        problems.append(f"{name}: {part['running_left']} turns left running")


if __name__ == "__main__":
    main()
