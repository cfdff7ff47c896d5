"""tests/benchmarks/local_demo_prompts.py, run on scripted models so that it cannot rot.

The benchmark asks the demo page's suggested prompts of a served demo; here the demo answers
with scripted providers (no model, a few seconds), and the judging is also checked on
conversations that go wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chatomon.demo.prompts import SUGGESTED_PROMPTS, SuggestedPrompt
from tests.benchmarks.local_demo_prompts import Facts, asked_prompts, judge, main
from tests.demo.process import manage

RIGHT = "tests.demo.prompts_provider.PromptsProvider"
COUNTS_PARTS = "tests.browser.provider.DemoScriptProvider"  # answers the read with a count
READ, COST, ASSIGN = SUGGESTED_PROMPTS


def measure(data_dir: Path, provider: str, output: Path) -> dict[str, Any]:
    args = ["--runs", "1", "--provider", provider, "--data", str(data_dir)]
    payload = main([*args, "--output", str(output)])
    assert json.loads(output.read_text()) == payload
    return payload


def verdicts(payload: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {row["expects"]: (row["passed"], row["why"]) for row in payload["rows"]}


def test_the_prompts_judged_on_the_demo_data(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    data.mkdir()
    first = measure(data, RIGHT, tmp_path / "first.json")
    using = first["facts"]["using"]["P-1002"]
    assert "PRJ-101" in using and "PRJ-102" not in using  # read from the seeded data
    assert verdicts(first) == {
        "read": (True, f"named {', '.join(using)}"),
        "staff_approval": (True, "waits for staff"),
        "client_confirmation": (True, "asks the user"),
    }
    assert first["passes"] == {prompt.text: "1/1" for prompt in SUGGESTED_PROMPTS}
    assert len(first["load_average_at_start"]) == 3

    # The data now holds the assignment: asked again, the demo says so and asks nothing.
    manage(data, "shell", "-c", (
        "from chatomon.demo.models import Part, Project;"
        "Project.objects.get(code='PRJ-102').parts.add(Part.objects.get(number='P-1002'))"
    ))  # fmt: skip
    second = measure(data, COUNTS_PARTS, tmp_path / "second.json")
    assert "PRJ-102" in second["facts"]["using"]["P-1002"]
    judged = verdicts(second)
    assert judged["client_confirmation"] == (True, "already assigned: said so, asked nothing")
    assert judged["staff_approval"] == (True, "waits for staff")
    passed, why = judged["read"]
    assert not passed and why.startswith("lacks PRJ-101, PRJ-102")
    assert "answer 'Acme Parts has 240 parts in its catalogue.'" in why
    assert second["passes"][READ.text] == "0/1"


FACTS = Facts(
    projects={"PRJ-101": "Falcon gripper", "PRJ-102": "Harbor bogie", "PRJ-103": "Summit pump"},
    using={"P-1002": ["PRJ-101", "PRJ-103"]},
    part_ids={"P-1001": 1, "P-1002": 2},
    project_ids={"PRJ-101": 11, "PRJ-102": 12},
    assigned=frozenset({("P-1002", "PRJ-101")}),
    pending={},
)


def said(text: str) -> list[dict[str, Any]]:
    return [{"type": "text_chunk", "content": text}, {"type": "done", "reply": text}]


def asked(mutation: str, approver: str, **data: Any) -> list[dict[str, Any]]:
    return [
        {"type": "tool_call", "name": "mutate", "args": {"mutation": mutation, "input": data}},
        {"type": "confirm_mutation", "id": "c-1", "mutation": mutation, "input": data,
         "approver": approver},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("events", "passed", "why"),
    [
        (said("PRJ-101 and Summit pump use it."), True, "named PRJ-101, PRJ-103"),
        (said("PRJ-101 uses it."), False, "lacks PRJ-103"),
        (said("PRJ-101, PRJ-103 and PRJ-102."), False, "names PRJ-102, which do not use P-1002"),
        (
            [{"type": "error", "code": "chat_error"}],
            False,
            "lacks PRJ-101, PRJ-103 (error chat_error)",
        ),
    ],
)
def test_the_read_names_every_project_using_the_part_and_no_other(
    events: list[dict[str, Any]], passed: bool, why: str
) -> None:
    verdict = judge(READ, events, FACTS, {})
    assert (verdict.passed, verdict.why.split(" (tools")[0]) == (passed, why)


def test_the_cost_change_waits_for_staff_with_the_right_input() -> None:
    right = asked("updatePartCost", "staff", part_id=1, unit_cost="14.5")
    assert judge(COST, right, FACTS, {"c-1": "staff"}).why == "waits for staff"
    # The demo's mutations also take the part's number.
    by_number = asked("updatePartCost", "staff", part_id="p-1001", unit_cost=14.5)
    assert judge(COST, by_number, FACTS, {"c-1": "staff"}).passed
    other = asked("updatePartCost", "staff", part_id="P-1002", unit_cost="14.50")
    assert not judge(COST, other, FACTS, {"c-1": "staff"}).passed
    cheaper = asked("updatePartCost", "staff", part_id=1, unit_cost="14.05")
    assert not judge(COST, cheaper, FACTS, {"c-1": "staff"}).passed
    assert judge(COST, right, FACTS, {}).why == "no pending staff confirmation in the database"
    wrong = judge(COST, asked("updatePartCost", "staff", part_id=2, unit_cost="14.50"), FACTS, {})
    assert wrong.why.startswith('wrong input {"part_id": 2') and not wrong.passed
    client = judge(COST, asked("assignPartToProject", "client"), FACTS, {"c-1": "client"})
    assert client.why == "asked client for assignPartToProject"


def test_the_assignment_asks_the_user_or_says_it_is_already_there() -> None:
    right = asked("assignPartToProject", "client", part_id=2, project_id=12)
    assert judge(ASSIGN, right, FACTS, {"c-1": "client"}).why == "asks the user"
    wrong = asked("assignPartToProject", "client", part_id=2, project_id=11)
    assert not judge(ASSIGN, wrong, FACTS, {"c-1": "client"}).passed
    by_code = asked("assignPartToProject", "client", part_id="P-1002", project_id="prj-102")
    assert judge(ASSIGN, by_code, FACTS, {"c-1": "client"}).passed
    mixed = asked("assignPartToProject", "client", part_id="2", project_id="PRJ-101")
    assert not judge(ASSIGN, mixed, FACTS, {"c-1": "client"}).passed
    there = SuggestedPrompt("Assign part P-1002 to project PRJ-101", "client_confirmation")
    unchanged = [
        {"type": "tool_result", "name": "mutate", "result": {"status": "unchanged"}},
        *said("Part P-1002 is already in PRJ-101."),
    ]
    assert judge(there, unchanged, FACTS, {}).why == "already assigned: said so, asked nothing"
    silent = judge(there, [*unchanged[:1], *said("Done.")], FACTS, {})
    assert silent.why.startswith("the answer does not say so")
    asking = judge(
        there, asked("assignPartToProject", "client", part_id=2, project_id=11), FACTS, {}
    )
    assert asking.why == "asked client although P-1002 is in PRJ-101"


def test_ask_replaces_the_pages_prompts() -> None:
    import argparse  # noqa: PLC0415 - only this test builds a parser

    parser = argparse.ArgumentParser()
    (prompt,) = asked_prompts(["Assign part P-1 to project PRJ-1 = x=client_confirmation"], parser)
    assert prompt == SuggestedPrompt("Assign part P-1 to project PRJ-1 = x", "client_confirmation")
    for bad in ["no kind", "=read", "Which projects?=write"]:
        with pytest.raises(SystemExit) as exit_info:
            asked_prompts([bad], parser)
        assert exit_info.value.code == 2
