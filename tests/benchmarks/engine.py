"""Engine overhead per turn: `python tests/benchmarks/engine.py` (or `make bench`).

The nucleus answers at once, so the figures are the engine's own cost: chains, contexts,
verdict handling, report building and capture. Pinned to one core. Writes
results/engine.json.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from chatomon import Atom, OrbitalContext, Verdict, orbital, parallel
from tests.benchmarks.reporting import print_table, summarize, write_results

ALLOW = Verdict.allow()
TURNS = 3000
WARMUP = 300


def trivial(side: str, count: int) -> list[Any]:
    """`count` orbitals that allow at once."""
    return [orbital(side=side, name=f"{side}{i}")(lambda ctx: ALLOW) for i in range(count)]


def sleepy_group(count: int, seconds: float) -> Any:
    """A parallel group of `count` async orbitals, each sleeping `seconds`."""

    def member(index: int) -> Any:
        @orbital(side="input", name=f"sleep{index}")
        async def check(ctx: OrbitalContext) -> Verdict:
            await asyncio.sleep(seconds)
            return ALLOW

        return check

    return parallel(*(member(i) for i in range(count)))


def instant(messages: Any, guidance: Any) -> str:
    """A nucleus that answers at once."""
    return "Sure, here is the answer."


async def measure(atom: Atom, turns: int) -> list[float]:
    """Per-turn wall time in microseconds over `turns` turns, after a warm-up."""
    for _ in range(WARMUP):
        await atom.chat("How do I reset my password?")
    samples = []
    for _ in range(turns):
        started = time.perf_counter_ns()
        await atom.chat("How do I reset my password?")
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples


def import_time_ms(runs: int = 7) -> float:
    """Median wall time of `import chatomon` in a fresh interpreter."""
    code = "import time; t = time.perf_counter(); import chatomon; print(time.perf_counter() - t)"
    values = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(values) * 1000


async def run() -> dict[str, Any]:
    """Run every scenario and return the rows."""
    scenarios = [
        ("no orbitals", Atom("bench", instant), TURNS, None),
        (
            "3 input + 3 output",
            Atom("bench", instant, input=trivial("input", 3), output=trivial("output", 3)),
            TURNS,
            150.0,
        ),
        (
            "3 + 3, capture full",
            Atom(
                "bench",
                instant,
                input=trivial("input", 3),
                output=trivial("output", 3),
                capture_content="full",
            ),
            TURNS,
            None,
        ),
        (
            "5 input + 5 output",
            Atom("bench", instant, input=trivial("input", 5), output=trivial("output", 5)),
            TURNS,
            300.0,
        ),
        (
            "one orbital sleeping 10 ms",
            Atom("bench", instant, input=[sleepy_group(1, 0.010)]),
            200,
            None,
        ),
        (
            "parallel 5 x 10 ms",
            Atom("bench", instant, input=[sleepy_group(5, 0.010)]),
            200,
            None,
        ),
    ]
    rows: list[dict[str, Any]] = []
    for label, atom, turns, target in scenarios:
        stats = summarize(await measure(atom, turns))
        verdict = "" if target is None else ("ok" if stats["median_us"] < target else "MISSED")
        rows.append(
            {"scenario": label, **stats, "target_median_us": target, "meets_target": verdict}
        )
    # A group costs its slowest member plus its own overhead: compare with one sleeper.
    single, group = float(rows[-2]["median_us"]), float(rows[-1]["median_us"])
    overhead = round(group - single, 1)
    rows[-1]["target_median_us"] = round(single + 300, 1)
    rows[-1]["meets_target"] = "ok" if overhead < 300 else "MISSED"
    return {"rows": rows, "parallel_group_overhead_us": overhead}


def main() -> None:
    """Measure, print the table, write the JSON."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    results = asyncio.run(run())
    imported = import_time_ms()
    results["import_chatomon_ms"] = round(imported, 1)
    results["import_target_ms"] = 150.0
    print_table(
        "engine overhead per turn (instant nucleus, one core)",
        results["rows"],
        ["scenario", "n", "median_us", "p99_us", "per_second", "target_median_us", "meets_target"],
    )
    print(f"\nparallel group of 5 over one sleeper: {results['parallel_group_overhead_us']} µs")
    print(f"import chatomon: {imported:.1f} ms median (target < 150 ms)")
    print(f"written: {write_results('engine', results)}")


if __name__ == "__main__":
    main()
