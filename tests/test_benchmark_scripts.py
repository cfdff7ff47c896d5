"""The hand-run benchmark scripts start as their docstrings say: `python tests/benchmarks/X.py`.

They are not part of `make bench` (each runs a real model for minutes to an hour), so
nothing else would notice one that cannot even import from where it is documented to run.
`--help` parses the command line and exits before any model loads.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chatomon.evals import run
from tests.benchmarks.local_evals import JUDGE_NAMES, by_judge

ROOT = Path(__file__).resolve().parents[1]
HAND_RUN = ["local_demo.py", "local_demo_prompts.py", "local_evals.py", "local_model.py"]


@pytest.mark.parametrize("script", HAND_RUN)
def test_a_hand_run_benchmark_starts_from_the_project_root(script: str) -> None:
    ran = subprocess.run(
        [sys.executable, str(Path("tests") / "benchmarks" / script), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "usage:" in ran.stdout


def test_the_eval_benchmark_sums_each_judge_over_the_datasets() -> None:
    def row(cases: int, passed: int, tools: int, not_run: int) -> dict[str, object]:
        judges = dict.fromkeys(JUDGE_NAMES, cases) | {"tool_sequence": tools}
        return {
            "cases": cases,
            "cases_passed": passed,
            "could_not_run": not_run,
            "judges_passed": judges,
            "seconds": 1.5,
        }

    summary = by_judge("local", [row(14, 10, 11, 0), row(9, 5, 6, 2)])

    assert summary == {
        "model": "local",
        "cases passed": "15/23 (65%)",
        "could not run": 2,
        "tool_sequence": "17/23 (74%)",
        "result_accuracy": "23/23 (100%)",
        "answer_coverage": "23/23 (100%)",
        "groundedness": "23/23 (100%)",
        "safety": "23/23 (100%)",
        "seconds": 3.0,
    }
    assert by_judge("none", [])["cases passed"] == "0/0"


def test_the_eval_benchmark_names_the_judges_as_their_verdicts_do() -> None:
    # by_judge counts a verdict under its own name: a judge renamed on one side would
    # silently count 0.
    (cases,) = run("basic_queries").results.values()

    assert [verdict.judge for verdict in cases[0].verdicts] == JUDGE_NAMES
