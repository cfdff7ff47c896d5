"""The turn waterfall: recorded steps where they ran, or the derived estimate of old reports."""

from __future__ import annotations

import importlib

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
