"""TurnReports as DataFrames: one row per orbital run, a row for every turn, and a clear error
without pandas."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

from chatomon import Atom, Blocklist, MaxLength, TurnReport
from chatomon.errors import OptionalDependencyError
from chatomon.notebook import report_rows, reports_to_dataframe
from chatomon.notebook.dataframes import COLUMNS, TURN_COLUMNS


def two_reports() -> list[TurnReport]:
    replies = iter(["Acme makes it.", "We make it."])
    atom = Atom(
        "shop",
        nucleus=lambda messages, guidance: next(replies),
        input=[MaxLength(50)],
        output=[Blocklist(["Acme"])],
    )
    first = atom.chat_sync("Who makes it?").report
    second = Atom("plain", nucleus=lambda m, g: "ok").chat_sync("hi").report
    return [first, second]


def test_one_row_per_orbital_run_with_the_attempt_decision() -> None:
    report = two_reports()[0]
    frame = report.to_dataframe()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(COLUMNS)
    runs = 1 + sum(len(attempt.results) for attempt in report.output)
    assert len(frame) == runs == len(report_rows(report))
    assert list(frame["side"]) == ["input"] + ["output"] * (runs - 1)
    assert pd.isna(frame["decision"].iloc[0])
    assert list(frame["decision"].iloc[1:]) == [a.decision for a in report.output]
    assert set(frame["turn_id"]) == {report.turn_id}
    assert (frame["duration_ms"] >= 0).all()


def test_many_reports_concatenate_and_a_turn_without_orbitals_is_one_row() -> None:
    first, second = two_reports()
    frame = reports_to_dataframe([first, second])
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == len(report_rows(first)) + 1
    assert list(frame["turn_id"]) == [first.turn_id] * len(report_rows(first)) + [second.turn_id]
    bare = frame.iloc[-1]
    assert (bare["atom_name"], bare["final_action"]) == ("plain", second.final_action)
    assert pd.isna(bare["orbital"]) and pd.isna(bare["side"])


def test_the_readme_case_a_service_without_orbitals_gives_one_row_per_turn() -> None:
    atom = Atom("plain", nucleus=lambda m, g: "ok")
    reports = [atom.chat_sync(text).report for text in ("hi", "again", "bye")]
    frame = reports_to_dataframe(reports)
    assert len(frame) == 3
    assert list(frame["turn_id"]) == [report.turn_id for report in reports]
    assert reports_to_dataframe([]).empty


def test_level_turn_gives_one_row_per_turn_with_its_counts() -> None:
    first, second = two_reports()
    frame = reports_to_dataframe([first, second], level="turn")
    assert list(frame.columns) == list(TURN_COLUMNS)
    assert list(frame["turn_id"]) == [first.turn_id, second.turn_id]
    assert list(frame["orbital_runs"]) == [len(report_rows(first)), 0]
    assert list(frame["output_attempts"]) == [len(first.output), len(second.output)]
    assert first.to_dataframe().shape[0] == len(report_rows(first))
    with pytest.raises(ValueError, match="level"):
        reports_to_dataframe([first], level="attempt")


def test_without_pandas_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    report = two_reports()[1]
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(OptionalDependencyError) as caught:
        report.to_dataframe()
    error = caught.value
    assert isinstance(error, ImportError)
    assert (error.package, error.extra) == ("pandas", "pandas")
    assert 'pip install "chatomon[pandas]"' in str(error)
    assert "report.to_dataframe()" in str(error)
    with pytest.raises(OptionalDependencyError, match="reports_to_dataframe"):
        reports_to_dataframe([report])
