"""Rich display of a planned turn: the PlannedTurnReport alone (HTML, Markdown, text) and
inside its TurnReport, the tasks drawn as the console's tree with status, role, calls,
evidence and the reason of what stayed unresolved."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from chatomon.notebook.display import render_html, render_markdown, render_mimebundle
from chatomon.notebook.markup import SCOPE
from chatomon.notebook.plan_views import plan_rows
from chatomon.schemas import (
    PlannedTaskReport,
    PlannedTurnReport,
    TurnReport,
)
from tests.notebooks.test_display import HOSTILE, hostile_report, tags_of
from tests.planned.reports import sample_plan

ALLOWED_TAGS = {"style", "div", "span", "b", "table", "thead", "tbody", "tr", "th", "td"}


def planned(**overrides: Any) -> PlannedTurnReport:
    """The shared plan, its second root asking hostile text (escaped everywhere)."""
    return sample_plan(second_question=HOSTILE, **overrides)


def turn_with(plan: PlannedTurnReport | None) -> TurnReport:
    return TurnReport(
        turn_id="t-1", conversation_id=None, atom_name="parts",
        started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), duration_ms=50.0,
        final_action="answered", escalated=False, input=(), output=(), planned=plan,
    )  # fmt: skip


def test_the_tasks_are_in_tree_order_with_their_depth_and_reason():
    rows = plan_rows(planned())
    assert [(row.task.id, row.depth) for row in rows] == [
        ("t1", 0), ("t3", 1), ("t1a", 1), ("t2", 0),
    ]  # fmt: skip
    reasons = {row.task.id: row.reason for row in rows}
    # Its own reason, else the coverage's; none for a resolved task.
    assert reasons == {
        "t1": None,
        "t3": "dependency_blocked",
        "t1a": None,
        "t2": "budget_exhausted",
    }


def test_a_stored_loop_is_drawn_once():
    looped = planned(tasks=(PlannedTaskReport(id="a", parent_id="b"),
                            PlannedTaskReport(id="b", parent_id="a")))  # fmt: skip
    assert [(row.task.id, row.depth) for row in plan_rows(looped)] == [("a", 0), ("b", 1)]


def test_html_shows_coverage_budget_and_the_indented_tree_escaped():
    html = render_html(planned())
    assert f'<div class="{SCOPE} cm-scoped">' in html
    assert set(tags_of(html)) <= ALLOWED_TAGS
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert '<span class="cm-badge cm-notice">partial</span> 2 of 4 resolved' in html
    assert "14 of 24 rounds · 2 planner attempts · 9876 prompt characters" in html
    assert (
        '<div style="padding-left:16px">└ <b>t3</b> <span class="cm-muted">needs t1</span>' in html
    )
    assert '<b>t1a</b> <span class="cm-muted">child of t1</span>' in html
    assert '<span class="cm-badge cm-bad">budget_exhausted</span>' in html
    assert '<div class="cm-muted">dependency_blocked</div>' in html
    assert "e1 query from query: 3 rows" in html and 'cm-neutral">reused</span>' in html
    assert "PartManager" in html and "2 rounds" in html


def test_a_mutation_plan_says_where_the_turn_went():
    html = render_html(planned(intent="mutation", tasks=(), coverage=None))
    assert "the turn went on through the tool loop" in html and "<table>" not in html


def test_markdown_and_text_follow_the_tree():
    bundle = render_mimebundle(planned())
    assert set(bundle) == {"text/plain", "text/markdown"}
    markdown = bundle["text/markdown"]
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 4 and all(line.count(" | ") == 6 for line in rows)  # "|" in content
    assert "<script>" not in markdown and "↳ t3" in markdown
    text = bundle["text/plain"].splitlines()
    assert text[0].startswith("PlannedTurnReport read: partial, 2/4 tasks resolved; 14/24 rounds")
    assert text[1] == "  t1 resolved simple_executor 2 rounds calls c1,c9 evidence e1,e2"
    assert text[2] == "    t3 blocked (dependency_blocked) - 0 rounds"


def test_a_turn_report_shows_its_plan_and_a_tool_loop_turn_none():
    html = render_html(turn_with(planned()))
    assert "<details open><summary>Plan (4 tasks, partial)</summary>" in html
    assert re.search(r"<b>t1a</b>", html)
    assert "Plan (" not in render_html(turn_with(None))
    text = render_mimebundle(turn_with(planned()))["text/plain"].splitlines()
    assert text[1].startswith("  PlannedTurnReport read: partial")
    assert len(render_mimebundle(turn_with(None))["text/plain"].splitlines()) == 1
    assert "**Planned turn**" in render_markdown(turn_with(planned()))
    assert "Planned turn" not in render_markdown(hostile_report())


def test_a_reason_the_status_already_says_is_not_repeated():
    text = render_mimebundle(planned())["text/plain"]
    assert "  t2 budget_exhausted complex_executor 8 rounds" in text.splitlines()
    assert "(budget_exhausted)" not in text


def test_a_planned_report_displays_itself_in_jupyter() -> None:
    assert planned()._repr_html_() == render_html(planned())
