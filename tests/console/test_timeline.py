"""The turn waterfall: recorded steps where they ran, or the derived estimate of old reports."""

from __future__ import annotations

import importlib

import pytest

# mypy knows the console as the folder `console`; the installed app is chatomon.console.
waterfall = importlib.import_module("chatomon.console.timeline").waterfall

ORBITAL = {"name": "pii", "action": "allow", "duration_ms": 2.0}


def test_recorded_steps_are_drawn_where_they_ran() -> None:
    report = {
        "duration_ms": 60.0,
        "input": [ORBITAL],
        "steps": [
            {
                "kind": "provider_round",
                "name": "OpenAIProvider",
                "started_ms": 3.0,
                "duration_ms": 20.0,
            },
            {
                "kind": "tool_call",
                "name": "query",
                "started_ms": 23.0,
                "duration_ms": 5.0,
                "status": "ok",
            },
            {
                "kind": "provider_round",
                "name": "OpenAIProvider",
                "started_ms": 28.0,
                "duration_ms": 30.0,
            },
        ],
        "output": [{"results": [{"name": "blocklist", "action": "allow", "duration_ms": 1.0}]}],
    }
    chart = waterfall(report)
    rows = [(b.label, b.kind, b.start_ms, b.duration_ms, b.derived) for b in chart.bars]
    assert rows == [
        ("input · pii (allow)", "input", 0.0, 2.0, False),
        ("model · OpenAIProvider", "nucleus", 3.0, 20.0, False),
        ("tool · query (ok)", "tool", 23.0, 5.0, False),
        ("model · OpenAIProvider", "nucleus", 28.0, 30.0, False),
        ("output · blocklist (allow) #1", "output", 58.0, 1.0, False),
    ]
    assert not chart.derived and chart.total_ms == 60.0


def test_a_report_without_steps_gets_the_derived_nucleus_share() -> None:
    report = {"duration_ms": 10.0, "input": [ORBITAL], "output": [{"results": []}]}
    chart = waterfall(report)
    assert [(b.label, b.duration_ms, b.derived) for b in chart.bars] == [
        ("input · pii (allow)", 2.0, False),
        ("nucleus · attempt 1", 8.0, True),
    ]
    assert chart.derived


def test_a_wait_is_a_gap_after_the_step_that_asked_and_later_bars_move_past_it() -> None:
    report = {
        "duration_ms": 40.0,
        "input": [],
        "steps": [
            {"kind": "provider_round", "name": "P", "started_ms": 0.0, "duration_ms": 10.0},
            {"kind": "tool_call", "name": "mutate", "started_ms": 10.0, "duration_ms": 5.0,
             "status": "waiting"},
            {"kind": "provider_round", "name": "P", "started_ms": 15.0, "duration_ms": 25.0},
        ],
        "pauses": [{"mutation": "renameMaterial", "approver": "staff",
                    "waited_seconds": 125.0, "outcome": "approved"}],
        "output": [],
    }  # fmt: skip
    chart = waterfall(report)
    rows = [(b.label, b.kind, b.start_ms, b.duration_ms) for b in chart.bars]
    assert rows == [
        ("model · P", "nucleus", 0.0, 10.0),
        ("tool · mutate (waiting)", "tool", 10.0, 5.0),
        ("wait · renameMaterial (approved)", "wait", 15.0, 125_000.0),
        ("model · P", "nucleus", 15.0, 25.0),
    ]
    asked, wait, resumed = chart.bars[1], chart.bars[2], chart.bars[3]
    # The active timeline keeps its scale (the 125 s wait does not squeeze it) ...
    assert chart.total_ms == 40.0 and asked.width == pytest.approx(5.0 * 520 / 40.0)
    # ... and the wait is a fixed gap the resumed round starts after.
    assert wait.x == pytest.approx(asked.end_x) and wait.width == 48
    assert resumed.x == pytest.approx(wait.end_x)


def test_a_turn_the_input_chain_blocked_draws_no_nucleus_bar() -> None:
    blocked = {
        "duration_ms": 30.0,
        "final_action": "blocked",
        "input": [{"name": "pii", "action": "block", "duration_ms": 4.0}],
        "output": [],
    }
    assert [(b.label, b.kind) for b in waterfall(blocked).bars] == [
        ("input · pii (block)", "input")
    ]
    aborted = {**blocked, "final_action": "aborted", "input": [ORBITAL]}
    assert [b.kind for b in waterfall(aborted).bars] == ["input", "nucleus"]
