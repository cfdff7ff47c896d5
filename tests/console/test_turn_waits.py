"""The turn page of a turn that waited for a staff decision: who, when, how long, and why."""

from __future__ import annotations

import importlib
from datetime import timedelta
from uuid import UUID

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from chatomon.django.models import PendingConfirmation, Turn
from tests.console.conftest import login, make_user
from tests.console.services import Harness

pytestmark = pytest.mark.django_db(transaction=True)

# mypy knows the console as the folder `console`; the installed app is chatomon.console.
decide = importlib.import_module("chatomon.console.decisions").decide


@pytest.fixture
def harness(monkeypatch):
    harness = Harness()
    monkeypatch.setattr("chatomon.console.decisions.chat_service", harness.build)
    return harness


def waited_turn(harness: Harness, *, waited: timedelta, reason: str = "") -> tuple[Turn, User]:
    """A turn that asked for a staff approval and waited `waited` for Ada's rejection."""
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    # As if it had been asked for `waited` ago: the pause measures from created_at.
    row = PendingConfirmation.objects.get(pk=pending["id"])
    PendingConfirmation.objects.filter(pk=row.pk).update(
        created_at=row.created_at - waited, expires_at=row.expires_at + waited
    )
    ada = make_user("ada")
    ada.first_name, ada.last_name = "Ada", "Lovelace"
    ada.save()
    outcome = async_to_sync(decide)(ada, UUID(pending["id"]), approve=False, reason=reason)
    assert outcome.won
    return Turn.objects.get(pk=row.turn_id), ada


def test_the_page_names_the_decider_when_and_how_long_the_turn_waited(harness):
    turn, _ = waited_turn(harness, waited=timedelta(minutes=2, seconds=5), reason="not today")
    assert turn.report["pauses"][0]["outcome"] == "rejected"
    html = login(make_user("viewer")).get(f"/console/turns/{turn.id}/").content.decode()
    waits = html[html.index("Waits for a decision") :]
    assert "Ada Lovelace" in waits and "rejected" in waits and "not today" in waits
    assert "2 min 5 s" in waits
    decided_at = PendingConfirmation.objects.get(turn_id=turn.id).decided_at
    assert f"{decided_at:%Y-%m-%d %H:%M:%S}" in waits


def test_the_duration_shows_the_wait_beside_the_active_time(harness):
    turn, _ = waited_turn(harness, waited=timedelta(minutes=3))
    html = login(make_user("viewer")).get(f"/console/turns/{turn.id}/").content.decode()
    facts = html[html.index("<dt>Duration</dt>") :]
    facts = facts[: facts.index("</dd>")]
    # Active time is a fraction of a second here; with the 3 min wait it is 3 min in all.
    assert "3 min 0 s in all" in facts and "3 min 0 s waiting for 1 decision" in facts
    # The timeline draws the wait as a labelled gap.
    assert "cc-bar--wait" in html and "waited 3 min 0 s" in html
