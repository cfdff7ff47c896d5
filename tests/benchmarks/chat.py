"""Whole turns through ChatService with an instant provider: `python tests/benchmarks/chat.py`.

Two turns: a plain answer, and a read with one query tool round (the toy schema as Django
models, persisted in a DjangoStore). Reported per turn: median and p90 time, turns/s, the
median CPU time of the process (every thread: the event loop's and the database thread's;
close to the wall time, since the provider never waits), SQL statements and prompt
characters sent to the provider (all rounds). SQLite always;
PostgreSQL too when DATABASE_URL is set. Writes results/chat.json.
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
from tests.benchmarks.statements import StatementCounter

TURNS = 200
WARMUP = 20
STATEMENTS = StatementCounter()
"""SQL statements executed in this process, by any connection (started in `setup_django`)."""


def setup_django(database_url: str) -> None:
    """Configure the test settings on `database_url` and create the tables."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.django_settings"
    import django  # noqa: PLC0415 - configured here, per database
    from django.core.management import call_command  # noqa: PLC0415

    STATEMENTS.start()  # before any connection opens: see StatementCounter.start
    django.setup()
    call_command("migrate", verbosity=0, run_syncdb=True)


def seed() -> None:
    """The toy data: three materials, three parts, two projects."""
    from django.utils import timezone  # noqa: PLC0415

    from tests.testapp.models import Material, Part, Project  # noqa: PLC0415

    if Material.objects.exists():
        return
    now = timezone.now()
    parts = {}
    for material, density, part, cost in (
        ("Steel", 7.8, "Bolt", "0.10"),
        ("Aluminum", 2.7, "Bearing", "2.50"),
        ("Cobalt", 8.9, "Gear", "9.00"),
    ):
        made_of = Material.objects.create(name=material, density=density)
        parts[part] = Part.objects.create(
            name=part, material=made_of, unit_cost=cost, created_at=now
        )
    Project.objects.create(name="Apollo").parts.add(parts["Gear"])
    Project.objects.create(name="Mercury").parts.add(parts["Bearing"])


class CountingProvider:
    """An instant provider that answers from a script and counts prompt characters."""

    name = "instant"

    def __init__(self, make_script: Any) -> None:
        self.make_script = make_script
        self.prompt_chars = 0
        self.round = 0
        self.sizes: dict[str, int] = {}

    def _tool_chars(self, tool: Any) -> int:
        # Measured once per definition: an instant provider should not spend its time here.
        size = self.sizes.get(tool.name)
        if size is None:
            size = self.sizes[tool.name] = len(str(tool.parameters)) + len(tool.description)
        return size

    async def complete(self, messages: Any, tools: Any) -> Any:
        from chatomon.providers import DoneEvent, TextChunkEvent, ToolCallEvent  # noqa: PLC0415

        self.prompt_chars += sum(len(m.content) for m in messages)
        self.prompt_chars += sum(self._tool_chars(t) for t in tools)
        step = self.make_script(self.round)
        self.round += 1
        if isinstance(step, dict):
            yield ToolCallEvent(id=f"call-{self.round}", name="query", arguments=step)
        else:
            yield TextChunkEvent(content=step)
        yield DoneEvent()


async def measure(kind: str) -> dict[str, Any]:
    """Run TURNS turns of `kind` ("plain" or "read") and summarize them."""

    from chatomon.chat.pipeline import ChatService  # noqa: PLC0415
    from chatomon.chat.tools import Toolset  # noqa: PLC0415
    from chatomon.data import SimpleActor  # noqa: PLC0415
    from chatomon.django.persistence.store import DjangoStore  # noqa: PLC0415
    from tests.testapp.chat import build_registry  # noqa: PLC0415

    query = {
        "manager": "ProjectManager",
        "filters": {"parts__material__name": "Aluminum"},
        "fields": ["name"],
    }

    def script(number: int) -> Any:
        if kind == "read" and number % 2 == 0:
            return query
        return "Mercury uses aluminum parts." if kind == "read" else "Hello! How can I help?"

    provider = CountingProvider(script)
    service = ChatService(store=DjangoStore(), provider=provider, toolset=Toolset(build_registry()))
    actor = SimpleActor(id=1, is_authenticated=True)
    samples, cpu, statements = [], [], []
    for number in range(WARMUP + TURNS):
        provider.prompt_chars = 0
        before = STATEMENTS.executed
        started, cpu_started = time.perf_counter(), time.process_time()
        events = [e async for e in service.run_turn(actor, "Which projects use aluminum parts?")]
        elapsed, cpu_elapsed = time.perf_counter() - started, time.process_time() - cpu_started
        assert events[-1]["type"] == "done", events[-1]
        if number >= WARMUP:
            samples.append(elapsed * 1000)
            cpu.append(cpu_elapsed * 1000)
            statements.append(STATEMENTS.executed - before)
    median = statistics.median(samples)
    return {
        "turn": "plain answer" if kind == "plain" else "read, one query round",
        "median_ms": round(median, 3),
        "p90_ms": round(percentile(samples, 0.9), 3),
        "turns_per_s": round(1000 / median, 1),
        "cpu_ms": round(statistics.median(cpu), 3),
        "sql_per_turn": round(statistics.median(statements), 1),
        "prompt_chars": provider.prompt_chars,
    }


def run_on(database_url: str, label: str) -> list[dict[str, Any]]:
    """Both turn kinds on one database."""
    setup_django(database_url)
    from asgiref.sync import sync_to_async  # noqa: PLC0415

    asyncio.run(sync_to_async(seed)())
    return [{"database": label, **asyncio.run(measure(kind))} for kind in ("plain", "read")]


def main() -> None:
    """Measure on SQLite (and PostgreSQL in a child process), print, write JSON."""
    if len(sys.argv) == 3:  # child: one database, rows as JSON on stdout
        print(json.dumps(run_on(sys.argv[1], sys.argv[2])))
        return
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        targets = [(f"sqlite:///{folder}/chat.sqlite3", "sqlite")]
        if os.environ.get("DATABASE_URL", "").startswith("postgres"):
            targets.append((os.environ["DATABASE_URL"], "postgresql"))
        for url, label in targets:
            rows += run_child(__file__, url, label)
    print_table(
        f"ChatService turns, instant provider (median of {TURNS})",
        rows,
        [
            "database",
            "turn",
            "median_ms",
            "p90_ms",
            "turns_per_s",
            "cpu_ms",
            "sql_per_turn",
            "prompt_chars",
        ],
    )
    print(f"written: {write_results('chat', {'rows': rows})}")


if __name__ == "__main__":
    main()
