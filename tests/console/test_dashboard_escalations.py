"""Dashboard figures and links; escalations acknowledged and resolved with a stored note."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps

from chatomon.django.models import ChatMessage, Turn
from tests.console.conftest import (
    conversation,
    login,
    make_confirmation,
    make_turn,
    make_user,
    orbital,
)

pytestmark = pytest.mark.django_db


def test_dashboard_counts_latency_tokens_and_top_lists(staff_client, htmx_client):
    now = datetime.now(UTC)
    for ms in (100.0, 200.0, 300.0, 400.0):
        make_turn(started_at=now, duration_ms=ms, tokens=(10, 1))
    make_turn(
        started_at=now - timedelta(days=2), final_action="blocked", input=[orbital("pii", "block")]
    )
    make_turn(started_at=now - timedelta(days=30))  # outside the week
    make_turn(started_at=now, escalated=True)
    resolved = make_turn(started_at=now - timedelta(days=30), escalated=True)
    apps.get_model("chatomon_console", "EscalationReview").objects.create(
        turn=resolved, status="resolved", reviewed_at=now
    )  # a resolved escalation is not open, however old
    make_confirmation()
    # Neither counts as a pending approval: one is past its expiry, one is the user's to decide.
    make_confirmation(expires_in=timedelta(minutes=-1))
    make_confirmation(approver="client")
    conv = conversation()
    calls = [{"id": "1", "name": "query", "arguments": {}}]
    ChatMessage.objects.create(
        conversation=conv, position=0, kind="tool_calls", created_at=now, tool_calls=calls
    )
    html = staff_client.get("/console/").content.decode()
    assert '<span class="cc-tile__value">6</span> turns in 7 days' in html
    assert '<span class="cc-tile__value">1</span> escalations open' in html
    assert '<span class="cc-tile__value">1</span> approvals pending' in html
    # 100, 120 (blocked), 120 (escalated), 200, 300, 400: nearest-rank p50 and p95
    assert "120 ms</span> p50" in html and "400 ms</span> p95" in html
    assert "/console/turns/?orbital=pii" in html and "query" in html and "<svg" in html
    assert "/console/turns/?date_from=" in html and "final_action=blocked" in html
    part = htmx_client.get("/console/")
    assert b"<html" not in part.content and b'id="cc-dashboard"' in part.content


def test_escalations_are_acknowledged_then_resolved_with_a_note(staff_client, htmx_client):
    turn = make_turn(escalated=True)
    quiet = make_turn()
    page = staff_client.get("/console/escalations/").content.decode()
    assert turn.id[:11] in page and quiet.id[:11] not in page and "Acknowledge" in page
    ack = htmx_client.post(
        f"/console/escalations/{turn.id}/review/", {"status": "acknowledged", "note": "looking"}
    )
    assert (
        ack.status_code == 200
        and b"<html" not in ack.content
        and "Acknowledged by alice" in ack.content.decode()
    )
    review = apps.get_model("chatomon_console", "EscalationReview").objects.get(turn=turn)
    assert (review.status, review.note) == ("acknowledged", "looking")
    # A plain form goes back to the list, never to an address the post names.
    done = staff_client.post(
        f"/console/escalations/{turn.id}/review/",
        {"status": "resolved", "note": "refunded", "next": "https://elsewhere.example/"},
    )
    assert done.status_code == 302 and done["Location"] == "/console/escalations/"
    assert turn.id[:11] not in staff_client.get("/console/escalations/").content.decode()
    resolved = staff_client.get("/console/escalations/?state=resolved").content.decode()
    assert "refunded" in resolved and "Resolved by alice" in resolved


def test_reviewing_needs_its_permission_and_a_valid_status(htmx_client):
    turn = make_turn(escalated=True)
    reader = login(make_user("reader", perms=("view_turns",)))
    assert "Acknowledge" not in reader.get("/console/escalations/").content.decode()
    assert (
        reader.post(f"/console/escalations/{turn.id}/review/", {"status": "resolved"}).status_code
        == 403
    )
    bad = htmx_client.post(f"/console/escalations/{turn.id}/review/", {"status": "ignored"})
    assert bad.status_code == 422
    assert (
        htmx_client.post(
            f"/console/escalations/{make_turn().id}/review/", {"status": "resolved"}
        ).status_code
        == 404
    )


def test_a_refused_review_is_shown_once_and_a_resolution_stays(staff_client, htmx_client):
    turn, other = make_turn(escalated=True), make_turn(escalated=True)
    # A plain form with a bad status: the whole list (it was an empty page without the
    # filters or the turns), the error once, above it.
    page = staff_client.post(f"/console/escalations/{turn.id}/review/", {"status": "ignored"})
    html = page.content.decode()
    assert page.status_code == 422 and turn.id[:11] in html and other.id[:11] in html
    assert html.count("Select a valid choice.") == 1 and 'name="state"' in html
    # Resolved is final: acknowledging it afterwards (the page no longer offers it) is refused.
    htmx_client.post(f"/console/escalations/{turn.id}/review/", {"status": "resolved"})
    again = htmx_client.post(f"/console/escalations/{turn.id}/review/", {"status": "acknowledged"})
    assert again.status_code == 409 and "resolved already" in again.content.decode()
    review = apps.get_model("chatomon_console", "EscalationReview").objects.get(turn=turn)
    assert review.status == "resolved"


def test_a_review_form_targets_its_card_whatever_the_turn_id(staff_client):
    # Given turn ids may hold "." and ":" (TurnIdConverter): "#cc-escalation-ext:1.a" is a
    # selector for something else entirely, so the swap must not be addressed by the id.
    Turn.objects.filter(pk=make_turn(escalated=True).id).update(id="ext:1.a")
    html = staff_client.get("/console/escalations/").content.decode()
    form = html[html.index('action="/console/escalations/ext:1.a/review/"') :]
    assert 'hx-target="closest li"' in form[: form.index(">")]
