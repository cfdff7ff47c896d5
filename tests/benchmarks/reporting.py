"""Shared parts of the benchmarks: percentiles, a printed table, a JSON file under results/,
and a measurement run in a fresh interpreter."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The sample at rank `fraction` of the sorted samples (nearest rank, not interpolated)."""
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * fraction) - 1)]


def summarize(samples_us: Sequence[float]) -> dict[str, float]:
    """Median, p90, p99 and throughput of per-operation times in microseconds."""
    median = statistics.median(samples_us)
    return {
        "n": len(samples_us),
        "median_us": round(median, 2),
        "p90_us": round(percentile(samples_us, 0.90), 2),
        "p99_us": round(percentile(samples_us, 0.99), 2),
        "per_second": round(1_000_000 / median, 1) if median else float("inf"),
    }


def print_table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Print rows as an aligned text table."""
    widths = {c: max(len(c), *(len(_cell(r.get(c))) for r in rows)) for c in columns}
    print(f"\n{title}")
    print("  ".join(c.ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for row in rows:
        print("  ".join(_cell(row.get(c)).ljust(widths[c]) for c in columns))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        # Sub-millisecond figures (a database round trip) keep their third decimal.
        return f"{value:,.3f}" if abs(value) < 1 else f"{value:,.2f}"
    return "" if value is None else str(value)


def write_results(name: str, payload: dict[str, Any]) -> Path:
    """Write results/<name>.json with the machine facts beside the figures."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    document = {
        "benchmark": name,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        **payload,
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


CHILD_ERROR_LINES = 15
"""How many last lines of a failed child's stderr `run_child` shows."""


def run_child(script: str, *args: str, env: Mapping[str, str] | None = None) -> Any:
    """Run `script args` in a fresh interpreter (its own Django settings); the JSON it
    prints as its last line of output.

    Raises:
        SystemExit: The child failed; the message ends with the end of its stderr.
    """
    child = subprocess.run(
        [sys.executable, script, *args], check=False, capture_output=True, text=True, env=env
    )
    if child.returncode != 0:
        tail = "\n".join(child.stderr.strip().splitlines()[-CHILD_ERROR_LINES:])
        raise SystemExit(
            f"{Path(script).name} {' '.join(args)} failed (exit status {child.returncode}):\n{tail}"
        )
    return json.loads(child.stdout.strip().splitlines()[-1])
