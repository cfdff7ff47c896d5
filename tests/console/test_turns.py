"""Turns: query-string filters, sorting, pagination, full page vs partial, detail, exports."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

from chatomon.django.models import ChatMessage, Turn
from tests.console.conftest import NOW, conversation, make_turn, orbital

pytestmark = pytest.mark.django_db


TURNS: dict[str, str] = {}


@pytest.fixture
def turns(db):
    bob = User.objects.create_user("bob")
    bobs = conversation(str(bob.pk))
    made = {
        "plain": make_turn(bobs, duration_ms=50.0),
        "blocked": make_turn(
            final_action="blocked", input=[orbital("pii", "block", reason="pii")],
            started_at=NOW - timedelta(days=3), duration_ms=900.0,
        ),
        "escalated": make_turn(escalated=True, atom_name="support", duration_ms=300.0),
        "error": make_turn(
            final_action="aborted", status="aborted", error_type="ProviderError",
            output=[{"results": [orbital("tone", side="output")], "decision": None}],
        ),
        "output_stop": make_turn(
            bobs,
            output=[
                {"results": [orbital("tone", "block", side="output")], "decision": "regenerate"},
                {"results": [orbital("tone", side="output", error_type="TimeoutError")],
                 "decision": "accept"},
            ],
        ),
    }  # fmt: skip
    TURNS.clear()
    TURNS.update({t.id: name for name, t in made.items()})
    return {name: t.id for name, t in made.items()}


def names(response: Any) -> set[str]:
    html = response.content.decode()
    return {name for tid, name in TURNS.items() if f"/console/turns/{tid}/" in html}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {"plain", "blocked", "escalated", "error", "output_stop"}),
        ("final_action=blocked", {"blocked"}),
        ("escalated=yes", {"escalated"}),
        ("escalated=no", {"plain", "blocked", "error", "output_stop"}),
        ("atom=support", {"escalated"}),
        ("orbital=pii", {"blocked"}),
        ("orbital=tone", {"output_stop"}),
        ("user=bob", {"plain", "output_stop"}),
        ("failed=yes", {"error", "output_stop"}),
        ("failed=no", {"plain", "blocked", "escalated"}),
        ("min_duration_ms=300", {"blocked", "escalated"}),
        (f"date_from={NOW - timedelta(days=4):%Y-%m-%d}&date_to={NOW - timedelta(days=2):%Y-%m-%d}",
         {"blocked"}),
        (f"date_from={NOW.date()}", {"plain", "escalated", "error", "output_stop"}),
    ],
)  # fmt: skip
def test_filters(staff_client, turns, query, expected):
    assert names(staff_client.get(f"/console/turns/?{query}")) == expected


def test_conversation_filter(staff_client, turns):
    conversation_id = Turn.objects.get(pk=turns["plain"]).conversation_id
    response = staff_client.get(f"/console/turns/?conversation={conversation_id}")
    assert names(response) == {"plain", "output_stop"}


def test_an_invalid_filter_shows_its_error_and_keeps_the_others(staff_client, turns):
    response = staff_client.get("/console/turns/?min_duration_ms=abc&final_action=blocked")
    assert names(response) == {"blocked"}
    assert "Enter a whole number." in response.content.decode()


def test_sorting_by_duration(staff_client, turns):
    html = staff_client.get("/console/turns/?sort=slowest").content.decode()
    order = sorted(TURNS, key=lambda tid: html.find(f"/console/turns/{tid}/"))
    assert [TURNS[t] for t in order][:2] == ["blocked", "escalated"]


def test_full_page_and_htmx_partial_vary_on_hx_request(staff_client, htmx_client, turns):
    full = staff_client.get("/console/turns/?final_action=blocked")
    part = htmx_client.get("/console/turns/?final_action=blocked")
    assert b"<html" in full.content and b'id="cc-turn-results"' in full.content
    assert b"<html" not in part.content and part.content.lstrip().startswith(
        b'<section id="cc-turn-results"'
    )
    assert "HX-Request" in full["Vary"] and "HX-Request" in part["Vary"]
    assert names(part) == {"blocked"}


def test_pagination_links_keep_the_filters(staff_client, db):
    for _ in range(30):
        make_turn(final_action="blocked")
    html = staff_client.get("/console/turns/?final_action=blocked").content.decode()
    assert 'href="?final_action=blocked&amp;page=2"' in html
    second = staff_client.get("/console/turns/?final_action=blocked&page=2").content.decode()
    assert "Page 2 of 2 (30 in all)" in second
    assert 'href="?final_action=blocked&amp;page=1"' in second


def test_export_links_carry_exactly_the_filters(staff_client, turns):
    html = staff_client.get("/console/turns/?escalated=no&page=1").content.decode()
    assert 'href="/console/turns/export.csv?escalated=no"' in html


def test_csv_export_holds_exactly_the_filtered_turns(staff_client, turns):
    response = staff_client.get("/console/turns/export.csv?user=bob")
    assert response["Content-Disposition"] == 'attachment; filename="turns.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {TURNS[r["turn_id"]] for r in rows} == {"plain", "output_stop"}
    assert {r["owner"] for r in rows} == {"bob"}


def test_jsonl_export_holds_the_reports(staff_client, turns):
    response = staff_client.get("/console/turns/export.jsonl?orbital=pii")
    lines = b"".join(response.streaming_content).decode().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [TURNS[r["turn_id"]] for r in rows] == ["blocked"]
    assert rows[0]["report"]["input"][0]["name"] == "pii"


def test_detail_shows_chains_waterfall_usage_and_raw_json(staff_client, htmx_client, turns):
    url = f"/console/turns/{turns['output_stop']}/"
    html = staff_client.get(url).content.decode()
    assert "Attempt 2" in html and "TimeoutError" in html and "<svg" in html
    assert "nucleus · attempt 1" in html and "Report JSON" in html
    # The whole report, indented with sorted keys, as the download has it.
    assert "{\n  &quot;atom_name&quot;: " in html
    assert "10 input + 5 output tokens" in html
    part = htmx_client.get(url)
    assert b"<html" not in part.content and b'id="cc-turn-detail"' in part.content


def test_detail_withholds_message_text_unless_fully_captured(staff_client, db):
    conv = conversation()
    hidden = make_turn(conv, capture_content="hash")
    shown = make_turn(conversation(), capture_content="full")
    for turn in (hidden, shown):
        ChatMessage.objects.create(
            conversation_id=turn.conversation_id, position=0, kind="user",
            content="my secret order 4711", created_at=NOW,
        )  # fmt: skip
    assert (
        "my secret order 4711"
        not in staff_client.get(f"/console/turns/{hidden.id}/").content.decode()
    )
    assert (
        "Message text is not shown"
        in staff_client.get(f"/console/turns/{hidden.id}/").content.decode()
    )
    assert (
        "my secret order 4711" in staff_client.get(f"/console/turns/{shown.id}/").content.decode()
    )


def test_message_bubbles_mask_secrets_as_the_captured_report_does(staff_client, db):
    # The report's user_message passed the rule; the stored message keeps the words as
    # typed, and the bubble beside it showed the token verbatim.
    turn = make_turn(conversation(), capture_content="full")
    ChatMessage.objects.create(
        conversation_id=turn.conversation_id, position=0, kind="user", created_at=NOW,
        content="log in with Bearer abcdefgh12345678 please",
    )  # fmt: skip
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    assert "abcdefgh12345678" not in html
    assert "log in with Bearer [redacted] please" in html


def test_report_download(staff_client, turns):
    response = staff_client.get(f"/console/turns/{turns['blocked']}/report.json")
    assert response["Content-Disposition"].startswith("attachment;")
    assert json.loads(response.content)["final_action"] == "blocked"


def test_unknown_turn_is_404(staff_client, db):
    assert staff_client.get("/console/turns/nope/").status_code == 404


def test_detail_shows_tool_results_redacted_when_fully_captured(staff_client, db):
    turn = make_turn(conversation(), capture_content="full")
    rows = [
        {"kind": "tool_calls", "tool_calls": [
            {"id": "c1", "name": "query", "arguments": {"manager": "PartManager"}}]},
        {"kind": "tool_result", "call_id": "c1", "name": "query",
         "result": {"data": [{"number": "P-4711", "password": "hunter2"}]}},
    ]  # fmt: skip
    for position, fields in enumerate(rows):
        ChatMessage.objects.create(
            conversation_id=turn.conversation_id, position=position, created_at=NOW, **fields
        )
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    result = html[html.index('class="cc-tool-result"') :]
    assert "P-4711" in result and "hunter2" not in html and "[redacted]" in result


def test_detail_withholds_tool_results_unless_fully_captured(staff_client, db):
    turn = make_turn(conversation(), capture_content="hash")
    ChatMessage.objects.create(
        conversation_id=turn.conversation_id, position=0, kind="tool_result", call_id="c1",
        name="query", result={"data": [{"number": "P-4711"}]}, created_at=NOW,
    )  # fmt: skip
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    assert "P-4711" not in html and 'class="cc-tool-result"' not in html


def test_a_blocked_turn_page_draws_no_nucleus_bar(staff_client, turns):
    html = staff_client.get(f"/console/turns/{turns['blocked']}/").content.decode()
    assert "cc-bar--input" in html and "cc-bar--nucleus" not in html


def tool_turn(capture: str, rows: int) -> Turn:
    turn = make_turn(conversation(), capture_content=capture)
    data = [{"number": f"P-{n}", "api_token": "tok-123"} for n in range(rows)]
    items = [
        {"kind": "user", "content": "List the parts"},
        {"kind": "tool_calls", "tool_calls": [
            {"id": "c1", "name": "query", "arguments": {"manager": "PartManager"}}]},
        {"kind": "tool_result", "call_id": "c1", "name": "query", "result": {"data": data}},
        {"kind": "assistant", "content": "Here they are."},
    ]  # fmt: skip
    for position, fields in enumerate(items):
        ChatMessage.objects.create(
            conversation_id=turn.conversation_id, position=position, created_at=NOW, **fields
        )
    return turn


def test_a_tool_result_is_folded_into_its_calls_card(staff_client, db):
    turn = tool_turn("full", rows=2)
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    card = html[html.index("cc-message--tool") :]
    card = card[: card.index("</li>")]
    assert "<code>query</code>" in card and "PartManager" in card and "P-1" in card
    assert "Download the whole call" not in card and "tok-123" not in html


def test_a_large_payload_is_cut_short_with_the_whole_a_download_away(staff_client, db):
    turn = tool_turn("full", rows=400)
    html = staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    assert "P-10" in html and "P-399" not in html  # cut at 4,000 characters
    link = f"/console/turns/{turn.id}/tools/c1.json"
    assert f'href="{link}" download>Download the whole call (JSON)' in html
    whole = json.loads(staff_client.get(link).content)
    assert len(whole["result"]["data"]) == 400 and whole["arguments"] == {"manager": "PartManager"}
    assert "tok-123" not in json.dumps(whole)  # redacted like everything the console shows


def test_a_tool_payload_download_follows_capture_content(staff_client, db):
    turn = tool_turn("hash", rows=400)
    assert staff_client.get(f"/console/turns/{turn.id}/tools/c1.json").status_code == 404
    assert (
        "Download the whole call"
        not in staff_client.get(f"/console/turns/{turn.id}/").content.decode()
    )
    other = tool_turn("full", rows=1)
    assert staff_client.get(f"/console/turns/{other.id}/tools/nope.json").status_code == 404
