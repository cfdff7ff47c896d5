"""Who may approve: chatomon.approve_mutation, per-mutation permissions and the four-eyes rule.

Each is enforced by the decide view (nothing runs) and shown on the card (Approve disabled,
with the reason); rejecting stays open to anyone who may decide.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.contrib.auth.models import User

from chatomon.django.models import PendingConfirmation
from tests.console.conftest import ALL_AREAS, login, make_user
from tests.console.services import Harness

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}


@pytest.fixture
def harness(monkeypatch):
    harness = Harness()
    monkeypatch.setattr("chatomon.console.decisions.chat_service", harness.build)
    return harness


def card_of(html: str, confirmation_id: str) -> str:
    card = html[html.index(f'id="cc-approval-{confirmation_id}"') :]
    return card[: card.index("</li>")]


def approve(user: User, confirmation_id: str, **headers: Any) -> Any:
    return login(user).post(
        f"/console/approvals/{confirmation_id}/decide/", {"decision": "approve"},
        headers=headers or HTMX,
    )  # fmt: skip


def test_the_requester_cannot_approve_their_own_change(harness):
    bob = make_user("bob")  # staff with every permission, asking in his own chat
    pending = harness.suspended_turn(bob)
    refused = approve(bob, pending["id"])
    assert refused.status_code == 403 and "four-eyes rule" in refused.content.decode()
    assert refused["HX-Retarget"] == f"#cc-approval-{pending['id']}"
    assert harness.log == [] and PendingConfirmation.objects.get(pk=pending["id"]).status == (
        "pending"
    )
    # The card says so: Approve disabled, with the reason; Reject stays available.
    card = card_of(login(bob).get("/console/approvals/").content.decode(), pending["id"])
    assert 'value="approve" disabled aria-describedby=' in card
    assert 'value="reject" >' in card and "someone else must approve it" in card
    # Someone else may approve it.
    assert approve(make_user("carol"), pending["id"]).status_code == 200
    assert harness.log == [{"material_id": 1, "name": "Iron"}]


def test_the_requester_may_reject_their_own_change(harness):
    bob = make_user("bob")
    pending = harness.suspended_turn(bob)
    response = login(bob).post(
        f"/console/approvals/{pending['id']}/decide/", {"decision": "reject"}, headers=HTMX
    )
    assert response.status_code == 200
    assert PendingConfirmation.objects.get(pk=pending["id"]).status == "rejected"


def test_the_four_eyes_rule_can_be_turned_off(harness, settings):
    settings.CHATOMON_CONSOLE = {"four_eyes": False}
    bob = make_user("bob")
    pending = harness.suspended_turn(bob)
    assert approve(bob, pending["id"]).status_code == 200 and len(harness.log) == 1


def test_approving_needs_the_approve_mutation_permission(harness):
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    deciders = tuple(p for p in ALL_AREAS if p != "approve_mutation")
    dana = make_user("dana", perms=deciders)
    refused = approve(dana, pending["id"])
    assert refused.status_code == 403
    assert "needs the permission chatomon.approve_mutation" in refused.content.decode()
    assert harness.log == []
    card = card_of(login(dana).get("/console/approvals/").content.decode(), pending["id"])
    assert 'value="approve" disabled' in card and "chatomon.approve_mutation" in card
    # A plain form post is refused the same way, as a whole page.
    page = approve(dana, pending["id"], Accept="text/html")
    assert page.status_code == 403 and b"<html" in page.content and harness.log == []
    # The refusal is an alert, not a card among "your decisions" (it decided nothing).
    html = page.content.decode()
    assert f'id="cc-decided-{pending["id"]}"' not in html
    assert 'role="alert">Approving needs the permission chatomon.approve_mutation.' in html
    assert 'class="cc-conflict"' not in card_of(html, pending["id"])  # nor on the queue's cards
    # Rejecting needs only the decide permission.
    rejected = login(dana).post(
        f"/console/approvals/{pending['id']}/decide/", {"decision": "reject"}, headers=HTMX
    )
    assert rejected.status_code == 200


def test_a_mutation_can_require_a_permission_of_its_own(harness, settings):
    settings.CHATOMON_CONSOLE = {
        "approval_permissions": {"renameMaterial": "chatomon_console.view_audit"}
    }
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    erin = make_user("erin", perms=tuple(p for p in ALL_AREAS if p != "view_audit"))
    refused = approve(erin, pending["id"])
    assert refused.status_code == 403
    assert "Approving renameMaterial needs the permission chatomon_console.view_audit" in (
        refused.content.decode()
    )
    assert approve(make_user("frank"), pending["id"]).status_code == 200
    assert len(harness.log) == 1


def test_a_wrong_console_setting_names_itself():
    import importlib  # noqa: PLC0415 - the console is installed as chatomon.console

    from chatomon.errors import ConfigurationError  # noqa: PLC0415

    build = importlib.import_module("chatomon.console.conf").build_console_settings
    with pytest.raises(ConfigurationError, match=r"CHATOMON_CONSOLE\['four_eyes'\]"):
        build({"four_eyes": "yes"})
    with pytest.raises(ConfigurationError, match="four_eye"):
        build({"four_eye": True})
    assert build(None).four_eyes is True


def test_the_decided_card_stays_with_its_outcome_and_a_link_to_the_resumed_turn(harness):
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    ada = make_user("ada")
    ada.first_name, ada.last_name = "Ada", "Lovelace"
    ada.save()
    response = approve(ada, pending["id"])
    html = response.content.decode()
    row = PendingConfirmation.objects.get(pk=pending["id"])
    # Into the decisions list (which the live refresh does not re-render), not the queue.
    assert response.status_code == 200 and "HX-Retarget" not in response
    assert f'id="cc-decided-{row.pk}"' in html and "Approved</strong> by Ada Lovelace" in html
    assert f'href="/console/turns/{row.turn_id}/">open the resumed turn' in html
    assert f'<li id="cc-approval-{row.pk}" hx-swap-oob="delete">' in html
    queue = login(ada).get("/console/approvals/").content.decode()
    assert 'id="cc-approval-decisions"' in queue
    assert queue.index('id="cc-approval-decisions"') < queue.index('id="cc-approval-queue"')
    # The queue the live stream swaps holds no decisions region.
    live = queue[queue.index('id="cc-approval-queue"') :]
    assert "cc-approval-decisions" not in live


def test_history_names_deciders_by_display_name(harness):
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    ada = make_user("ada")
    ada.first_name, ada.last_name = "Ada", "Lovelace"
    ada.save()
    approve(ada, pending["id"])
    history = login(ada).get("/console/approvals/history/").content.decode()
    assert "approved by Ada Lovelace" in history and "by ada" not in history


@pytest.mark.parametrize("auth_processor", [True, False])
def test_the_live_queue_shows_each_viewer_their_own_refusal(harness, rf, settings, auth_processor):
    if not auth_processor:  # the refusal reads the request's user, not the "user" variable
        auth = "django.contrib.auth.context_processors.auth"
        settings.TEMPLATES = [
            {**t, "OPTIONS": {**t.get("OPTIONS", {}), "context_processors": [
                p for p in t.get("OPTIONS", {}).get("context_processors", []) if p != auth]}}
            for t in settings.TEMPLATES
        ]  # fmt: skip
    live_fragment = importlib.import_module("chatomon.console.live").live_fragment
    bob = make_user("bob")
    pending = harness.suspended_turn(bob)
    for viewer, refused in ((bob, True), (make_user("carol"), False)):
        request = rf.get("/console/live/")
        request.user = viewer
        card = card_of(live_fragment(request), pending["id"])
        assert ("someone else must approve it" in card) is refused
        assert ('value="approve" disabled' in card) is refused
