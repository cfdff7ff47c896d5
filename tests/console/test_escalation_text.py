"""Escalations list: each card shows what was asked and answered (within capture_content)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.console.conftest import make_turn

pytestmark = pytest.mark.django_db


def test_an_escalation_card_shows_the_request_when_fully_captured(staff_client: Client) -> None:
    make_turn(
        escalated=True, final_action="orbital_response", capture_content="full",
        user_message="I want to talk to a human about my invoice",
        final_reply="Someone will get back to you.",
    )  # fmt: skip
    make_turn(escalated=True, capture_content="hash", user_message="9f86d081884c7d65")
    html = staff_client.get("/console/escalations/").content.decode()
    assert "<q>I want to talk to a human about…</q>" in html  # its first words
    assert "→ Someone will get back to you." in html
    assert "9f86d081884c7d65" not in html  # a hash is no text to show
