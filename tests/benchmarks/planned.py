"""Planned read turns beside the tool loop: `python tests/benchmarks/planned.py`.

Three questions over the toy schema (`tests/benchmarks/planned_roles.py`): one root with
one query; three independent roots; a root with a dependent. Each role answers by rule
(`RoleProvider`), so a planned read costs the planner, one executor round per task and the
synthesizer; the legacy tool loop answers the same question with one query round per task
and the answer.

1. Instant providers, the median of TURNS turns after WARMUP, each series in a process of
   its own:
   - "ChatService (SDK)": a `ChatService` on a `MemoryStore` over
     `chatomon.data.fixtures.toy_registry()`, no Django: the orchestration's own time;
   - "ChatService (Django)": the Django app's `chat_service()` on the test project's
     settings with every role on a profile (`planned_settings.py`), run straight;
   - "POST chat/": the same settings through Django's `ASGIHandler` (no socket: the
     server's time, as `transports.py` measures it).
   Reported per turn: median and p90 server time, the process's CPU time, provider calls,
   SQL statements (the Django series) and prompt characters sent (every role's). The
   issue's targets: a simple planned read's own time (SDK series) <= 15 ms, and <= 15,000
   prompt characters for it; the table says pass or fail, nothing is asserted.
2. Concurrency: every role answers after 200 ms (`chatomon.providers.testing.Delay`),
   through the SDK series. Three independent roots run their executors at once, so their
   turn takes about one root's time (planner, executor, synthesizer: ~600 ms), not three;
   the table gives the ratio, and "pass" when it is at most 1.25. Beside them, the tool
   loop, whose rounds follow one another (three queries and the answer: ~800 ms).

SQLite in a temporary file always; PostgreSQL too when DATABASE_URL is set (a fresh
database beside it, dropped after). Writes results/planned.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.reporting import percentile, print_table, run_child, write_results
from tests.benchmarks.statements import StatementCounter

TURNS = int(os.environ.get("CHATOMON_BENCH_TURNS", "200"))
WARMUP = TURNS // 10
DELAYED_TURNS = 5
DELAY_SECONDS = 0.2
CONCURRENCY_RATIO = 1.25
"""Three independent roots pass when their turn takes at most this many times one root's."""
OWN_TIME_TARGET_MS = 15.0
PROMPT_TARGET = 15_000
CHILD = "--series"
SDK, DJANGO, HTTP, DELAYED = "ChatService (SDK)", "ChatService (Django)", "POST chat/", "delayed"
SETTINGS = "tests.benchmarks.planned_settings"
STATEMENTS = StatementCounter()
"""SQL statements executed in this process, by any connection (started in a Django child)."""

Turn = Callable[[str], Any]
"""Runs one turn of a question's text; returns the terminal event."""


def sdk_turns(*, planned: bool, delay: float = 0.0) -> Turn:
    """Turns through a ChatService on a MemoryStore over the toy registry (no Django)."""
    from chatomon.chat.pipeline import ChatService  # noqa: PLC0415
    from chatomon.chat.store import MemoryStore, Owner  # noqa: PLC0415
    from chatomon.chat.tools import Toolset  # noqa: PLC0415
    from chatomon.data.fixtures import toy_registry  # noqa: PLC0415
    from chatomon.planned import REQUIRED_ROLES, PlannedTurns  # noqa: PLC0415
    from tests.benchmarks.planned_roles import RoleProvider  # noqa: PLC0415

    roles = None
    if planned:
        providers = {role: RoleProvider(role=role, delay_seconds=delay) for role in REQUIRED_ROLES}
        roles = PlannedTurns(providers)
    service = ChatService(
        store=MemoryStore(),
        provider=RoleProvider(role="legacy", delay_seconds=delay),
        toolset=Toolset(toy_registry()),
        planned=roles,
    )

    owner = Owner.session("bench")

    async def turn(text: str) -> Any:
        run = service.run_turn(None, text, owner=owner, new_conversation=True)
        events = [e async for e in run]
        return events[-1]

    return turn


def django_turns(series: str) -> Turn:
    """Turns through the Django app: `chat_service()` straight, or POST chat/ over ASGI."""
    from tests.benchmarks.transports import _with_session, asgi_post, prepare_child  # noqa: PLC0415

    STATEMENTS.start()  # before any connection opens: see StatementCounter.start
    application = prepare_child()
    if series == DJANGO:
        from chatomon.chat.store.records import Owner  # noqa: PLC0415
        from chatomon.django.service import chat_service  # noqa: PLC0415

        owner = Owner.session("bench")

        async def direct(text: str) -> Any:
            turn = chat_service().run_turn(None, text, owner=owner, new_conversation=True)
            events = [e async for e in turn]
            return events[-1]

        return direct
    cookie = [b"csrftoken=benchmarkbenchmarkbenchmarkbench"]

    async def post(text: str) -> Any:
        body = json.dumps({"text": text, "new_conversation": True}).encode()
        status, content, _, headers = await asgi_post(application, "/chat/", body, cookie[0])
        assert status == 200, content[:300]
        cookie[0] = _with_session(cookie[0], headers)
        return json.loads(content)["events"][-1]

    return post


def measure(turn: Turn, text: str, *, planned: bool, turns: int, warmup: int) -> dict[str, Any]:
    """Run `turns` + `warmup` turns of `text` on one event loop; figures per turn."""
    from tests.benchmarks.planned_roles import COUNTS  # noqa: PLC0415

    async def series() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {
            "wall": [],
            "cpu": [],
            "calls": [],
            "chars": [],
            "sql": [],
        }
        for number in range(warmup + turns):
            before = (COUNTS["calls"], COUNTS["prompt_chars"], STATEMENTS.executed)
            started, cpu = time.perf_counter(), time.process_time()
            done = await turn(text)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert done["type"] == "done", done
            # A planned read's done carries its coverage; the tool loop's none.
            coverage = (done.get("coverage") or {}).get("status")
            assert coverage == ("complete" if planned else None), done
            if number >= warmup:
                samples["wall"].append(wall * 1000)
                samples["cpu"].append(cpu * 1000)
                samples["calls"].append(COUNTS["calls"] - before[0])
                samples["chars"].append(COUNTS["prompt_chars"] - before[1])
                samples["sql"].append(STATEMENTS.executed - before[2])
        return samples

    samples = asyncio.run(series())
    return {
        "median_ms": round(statistics.median(samples["wall"]), 3),
        "p90_ms": round(percentile(samples["wall"], 0.9), 3),
        "cpu_ms": round(statistics.median(samples["cpu"]), 3),
        "provider_calls": _count(samples["calls"]),
        "sql_per_turn": _count(samples["sql"]),
        "prompt_chars": _count(samples["chars"]),
    }


def _count(samples: list[float]) -> int | float:
    """The median of counts: a whole number when it is one (it is, but for ties)."""
    median = statistics.median(samples)
    return int(median) if median == int(median) else median


def child(series: str, mode: str) -> list[dict[str, Any]]:
    """One series in this process: a row per question."""
    from tests.benchmarks.planned_roles import QUESTIONS  # noqa: PLC0415

    planned = mode == "planned"
    if series == DELAYED:
        turn = sdk_turns(planned=planned, delay=DELAY_SECONDS)
        return [
            {"question": q.label, "key": q.key, "turn": mode,
             **measure(turn, q.text, planned=planned, turns=DELAYED_TURNS, warmup=1)}
            for q in QUESTIONS
        ]  # fmt: skip
    turn = sdk_turns(planned=planned) if series == SDK else django_turns(series)
    return [
        {"question": q.label, "key": q.key, "turn": mode,
         **measure(turn, q.text, planned=planned, turns=TURNS, warmup=WARMUP)}
        for q in QUESTIONS
    ]  # fmt: skip


def django_environment(database_url: str, *, planned: bool) -> dict[str, str]:
    """The environment of a Django child: the benchmark's settings on `database_url`."""
    from tests.asgi_app.servers import server_environment  # noqa: PLC0415

    env = server_environment(
        DATABASE_URL=database_url,
        REDIS_URL="",
        CHATOMON_TEST_PREFIX=f"chatomon-bench-{uuid4().hex[:8]}",
        CHATOMON_BENCH_PLANNED="1" if planned else "0",
        CHATOMON_BENCH_DELAY="0",
    )
    env["DJANGO_SETTINGS_MODULE"] = SETTINGS
    return env


def instant_rows(folder: str) -> list[dict[str, Any]]:
    """Section 1: every series, planned and legacy, on each database."""
    from tests.benchmarks.transports import Stack, fresh_database, stacks  # noqa: PLC0415

    rows: list[dict[str, Any]] = []
    for mode in ("planned", "legacy"):
        rows += [
            {"series": SDK, "database": "-", **r} for r in run_child(__file__, CHILD, SDK, mode)
        ]
    stack: Stack
    for stack in stacks():
        for series in (DJANGO, HTTP):
            for mode in ("planned", "legacy"):
                purpose = f"planned_{series[:4].strip().lower()}_{mode}"
                with fresh_database(stack, folder, purpose) as url:
                    env = django_environment(url, planned=mode == "planned")
                    measured = run_child(__file__, CHILD, series, mode, env=env)
                rows += [{"series": series, "database": stack.database, **r} for r in measured]
    return rows


def verdicts(rows: list[dict[str, Any]]) -> None:
    """Mark the SDK series' simple planned read against the issue's targets."""
    for row in rows:
        if row["series"] == SDK and row["turn"] == "planned" and row["key"] == "one":
            fast = row["median_ms"] <= OWN_TIME_TARGET_MS
            short = row["prompt_chars"] <= PROMPT_TARGET
            row["target"] = f"<= {OWN_TIME_TARGET_MS:g} ms, <= {PROMPT_TARGET:,} chars"
            row["verdict"] = "pass" if fast and short else "FAIL"


def concurrency_rows() -> list[dict[str, Any]]:
    """Section 2: the delayed roles, planned and legacy; planned three roots against one."""
    rows: list[dict[str, Any]] = []
    for mode in ("planned", "legacy"):
        rows += run_child(__file__, CHILD, DELAYED, mode)
    one = next(r["median_ms"] for r in rows if r["key"] == "one" and r["turn"] == "planned")
    for row in rows:
        if row["turn"] == "planned":
            row["x_one_root"] = round(row["median_ms"] / one, 2)
            if row["key"] == "three":
                row["verdict"] = "pass" if row["x_one_root"] <= CONCURRENCY_RATIO else "FAIL"
    return rows


def run_benchmark() -> None:
    """Both sections; print the tables, write results/planned.json."""
    with tempfile.TemporaryDirectory() as folder:
        rows = instant_rows(folder)
    verdicts(rows)
    columns = [
        "series", "database", "question", "turn", "median_ms", "p90_ms", "cpu_ms",
        "provider_calls", "sql_per_turn", "prompt_chars", "verdict",
    ]  # fmt: skip
    print_table(
        f"Planned reads and the tool loop, instant roles (median of {TURNS})", rows, columns
    )
    delayed = concurrency_rows()
    print_table(
        f"Every role answering after {DELAY_SECONDS * 1000:g} ms (SDK, median of {DELAYED_TURNS})",
        delayed,
        ["question", "turn", "median_ms", "cpu_ms", "provider_calls", "x_one_root", "verdict"],
    )
    payload = {
        "instant": rows,
        "delayed": {"delay_seconds": DELAY_SECONDS, "rows": delayed},
        "targets": {
            "own_time_ms": OWN_TIME_TARGET_MS,
            "prompt_chars": PROMPT_TARGET,
            "three_roots_over_one": CONCURRENCY_RATIO,
        },
    }
    print(f"written: {write_results('planned', payload)}")


def main() -> None:
    """The benchmark; with `--series NAME MODE`, a child measuring one series."""
    if sys.argv[1:2] == [CHILD]:
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
        return
    os.environ.pop("DJANGO_SETTINGS_MODULE", None)  # each Django child names its own
    run_benchmark()


if __name__ == "__main__":
    main()
