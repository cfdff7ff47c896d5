"""The embedded model on the eval datasets: its pass rate per dataset, as a measurement.

Run: `python tests/benchmarks/local_evals.py [--model local|local:smollm2] [--dataset NAME ...]`
(default: the default local model on every legacy dataset). Each case runs through the real
pipeline with the model (`chatomon.evals.run`, no Django), one case at a time; progress goes
to stderr, a table per dataset to stdout, and `results/local_evals.json` keeps the rates,
each judge's passes and the time taken. It is a measurement, not a gate: the scripted run
of the same datasets is the test suite's gate (tests/evals/test_datasets.py).

On a 2-core machine the default model takes tens of seconds per case: the six legacy
datasets take about an hour.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: tests importable

from chatomon.evals import run
from chatomon.evals.cases import LEGACY_DATASETS
from tests.benchmarks.reporting import print_table, write_results


def measure(model: str, datasets: list[str]) -> list[dict[str, Any]]:
    """One row per dataset: cases passed, each judge's passes, seconds."""
    rows = []
    for name in datasets:
        print(f"{name}: running with {model} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        result = run(name, provider=model)
        seconds = time.perf_counter() - started
        cases = result.results[model]
        judges: Counter[str] = Counter()
        for case in cases:
            judges.update(verdict.judge for verdict in case.verdicts if verdict.passed)
        passed = sum(case.passed for case in cases)
        rows.append(
            {
                "dataset": name,
                "passed": f"{passed}/{len(cases)}",
                "pass_rate": round(passed / len(cases), 3) if cases else 0.0,
                "judges_passed": dict(sorted(judges.items())),
                "seconds": round(seconds, 1),
            }
        )
    return rows


def main() -> None:
    """Measure, print the table, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="local (the default), local:smollm2")
    parser.add_argument("--dataset", action="append", choices=LEGACY_DATASETS)
    args = parser.parse_args()
    rows = measure(args.model, args.dataset or list(LEGACY_DATASETS))
    print_table(
        f"the eval datasets with {args.model} (pass rate: cases passing every judge)",
        rows,
        ["dataset", "passed", "pass_rate", "seconds"],
    )
    print(f"written: {write_results('local_evals', {'model': args.model, 'rows': rows})}")


if __name__ == "__main__":
    main()
