"""`chatomon.evals.run(...)`: results with a rich display and a DataFrame, without Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.evals.helpers import DATA
from tests.evals.providers import Shrugging

import chatomon.evals
from chatomon.evals.notebook import EvalRunResult, run

FILES = [DATA / "toy_pass.yaml", DATA / "toy_fail.yaml"]


def test_importing_the_package_loads_neither_django_nor_the_pipeline() -> None:
    code = (
        "import sys, chatomon.evals; "
        "print(any(m.startswith(('django', 'chatomon.chat')) for m in sys.modules))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.strip() == "False"
    assert chatomon.evals.run is run
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        chatomon.evals.nothing  # noqa: B018


def test_a_run_gives_rows_rates_and_the_text_report() -> None:
    result = run(dataset_files=FILES)
    assert isinstance(result, EvalRunResult) and not result.passed
    assert [(r["dataset"], r["case"], r["passed"]) for r in result.rows()] == [
        ("toy_pass", "list_parts", True),
        ("toy_pass", "greeting", True),
        ("toy_fail", "wrong_answer", False),
    ]
    assert result.rows()[2]["failed_judges"] == "answer_coverage"
    assert result.rows()[0]["input_tokens"] == 30
    assert result.pass_rates() == {("toy_pass", "scripted"): 1.0, ("toy_fail", "scripted"): 0.0}
    assert "toy_pass [scripted]: 2/2 passed (100%)" in str(result)
    assert "answer_coverage: turn 1" in result.report(verbose=True)


def test_compare_and_the_rich_display() -> None:
    result = run(dataset_files=FILES[:1], compare=["scripted", Shrugging()], tier=1)
    assert list(result.results) == ["scripted", "Shrugging"]
    assert result.pass_rates() == {("toy_pass", "scripted"): 1.0, ("toy_pass", "Shrugging"): 0.0}
    html = result._repr_html_()
    assert "<th>scripted</th><th>Shrugging</th>" in html
    assert "<tr><th>toy_pass</th><td>100%</td><td>0%</td></tr>" in html
    assert "1 case result(s) failed" in html
    assert "Per dataset:" in result.report()


def test_to_dataframe_has_a_row_per_case_and_provider() -> None:
    frame = run(dataset_files=FILES).to_dataframe()
    assert list(frame["case"]) == ["list_parts", "greeting", "wrong_answer"]
    assert list(frame["passed"]) == [True, True, False]


async def test_run_works_inside_a_running_event_loop() -> None:
    # As in Jupyter, where a loop already runs: the run gets its own loop in a thread.
    result = run(dataset_files=FILES[:1], tags=["read"])
    assert [r["case"] for r in result.rows()] == ["list_parts"] and result.passed
