"""Comparing two turns: figures with deltas, steps aligned by name, a line diff of the reports."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest

from chatomon.django.models import Turn
from tests.console.conftest import NOW, conversation, make_turn

pytestmark = pytest.mark.django_db

# mypy knows the console as the folder `console`; the installed app is chatomon.console.
compare_turns = importlib.import_module("chatomon.console.turn_compare").compare_turns


def step(kind: str, name: str, started: float, duration: float) -> dict[str, object]:
    return {"kind": kind, "name": name, "started_ms": started, "duration_ms": duration}


def two_turns() -> tuple[Turn, Turn]:
    conv = conversation()
    a = make_turn(
        conv, duration_ms=100.0, tokens=(100, 20),
        steps=[step("provider_round", "P", 0, 40), step("tool_call", "query", 40, 10),
               step("provider_round", "P", 50, 50)],
    )  # fmt: skip
    b = make_turn(
        conv, started_at=NOW + timedelta(minutes=1), duration_ms=130.0, tokens=(80, 25),
        steps=[step("provider_round", "P", 0, 60), step("provider_round", "P", 60, 70)],
    )  # fmt: skip
    return a, b


def test_steps_are_aligned_by_name_with_their_deltas():
    a, b = two_turns()
    rows = [(r.label, r.a_ms, r.b_ms, r.delta_ms) for r in compare_turns(a, b).steps]
    assert rows == [
        ("model · P", 40.0, 60.0, 20.0),
        ("tool · query", 10.0, None, None),
        ("model · P", 50.0, 70.0, 20.0),
    ]


def test_the_compare_page_shows_deltas_steps_and_the_report_diff(staff_client):
    a, b = two_turns()
    # A is the earlier turn whichever comes first in the query.
    html = staff_client.get(f"/console/turns/compare/?t={b.id}&t={a.id}").content.decode()
    figures = html[html.index("cc-compare") : html.index("Steps, aligned by name")]
    assert '<td>100 ms</td><td>130 ms</td><td class="cc-delta">+30 ms</td>' in figures
    assert (
        '<td>100</td><td>80</td><td class="cc-delta">\N{MINUS SIGN}20</td>' in figures
    )  # input tokens
    steps = html[html.index("Steps, aligned by name") : html.index("Raw reports")]
    assert steps.count('<th scope="row">model · P</th>') == 2 and "not run" in steps
    diff = html[html.index('class="cc-json cc-diff"') :]
    assert '--removed">\N{MINUS SIGN}  &quot;duration_ms&quot;: 100.0,' in diff
    assert '--added">+  &quot;duration_ms&quot;: 130.0,' in diff


def test_a_comparison_needs_exactly_two_turns(staff_client, db):
    (a, _) = two_turns()
    response = staff_client.get(f"/console/turns/compare/?t={a.id}")
    assert response.status_code == 400
    assert "Choose exactly two turns to compare (1 chosen)." in response.content.decode()
    assert staff_client.get(f"/console/turns/compare/?t={a.id}&t=nope").status_code == 404


def test_the_turn_page_links_its_neighbours_and_the_comparison_with_the_previous(staff_client):
    a, b = two_turns()
    first = staff_client.get(f"/console/turns/{a.id}/").content.decode()
    assert f'rel="next" href="/console/turns/{b.id}/"' in first
    assert "First turn of the conversation" in first
    second = staff_client.get(f"/console/turns/{b.id}/").content.decode()
    assert f'rel="prev" href="/console/turns/{a.id}/"' in second
    assert f'href="/console/turns/compare/?t={a.id}&amp;t={b.id}"' in second


def test_the_turn_list_selects_turns_to_compare(staff_client):
    a, b = two_turns()
    html = staff_client.get("/console/turns/").content.decode()
    assert '<form id="cc-compare"' in html and 'action="/console/turns/compare/"' in html
    for turn in (a, b):
        assert f'name="t" value="{turn.id}" form="cc-compare"' in html
