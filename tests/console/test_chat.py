"""Chat: staff talk through ChatService, streamed as SSE or run to the end for a plain form."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import AsyncClient

from chatomon.django.models import Conversation, PendingConfirmation
from tests.console.conftest import conversation
from tests.console.services import Harness

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def chat_enabled(settings):
    """Chat turned on, as a project that chats must (`enabled` defaults to False)."""
    settings.CHATOMON = {"enabled": True}


@pytest.fixture
def harness(monkeypatch):
    harness = Harness(staff=False)
    monkeypatch.setattr("chatomon.console.views.chat.chat_service", harness.build)
    return harness


async def frames(response: Any) -> list[tuple[str, Any]]:
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    out = []
    for frame in body.strip().split("\n\n"):
        assert frame.startswith("data: ") and "\n" not in frame
        event = json.loads(frame.removeprefix("data: "))
        out.append((event["type"], event))
    return out


async def test_a_streamed_turn_shows_tool_cards_and_an_inline_confirmation(harness, staff):
    client = AsyncClient()
    await client.aforce_login(staff)
    stream = {"Accept": "text/event-stream"}
    response = await client.post("/console/chat/send/", {"text": "Rename 1"}, headers=stream)
    assert response["Content-Type"] == "text/event-stream; charset=utf-8"
    events = await frames(response)
    assert events[-1][0] == "confirm_mutation" and events[-1][1]["approver"] == "client"
    conversation_id = events[-1][1]["conversation_id"]
    owner = await sync_to_async(lambda: Conversation.objects.get(pk=conversation_id).owner_key)()
    assert owner == str(staff.pk)
    page = (await client.get(f"/console/chat/{conversation_id}/")).content.decode()
    assert "waits for your confirmation" in page
    confirmation = await PendingConfirmation.objects.aget(conversation_id=conversation_id)
    resumed = await client.post(
        f"/console/chat/confirm/{confirmation.id}/", {"decision": "approve"}, headers=stream
    )
    kinds = [kind for kind, _ in await frames(resumed)]
    assert kinds[0] == "confirmation_resolved" and kinds[-1] == "done"
    assert harness.log == [{"material_id": 1, "name": "Iron"}]
    page = (await client.get(f"/console/chat/{conversation_id}/")).content.decode()
    # The finished turn's items are stored: the tool call as a card with its result.
    assert "Renamed." in page and "Tool call: <code>mutate</code>" in page


def test_a_plain_form_post_runs_the_turn_and_redirects_to_the_conversation(harness, staff_client):
    response = staff_client.post("/console/chat/send/", {"text": "Rename 1"})
    assert response.status_code == 302
    conversation_id = Conversation.objects.get().pk
    assert response["Location"] == f"/console/chat/{conversation_id}/"
    confirmation = PendingConfirmation.objects.get()
    back = staff_client.post(
        f"/console/chat/confirm/{confirmation.id}/",
        {"decision": "reject", "conversation_id": str(conversation_id)},
    )
    assert back["Location"] == f"/console/chat/{conversation_id}/" and harness.log == []


def test_only_the_staff_members_own_conversations_are_listed_or_opened(
    harness, staff_client, htmx_client
):
    other = conversation(str(User.objects.create_user("bob").pk))
    assert str(other.id) not in staff_client.get("/console/chat/").content.decode()
    assert staff_client.get(f"/console/chat/{other.id}/").status_code == 404
    staff_client.post("/console/chat/send/", {"text": "Rename 1"})
    mine = Conversation.objects.exclude(pk=other.pk).get()
    assert str(mine.id) in staff_client.get("/console/chat/").content.decode()
    part = htmx_client.get(f"/console/chat/{mine.id}/")
    assert b"<html" not in part.content and b'id="cc-conversation"' in part.content


def test_a_plain_post_to_a_conversation_not_theirs_shows_why_on_a_new_chat(harness, staff_client):
    other = conversation(str(User.objects.create_user("bob").pk))
    response = staff_client.post(
        "/console/chat/send/", {"text": "Rename 1", "conversation_id": str(other.id)}
    )
    assert response["Location"] == "/console/chat/?error=conversation_not_found"
    page = staff_client.get(response["Location"])
    assert page.status_code == 200
    assert "That conversation does not exist or is not yours." in page.content.decode()
    assert harness.log == [] and other.turns.count() == 0


def test_an_empty_message_is_refused(harness, staff_client):
    assert staff_client.post("/console/chat/send/", {"text": ""}).status_code == 422


def test_while_chat_is_disabled_staff_see_why_and_how_to_turn_it_on(
    harness, settings, staff_client, htmx_client
):
    """The reference: "enabled | False | Register chat HTTP, SSE, and eligible WebSocket
    routes at startup". Off means off for staff too, said on the console's own page (200)."""
    mine = conversation(str(User.objects.get(username="alice").pk))
    settings.CHATOMON = {"enabled": False}
    for url in ("/console/chat/", f"/console/chat/{mine.id}/"):
        page = staff_client.get(url)
        assert page.status_code == 200
        text = page.content.decode()
        assert "Chat is turned off" in text and '"enabled": True' in text
        assert 'id="cc-composer"' not in text
    fragment = htmx_client.get("/console/chat/")
    assert b"<html" not in fragment.content and b'id="cc-chat-disabled"' in fragment.content
    settings.CHATOMON = {"enabled": True}
    assert 'id="cc-composer"' in staff_client.get("/console/chat/").content.decode()


def test_while_chat_is_disabled_sending_and_confirming_run_nothing(harness, settings, staff_client):
    staff_client.post("/console/chat/send/", {"text": "Rename 1"})
    confirmation = PendingConfirmation.objects.get()
    settings.CHATOMON = {"enabled": False}
    stream = {"Accept": "text/event-stream"}
    for headers in ({}, stream):
        sent = staff_client.post("/console/chat/send/", {"text": "Rename 1"}, headers=headers)
        assert sent.status_code == 503 and b"Chat is turned off" in sent.content
        decided = staff_client.post(
            f"/console/chat/confirm/{confirmation.id}/", {"decision": "approve"}, headers=headers
        )
        assert decided.status_code == 503 and b"Chat is turned off" in decided.content
    assert Conversation.objects.count() == 1 and harness.log == []
    confirmation.refresh_from_db()
    assert confirmation.status == "pending"


def test_a_waiting_confirmation_shows_the_before_after_table_and_a_confirm_button(
    staff, staff_client
):
    from tests.console.conftest import make_confirmation  # noqa: PLC0415

    mine = conversation(str(staff.pk))
    make_confirmation(mine, approver="client")
    html = staff_client.get(f"/console/chat/{mine.id}/").content.decode()
    card = html[html.index("cc-message--confirm") :]
    assert "<del>Steel</del>" in card and "<ins>Iron</ins>" in card
    assert "<caption>Update MaterialManager #1</caption>" in card
    assert "&quot;changes&quot;" not in card  # no JSON blob
    assert 'value="approve">Confirm</button>' in card
