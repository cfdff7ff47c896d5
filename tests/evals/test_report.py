"""Eval reports: per-dataset tables, failures with -v, comparisons, cost, the progress bar."""

from __future__ import annotations

import io

from tests.evals.helpers import result

from chatomon.evals.judges import Verdict
from chatomon.evals.report import Price, Progress, format_compare, format_report
from chatomon.schemas import TokenUsage

FAILED = (Verdict("answer_coverage", False, "turn 1: the answer lacks 'Bolt'"),)


def lines_of(text: str, start: str) -> list[str]:
    return [line.split() for line in text.splitlines() if line.startswith(start)]


def test_a_table_per_dataset_with_the_counts_and_the_overall_rate() -> None:
    text = format_report(
        [
            result("count_parts", dataset="basic", tool_calls=2, rounds=3, duration_ms=40.4),
            result("list_parts", dataset="basic", verdicts=FAILED),
            result("two_hops", dataset="multi_hop", usage=TokenUsage(input_tokens=5)),
        ]
    )
    assert "basic [scripted]: 1/2 passed (50%)" in text
    assert "multi_hop [scripted]: 1/1 passed (100%)" in text
    assert lines_of(text, "count_parts") == [
        ["count_parts", "PASS", "2", "3", "37", "40", "ms", "—"]
    ]
    assert lines_of(text, "list_parts") == [["list_parts", "FAIL", "1", "2", "37", "12", "ms", "—"]]
    assert lines_of(text, "two_hops")[0][4] == "5"
    assert lines_of(text, "total")[0] == ["total", "1/2", "3", "5", "74", "52", "ms", "—"]
    assert text.splitlines()[-1] == "Overall: 2/3 passed (67%)"
    assert "Failures" not in text


def test_verbose_lists_each_failing_case_with_judge_and_reason() -> None:
    text = format_report(
        [
            result("list_parts", verdicts=FAILED),
            result("broken", error="ValueError: case 'broken': turn 0 has no script to play"),
            result("fine"),
        ],
        verbose=True,
    )
    failures = text.split("Failures:\n", 1)[1]
    assert "basic/list_parts [scripted]: The list_parts case." in failures
    assert "    answer_coverage: turn 1: the answer lacks 'Bolt'" in failures
    assert "    error: ValueError: case 'broken': turn 0 has no script to play" in failures
    assert "fine" not in failures
    assert lines_of(text, "broken")[0][1] == "ERROR"


def test_cost_shows_with_a_price_and_a_dash_without() -> None:
    priced = format_report(
        [result(usage=TokenUsage(input_tokens=1_000_000, output_tokens=250_000))],
        prices={"scripted": Price(0.4, 1.6)},
    )
    assert lines_of(priced, "count_parts")[0][-1] == "0.8000"
    assert lines_of(priced, "total")[0][-1] == "0.8000"
    unpriced = format_report([result()], prices={"other": Price(1, 1)})
    assert lines_of(unpriced, "count_parts")[0][-1] == "—"


def test_compare_gives_a_column_per_provider_per_case_and_per_dataset() -> None:
    text = format_compare(
        {
            "scripted": [result("a"), result("b"), result("c", dataset="multi_hop")],
            "local": [
                result("a", provider="local", verdicts=FAILED),
                result("c", dataset="multi_hop", provider="local"),
            ],
        }
    )
    assert lines_of(text, "case")[0] == ["case", "scripted", "local"]
    assert lines_of(text, "a ") == [["a", "PASS", "FAIL"]]
    assert lines_of(text, "b ") == [["b", "PASS", "—"]]  # never ran for local
    assert lines_of(text, "basic ") == [["basic", "2/2", "(100%)", "0/1", "(0%)"]]
    assert lines_of(text, "multi_hop ") == [["multi_hop", "1/1", "(100%)", "1/1", "(100%)"]]
    assert lines_of(text, "overall") == [["overall", "3/3", "(100%)", "1/2", "(50%)"]]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_for_a_large_run_only() -> None:
    terminal = Terminal()
    bar = Progress(6, terminal, width=6)
    bar.advance(result("a"))
    assert terminal.getvalue().startswith("\r[#.....] 1/6 scripted basic/a")
    bar.finish()
    assert terminal.getvalue().endswith("\r")
    small, piped = Terminal(), io.StringIO()
    for quiet in (Progress(5, small), Progress(60, piped)):
        quiet.advance(result())
        quiet.finish()
        assert quiet.done == 1
    assert small.getvalue() == piped.getvalue() == ""
