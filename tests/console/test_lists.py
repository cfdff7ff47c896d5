"""The lists as staff use them daily: previews within capture_content, waiting turns with
their atom and usage, filters that leave no empty parameter, closed vocabularies as
selects, conversation titles and a neutral login error."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from chatomon.django.models import ChatMessage, Conversation, PendingConfirmation, Turn
from tests.console.conftest import NOW, conversation, make_confirmation, make_turn
from tests.console.services import Harness

pytestmark = pytest.mark.django_db


def row_of(html: str, turn_id: str) -> str:
    row = html[: html.index(f"/console/turns/{turn_id}/")]
    row = html[row.rindex("<tr>") :]
    return row[: row.index("</tr>")]


def test_the_turn_list_previews_what_was_asked_and_answered_when_fully_captured(staff_client):
    asked = "Which parts of project Apollo are made of titanium and cost more than ten euros"
    full = make_turn(
        capture_content="full", user_message=asked, final_reply="Three parts: P-1, P-2, P-3."
    )
    hashed = make_turn(capture_content="hash", user_message="9f86d081884c7d65")
    html = staff_client.get("/console/turns/").content.decode()
    shown = row_of(html, full.id)
    assert "Which parts of project Apollo are made of…" in shown
    assert "→ Three parts: P-1, P-2, P-3." in shown
    assert "titanium" not in shown  # the first words only
    withheld = row_of(html, hashed.id)
    assert "text not captured" in withheld and "9f86d081884c7d65" not in withheld


def test_a_waiting_turn_shows_its_atom_and_usage_so_far(staff_client):
    conv = conversation()
    turn = Turn.objects.create(
        id=uuid.uuid4().hex, conversation=conv, status="awaiting_confirmation", report=None,
        started_at=NOW,
    )  # fmt: skip
    make_confirmation(
        conv, turn_id=turn.id,
        state={"snapshot": {"atom": "support", "usage": {"input_tokens": 321,
                                                         "output_tokens": 12}}},
    )  # fmt: skip
    row = row_of(staff_client.get("/console/turns/").content.decode(), turn.id)
    assert "<td>support</td>" in row and "321 in / 12 out" in row and "waiting" in row


@pytest.mark.django_db(transaction=True)
def test_a_real_suspended_turn_is_listed_with_its_atom():
    from tests.console.conftest import login, make_user  # noqa: PLC0415

    pending = Harness().suspended_turn(User.objects.create_user("bob"))
    turn_id = PendingConfirmation.objects.get(pk=pending["id"]).turn_id
    html = login(make_user("alice")).get("/console/turns/").content.decode()
    assert "<td>chat</td>" in row_of(html, turn_id)


@pytest.mark.parametrize(
    ("path", "query", "kept"),
    [
        ("/console/turns/", "date_from=&final_action=&escalated=yes&atom=", "escalated=yes"),
        ("/console/audit/", "type=&actor=&q=needle", "q=needle"),
        ("/console/approvals/history/", "status=&decided_by=", ""),
        ("/console/escalations/", "state=", ""),
    ],
)
def test_a_filter_form_posted_without_javascript_drops_its_empty_parameters(
    staff_client, path, query, kept
):
    response = staff_client.get(f"{path}?{query}")
    assert response.status_code == 302
    assert response["Location"] == path + (f"?{kept}" if kept else "")
    assert staff_client.get(response["Location"]).status_code == 200


def test_filter_forms_refresh_on_every_change_and_push_the_url(staff_client):
    html = staff_client.get("/console/turns/").content.decode()
    form = html[html.index('<form class="cc-filters"') :]
    form = form[: form.index(">")]
    assert 'hx-push-url="true"' in form and 'hx-trigger="submit, change delay:300ms"' in form


def test_the_audit_type_filter_is_a_select_of_the_known_types(staff_client):
    html = staff_client.get("/console/audit/").content.decode()
    select = html[html.index('<select name="type"') :]
    select = select[: select.index("</select>")]
    for kind in ("message_received", "tool_called", "confirmation_resolved", "turn_finished"):
        assert f'<option value="{kind}">{kind}</option>' in select
    refused = staff_client.get("/console/audit/?type=nonsense").content.decode()
    assert "Select a valid choice" in refused


def test_conversations_are_titled_by_their_first_message_when_fully_captured(
    staff, staff_client, settings
):
    mine = Conversation.objects.create(
        owner_kind="user", owner_key=str(staff.pk), created_at=NOW, updated_at=NOW
    )
    for position, (kind, text) in enumerate(
        [("user", "How many bolts are left in the Hamburg warehouse this week please"),
         ("assistant", "There are 40.")]
    ):  # fmt: skip
        ChatMessage.objects.create(
            conversation=mine, position=position, kind=kind, content=text,
            created_at=NOW + timedelta(seconds=position),
        )  # fmt: skip
    settings.CHATOMON = {"enabled": True, "atom": {"capture_content": "full"}}
    html = staff_client.get("/console/chat/").content.decode()
    assert "How many bolts are left in the Hamburg… · " in html
    settings.CHATOMON = {"enabled": True, "atom": {"capture_content": "none"}}
    html = staff_client.get("/console/chat/").content.decode()
    assert "Hamburg" not in html and "Conversation · " in html


def test_the_login_error_is_one_neutral_message(db):
    User.objects.create_user("clerk", password="right", is_staff=False)
    User.objects.create_user("boss", password="right", is_staff=True)
    for username in ("clerk", "boss", "nobody"):
        html = (
            Client()
            .post("/console/login/", {"username": username, "password": "wrong"})
            .content.decode()
        )
        assert "Please enter the correct username and password for a staff account." in html
        assert "not staff" not in html
