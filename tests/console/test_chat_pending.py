"""The console's chat is refused a message while its conversation waits on a confirmation.

It calls `ChatService.run_turn` directly (no transport admission): the rule is the
service's, so the staff member's own chat gets `confirmation_pending` as the widget does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import AsyncClient

from chatomon.chat.pipeline.wire import PENDING_MESSAGE
from chatomon.django.models import PendingConfirmation
from tests.console.services import Harness

pytestmark = pytest.mark.django_db(transaction=True)

STREAM = {"Accept": "text/event-stream"}


@pytest.fixture(autouse=True)
def chat_enabled(settings: Any) -> None:
    """Chat turned on, as a project that chats must (`enabled` defaults to False)."""
    settings.CHATOMON = {"enabled": True}


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Harness:
    harness = Harness(staff=False)
    monkeypatch.setattr("chatomon.console.views.chat.chat_service", harness.build)
    return harness


async def events_of(response: Any) -> list[dict[str, Any]]:
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    return [json.loads(frame.removeprefix("data: ")) for frame in body.strip().split("\n\n")]


async def test_a_message_to_a_waiting_conversation_is_refused(harness: Harness, staff: Any) -> None:
    client = AsyncClient()
    await client.aforce_login(staff)
    first = await events_of(
        await client.post("/console/chat/send/", {"text": "Rename 1"}, headers=STREAM)
    )
    announced = first[-1]
    assert announced["type"] == "confirm_mutation"
    conversation_id = announced["conversation_id"]
    message = {"text": "something else", "conversation_id": conversation_id}
    refused = await events_of(await client.post("/console/chat/send/", message, headers=STREAM))
    assert [(e["code"], e["message"], e["confirmation_id"]) for e in refused] == [
        ("confirmation_pending", PENDING_MESSAGE, announced["id"])
    ]
    # A plain form post says so on the conversation's page, and runs nothing either.
    back = await client.post("/console/chat/send/", message)
    assert back.status_code == 302 and conversation_id in back["Location"]
    page = await client.get(back["Location"])
    assert PENDING_MESSAGE in page.content.decode() and b"The turn failed." not in page.content
    confirmation = await PendingConfirmation.objects.aget(conversation_id=conversation_id)
    assert confirmation.status == "pending" and harness.log == []
    decided = await client.post(
        f"/console/chat/confirm/{confirmation.id}/", {"decision": "approve"}, headers=STREAM
    )
    assert (await events_of(decided))[-1]["type"] == "done"
    assert harness.log == [{"material_id": 1, "name": "Iron"}]
