"""The embedded models on the eval datasets: pass rates per dataset and judge, as a measurement.

Run: `python tests/benchmarks/local_evals.py [--model local] [--model local:smollm2]
[--dataset NAME ...] [--temperature 0 --seed 7]` (default: the default local model, with
its own sampling settings, on every legacy dataset). Each case runs through the real
pipeline with the model (`chatomon.evals.run`, no Django), one case at a time; progress
goes to stderr. Printed: a table per model of its datasets; one row per model of how many
cases each judge passed over every dataset run; then each failing case with its failing
judges. The judges:

- `tool_sequence`: the right tools with the expected arguments (manager, filters);
- `result_accuracy`: the tool results hold what the question needs (filters complete);
- `answer_coverage`: the answer names what was asked;
- `groundedness`: every number and name of the answer is in the results or the question;
- `safety`: no write without an approval, none asked by a read-only question.

A case passes when every judge does. A case that could not run (the provider failed) has no
verdicts: it counts against every judge, and the `could not run` column counts it.
`results/local_evals.json` keeps the rows and the per-model table. It is a measurement, not
a gate: the scripted run of the same datasets is the test suite's gate
(tests/evals/test_datasets.py).

On a 2-core machine the default model takes several seconds per case: `basic_queries`,
`demo_readiness` and `multi_hop` together take about 5 minutes, the six legacy datasets
under an hour.
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
from chatomon.evals.judges.checks import JUDGES
from chatomon.providers.registry import build_provider
from tests.benchmarks.reporting import print_table, write_results

JUDGE_NAMES = [judge.__name__ for judge in JUDGES]


def measure(model: str, datasets: list[str], config: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per dataset: cases passed, each judge's passes, the failures, seconds.

    `config` goes over the provider's own (`temperature`, `seed`); each dataset gets a
    provider of its own, which its run closes.
    """
    rows = []
    for name in datasets:
        print(f"{name}: running with {model} {config or ''}...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        result = run(name, provider=build_provider(model, config))
        seconds = time.perf_counter() - started
        ((_, cases),) = result.results.items()
        judges: Counter[str] = Counter()
        for case in cases:
            judges.update(verdict.judge for verdict in case.verdicts if verdict.passed)
        passed = sum(case.passed for case in cases)
        rows.append(
            {
                "model": model,
                "dataset": name,
                "cases": len(cases),
                "cases_passed": passed,
                "could_not_run": sum(case.error is not None for case in cases),
                "pass_rate": round(passed / len(cases), 3) if cases else 0.0,
                "judges_passed": {judge: judges[judge] for judge in JUDGE_NAMES},
                "failed": {
                    case.case.name: case.error or ", ".join(v.judge for v in case.failures)
                    for case in cases
                    if not case.passed
                },
                "seconds": round(seconds, 1),
            }
        )
    return rows


def by_judge(model: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One model's row over its datasets: cases passed, and passed by each judge."""
    cases = sum(row["cases"] for row in rows)
    passed = sum(row["cases_passed"] for row in rows)

    def share(count: int) -> str:
        return f"{count}/{cases} ({count / cases:.0%})" if cases else "0/0"

    return {
        "model": model,
        "cases passed": share(passed),
        "could not run": sum(row["could_not_run"] for row in rows),
        **{judge: share(sum(row["judges_passed"][judge] for row in rows)) for judge in JUDGE_NAMES},
        "seconds": round(sum(row["seconds"] for row in rows), 1),
    }


def main() -> None:
    """Measure each model, print the tables, write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        action="append",
        help="a provider name, repeatable: local (the default), local:smollm2",
    )
    parser.add_argument("--dataset", action="append", choices=LEGACY_DATASETS)
    parser.add_argument("--temperature", type=float, help="over the provider's own (0.2)")
    parser.add_argument("--seed", type=int, help="for repeatable sampling (default: random)")
    args = parser.parse_args()
    models: list[str] = list(dict.fromkeys(args.model or ["local"]))
    datasets: list[str] = args.dataset or list(LEGACY_DATASETS)
    config = {
        key: value
        for key, value in (("temperature", args.temperature), ("seed", args.seed))
        if value is not None
    }
    measured = {model: measure(model, datasets, config) for model in models}
    for model, rows in measured.items():
        print_table(
            f"the eval datasets with {model} (pass rate: cases passing every judge)",
            [{**row, "passed": f"{row['cases_passed']}/{row['cases']}"} for row in rows],
            ["dataset", "passed", "pass_rate", "seconds"],
        )
    summary = [by_judge(model, rows) for model, rows in measured.items()]
    print_table(
        f"cases each judge passed, over {', '.join(datasets)}",
        summary,
        ["model", "cases passed", *JUDGE_NAMES, "could not run", "seconds"],
    )
    for model, rows in measured.items():
        for row in rows:
            for case, why in row["failed"].items():
                print(f"{model} {row['dataset']} {case}: {why}")
    payload = {"models": models, "datasets": datasets, "config": config, "summary": summary,
               "rows": [row for rows in measured.values() for row in rows]}  # fmt: skip
    print(f"written: {write_results('local_evals', payload)}")


if __name__ == "__main__":
    main()
