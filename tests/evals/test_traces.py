"""Eval traces: one JSON line per case, read back by `python -m chatomon.evals show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.evals.helpers import dataset, result

from chatomon.evals.cli import main
from chatomon.evals.runner import Environment, run_cases
from chatomon.evals.selection import ProviderChoice, select_cases
from chatomon.evals.traces import TraceWriter, format_trace, read_traces


async def write_run(path: Path) -> None:
    selected = select_cases([dataset("toy_write"), dataset("toy_fail")])
    results = await run_cases(selected, ProviderChoice.scripted(), Environment())
    with TraceWriter(path) as traces:
        for one in results:
            traces.write(one)


async def test_a_line_per_case_with_conversation_verdicts_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "evals.jsonl"
    await write_run(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    approved = json.loads(lines[0])
    assert (approved["dataset"], approved["case"], approved["provider"]) == (
        "toy_write", "approved_write", "scripted",
    )  # fmt: skip
    assert approved["passed"] is True and approved["error"] is None
    [turn] = approved["conversation"]
    assert turn["user"] == "Make the Bolt out of Cobalt."
    assert turn["tool_calls"][0]["args"]["mutation"] == "setPartMaterial"
    assert turn["tool_results"][-1]["result"]["status"] == "executed"
    assert [c["decision"] for c in turn["confirmations"]] == ["approve"]
    assert turn["answer"] == "Done: the Bolt is now made of Cobalt."
    assert approved["expectations"][0]["confirmations"] == [
        {"mutation": "setPartMaterial", "decision": "approve"}
    ]
    assert len(approved["verdicts"]) == 5
    [report] = approved["reports"]
    assert report["final_action"] == "answered"
    assert [p["outcome"] for p in report["pauses"]] == ["approved"]
    failed = json.loads(lines[2])
    assert failed["passed"] is False
    assert {"judge": "answer_coverage", "passed": False,
            "reason": "turn 1: the answer lacks 'Bolt'"} in failed["verdicts"]  # fmt: skip


async def test_show_prints_the_traces_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evals.jsonl"
    await write_run(path)
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "PASS  toy_write/approved_write  [scripted]" in shown
    call = '{"mutation": "setPartMaterial", "input": {"part_id": 1, "material_id": 3}}'
    assert f"    tool mutate({call})" in shown
    assert "    confirm setPartMaterial: approve" in shown
    assert "    confirm renameProject: reject" in shown
    assert "    answer: Done: the Bolt is now made of Cobalt." in shown
    assert "FAIL  toy_fail/wrong_answer  [scripted]" in shown
    assert "  FAIL answer_coverage: turn 1: the answer lacks 'Bolt'" in shown
    assert "  passed: tool_sequence, result_accuracy, groundedness, safety\n" in shown
    assert shown.rstrip().endswith("2/3 passed")


def test_a_multi_line_answer_stays_indented_in_its_turn() -> None:
    record = {"case": "a", "conversation": [{"user": "u", "answer": "one\ntwo"}]}
    assert "    answer: one\n            two" in format_trace(record)


def test_a_case_that_could_not_run_keeps_its_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as traces:
        traces.write(result("broken", error="ValueError: no script"))
    [record] = list(read_traces(path))
    assert record["error"] == "ValueError: no script"
    assert record["conversation"] == [] and record["verdicts"] == []


def test_show_names_the_line_that_is_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"case": "a", "passed": true}\n\nnot json\n', encoding="utf-8")
    assert main(["show", str(path)]) == 3
    assert f"{path}:3: not JSON" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "missing.jsonl")]) == 3
