"""Chat tools: index build time and query latency. `python tests/benchmarks/tools.py`.

- Schema index build for 200 managers x 20 fields (fresh registry each run, validation
  included; target < 50 ms).
- The query tool on a 10,000-row parts table, records and Django on SQLite (a file
  database, migrated by this script), through the async `Toolset.call`, so the Django
  figures include the worker-thread hop. One filter, a nested to-one selection, an
  ordering and a 50-row page.
- The JSON size of the toy toolset's definitions (discovery and direct).

Pinned to one core. Writes results/tools.json.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from chatomon.chat.tools import Toolset, ToolSettings
from chatomon.data import FieldSpec, Manager, ManagerRegistry, RelationSpec
from chatomon.data.fixtures import toy_registry
from tests.benchmarks.reporting import print_table, summarize, write_results
from tests.data.catalog import wide_registry

ROWS = 10_000
INDEX_RUNS = 40
QUERY_RUNS = 300
WARMUP = 20
INDEX_TARGET_MS = 50.0
QUERY = {
    "manager": "PartManager",
    "filters": {"unit_cost__gte": "50", "material__name__in": ["Steel", "Cobalt"]},
    "fields": ["name", "unit_cost", "quantity", {"material": ["name", "density"]}],
    "order_by": ["-unit_cost"],
    "limit": 50,
}
MATERIALS = [("Steel", 7.8), ("Aluminum", 2.7), ("Cobalt", 8.9)]


def part_values(number: int) -> dict[str, Any]:
    """The synthetic values of part `number` (the same for both backends)."""
    return {
        "name": f"Part {number:05d}",
        "unit_cost": Decimal(number % 10_000) / 100,
        "weight_kg": (number % 97) / 10,
        "status": ("draft", "active", "retired")[number % 3],
        "in_stock": number % 2 == 0,
        "released_on": None,
        "created_at": datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=number),
        "quantity": number % 500,
    }


def index_build_ms() -> list[float]:
    """Milliseconds to build the schema index of a fresh 200 x 20 registry, per run."""
    samples = []
    for _ in range(INDEX_RUNS):
        registry = wide_registry(200, 20)
        gc.collect()  # so a run does not pay for the garbage of building its registry
        started = time.perf_counter()
        registry.schema_index()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def records_registry() -> ManagerRegistry:
    """Materials and 10,000 parts as records managers."""
    materials = Manager.from_records(
        "MaterialManager",
        records=[{"id": n, "name": name, "density": d} for n, (name, d) in enumerate(MATERIALS, 1)],
    )
    parts = Manager.from_records(
        "PartManager",
        records=[{"id": n, "material": n % 3 + 1, **part_values(n)} for n in range(1, ROWS + 1)],
        fields={
            "name": "string",
            "unit_cost": FieldSpec("decimal", decimal_places=2),
            "weight_kg": "float",
            "status": FieldSpec("enum", choices=("draft", "active", "retired")),
            "in_stock": "boolean",
            "released_on": FieldSpec("date", nullable=True),
            "created_at": "datetime",
            "quantity": "integer",
        },
        relations={"material": RelationSpec("MaterialManager", to_many=False)},
    )
    return ManagerRegistry([materials, parts])


def django_registry(folder: str) -> ManagerRegistry:
    """The test app on a migrated SQLite file holding 10,000 parts."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.django_settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{folder}/bench.sqlite3"
    # Django is set up here, for this scenario only (settings come from the environment).
    import django  # noqa: PLC0415
    from django.core.management import call_command  # noqa: PLC0415

    django.setup()
    call_command("migrate", verbosity=0)
    from tests.testapp import chat  # noqa: PLC0415
    from tests.testapp.models import Material, Part  # noqa: PLC0415

    materials = [Material.objects.create(name=name, density=d) for name, d in MATERIALS]
    Part.objects.bulk_create(
        (Part(material=materials[n % 3], **part_values(n)) for n in range(1, ROWS + 1)),
        batch_size=2000,
    )
    return chat.build_registry()


async def query_us(registry: ManagerRegistry) -> tuple[list[float], dict[str, Any]]:
    """Microseconds per query tool call (after a warm-up), and the last result."""
    toolset = Toolset(registry, ToolSettings())
    context = toolset.context()
    result: dict[str, Any] = {}
    for _ in range(WARMUP):
        result = await toolset.call("query", QUERY, context)
    samples = []
    for _ in range(QUERY_RUNS):
        started = time.perf_counter_ns()
        result = await toolset.call("query", QUERY, context)
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples, result


def definition_bytes(strategy: str) -> int:
    """The JSON size of the toy toolset's definitions."""
    definitions = Toolset(toy_registry(), ToolSettings(tool_strategy=strategy)).definitions
    return len(
        json.dumps(
            [
                {"name": d.name, "description": d.description, "parameters": d.parameters}
                for d in definitions
            ]
        ).encode()
    )


def main() -> None:
    """Measure, print the tables, write the JSON."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    index = summarize([ms * 1000 for ms in index_build_ms()])
    index_ms = round(index["median_us"] / 1000, 2)
    rows = [
        {
            "scenario": "schema index, 200 managers x 20 fields",
            "n": index["n"],
            "median_ms": index_ms,
            "p99_ms": round(index["p99_us"] / 1000, 2),
            "target_ms": INDEX_TARGET_MS,
            "meets_target": "ok" if index_ms < INDEX_TARGET_MS else "MISSED",
        }
    ]
    query_rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, registry in (
            ("records", records_registry()),
            ("django / sqlite", django_registry(folder)),
        ):
            samples, result = asyncio.run(query_us(registry))
            stats = summarize(samples)
            query_rows.append(
                {
                    "backend": label,
                    "rows": ROWS,
                    "matching": result["total_count"],
                    "n": stats["n"],
                    "p50_ms": round(stats["median_us"] / 1000, 3),
                    "p90_ms": round(stats["p90_us"] / 1000, 3),
                    "p99_ms": round(stats["p99_us"] / 1000, 3),
                }
            )
    sizes = {strategy: definition_bytes(strategy) for strategy in ("discovery", "direct")}
    print_table(
        "schema index build (one core)",
        rows,
        ["scenario", "n", "median_ms", "p99_ms", "target_ms", "meets_target"],
    )
    print_table(
        f"query tool on {ROWS:,} parts (filter, nested to-one, order, 50 rows)",
        query_rows,
        ["backend", "rows", "matching", "n", "p50_ms", "p90_ms", "p99_ms"],
    )
    print(
        f"\ntoy toolset definitions: {sizes['discovery']} bytes (discovery), "
        f"{sizes['direct']} bytes (direct)"
    )
    results = {
        "index": rows,
        "query": query_rows,
        "query_arguments": QUERY,
        "toy_definition_bytes": sizes,
    }
    print(f"written: {write_results('tools', results)}")


if __name__ == "__main__":
    main()
