"""Console chat: a confirmation's card is drawn by the server, by chatomon.preview alone.

console.js fetches the card of a streamed confirm_mutation (chat_confirmation) instead of
drawing the preview itself: one renderer for the page, the stream and the approvals.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.console.conftest import conversation, make_confirmation, make_user

pytestmark = pytest.mark.django_db

CONSOLE_JS = Path(__file__).parents[2] / "static" / "chatomon_console" / "console.js"


def card_url(confirmation) -> str:
    return reverse("chatomon_console:chat_confirmation", args=[confirmation.id])


def test_a_waiting_confirmation_of_ones_own_chat_is_its_card(
    staff: User, staff_client: Client
) -> None:
    mine = make_confirmation(conversation(str(staff.pk)), approver="client")
    page = staff_client.get(card_url(mine))
    html = page.content.decode()
    assert page.status_code == 200
    assert f'id="cc-confirm-{mine.id}"' in html and "waits for your confirmation" in html
    # chatomon.preview's before/after table, as the conversation page draws it.
    assert "<caption>Update MaterialManager #1</caption>" in html
    assert "<del>Steel</del>" in html and "<ins>Iron</ins>" in html
    assert reverse("chatomon_console:chat_confirm", args=[mine.id]) in html
    assert f'name="conversation_id" value="{mine.conversation_id}"' in html
    assert ">Confirm</button>" in html


def test_a_decided_confirmation_says_so_and_offers_no_buttons(
    staff: User, staff_client: Client
) -> None:
    decided = make_confirmation(conversation(str(staff.pk)), approver="client", status="rejected")
    html = staff_client.get(card_url(decided)).content.decode()
    assert "renameMaterial</strong> was rejected." in html and "<form" not in html


def test_another_persons_confirmation_is_not_found(staff_client: Client) -> None:
    other = make_user("bob")
    theirs = make_confirmation(conversation(str(other.pk)), approver="client")
    assert staff_client.get(card_url(theirs)).status_code == 404
    assert login_as(other).get(card_url(theirs)).status_code == 200


def test_the_card_shows_the_preview_redacted(staff: User, staff_client: Client) -> None:
    change = {"field": "password", "before": "hunter2", "after": "s3cret!"}
    preview = {"action": "update", "manager": "AccountManager", "id": 3, "changes": [change]}
    mine = make_confirmation(conversation(str(staff.pk)), preview=preview)
    html = staff_client.get(card_url(mine)).content.decode()
    assert "hunter2" not in html and "s3cret!" not in html and "password" in html


def test_console_js_holds_no_preview_renderer_of_its_own() -> None:
    script = CONSOLE_JS.read_text()
    assert "previewTable" not in script and "Before" not in script
    assert "ccCardUrl" in script


def login_as(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client
