"""`decide`: a staff decision wins only when the service's claim resolved the confirmation.

Reference (error codes): "bad_event | Confirmation HTTP, WebSocket | The event shape,
confirmation payload, or confirmation ID is invalid." and "confirmation_unavailable |
WebSocket | Durable confirmation state was already claimed, resolved, or expired." Both are
refusals: neither may count as a won decision.
"""

from __future__ import annotations

import importlib
from uuid import UUID

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from chatomon.django.models import PendingConfirmation
from tests.console.conftest import make_user
from tests.console.services import Harness

pytestmark = pytest.mark.django_db(transaction=True)

decide = importlib.import_module("chatomon.console.decisions").decide


def harness_for(monkeypatch: pytest.MonkeyPatch, *, staff: bool) -> Harness:
    harness = Harness(staff=staff)
    monkeypatch.setattr("chatomon.console.decisions.chat_service", harness.build)
    return harness


def test_a_winning_decision_starts_with_confirmation_resolved(monkeypatch):
    harness = harness_for(monkeypatch, staff=True)
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    outcome = async_to_sync(decide)(
        make_user("ada"), UUID(pending["id"]), approve=True, reason=None
    )
    assert outcome.won and outcome.events[0]["type"] == "confirmation_resolved"
    assert outcome.confirmation.status == "approved" and len(harness.log) == 1


def test_a_second_decision_loses_with_confirmation_unavailable(monkeypatch):
    harness = harness_for(monkeypatch, staff=True)
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    async_to_sync(decide)(make_user("ada"), UUID(pending["id"]), approve=True, reason=None)
    late = async_to_sync(decide)(make_user("cy"), UUID(pending["id"]), approve=False, reason=None)
    assert not late.won and late.events[0]["code"] == "confirmation_unavailable"
    assert late.confirmation.status == "approved" and len(harness.log) == 1


def test_a_client_confirmation_is_a_bad_event_for_staff_and_not_a_win(monkeypatch):
    harness = harness_for(monkeypatch, staff=False)
    pending = harness.suspended_turn(User.objects.create_user("bob"))
    outcome = async_to_sync(decide)(
        make_user("ada"), UUID(pending["id"]), approve=True, reason=None
    )
    assert not outcome.won and [e["code"] for e in outcome.events] == ["bad_event"]
    assert PendingConfirmation.objects.get(pk=pending["id"]).status == "pending"
    assert harness.log == []
