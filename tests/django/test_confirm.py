"""`POST chat/confirm/`: resolving a client confirmation; envelope or SSE; every refusal."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import pytest
from django.test import AsyncClient

from chatomon.django.models import PendingConfirmation, Turn
from tests.asgi_app.fixtures import (
    configure,
    make_user,
    sse_events,
    sse_until,
    types,
)
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
CONFIRM = "/chat/confirm/"
CREATE = 'mutate createPart {"name": "Bolt"}'


async def logged_in(username: str = "alice") -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(await make_user(username))
    return client


async def pending(client: AsyncClient) -> dict[str, Any]:
    """Start a turn over SSE that waits for the client's confirmation of createPart."""
    response = await client.post(
        "/chat/stream/", json.dumps({"text": CREATE}), content_type="application/json"
    )
    events = await sse_until(response, "confirm_mutation")
    assert events[-1]["type"] == "confirm_mutation"
    return events[-1]


async def confirm(client: AsyncClient, payload: Any, **headers: str) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload)
    return await client.post(CONFIRM, body, content_type="application/json", headers=headers)


async def test_approving_runs_the_mutation_and_resumes_the_turn_in_the_envelope():
    client = await logged_in()
    waiting = await pending(client)
    response = await confirm(client, {"confirmation_id": waiting["id"], "confirmed": True})
    assert response.status_code == 200
    body = response.json()
    assert types(body["events"]) == ["confirmation_resolved", "tool_result", "text_chunk", "done"]
    resolved = body["events"][0]
    assert (resolved["id"], resolved["status"]) == (waiting["id"], "approved")
    assert body["events"][1]["result"]["status"] == "executed"
    assert body["answer"].startswith("Tool said:")
    assert all(e["turn_id"] == waiting["turn_id"] for e in body["events"])
    assert await Part.objects.filter(name="Bolt").acount() == 1
    assert (await Turn.objects.aget(pk=waiting["turn_id"])).status == "completed"


async def test_rejecting_resumes_the_turn_without_the_mutation():
    client = await logged_in()
    waiting = await pending(client)
    body = (await confirm(client, {"confirmation_id": waiting["id"], "confirmed": False})).json()
    assert body["events"][0]["status"] == "rejected"
    assert body["events"][1]["result"]["status"] == "rejected"
    assert body["events"][-1]["type"] == "done"
    assert not await Part.objects.filter(name="Bolt").aexists()


async def test_a_confirmation_is_claimed_once():
    # Reference: "confirmation_unavailable | ... | Durable confirmation state was already
    # claimed, resolved, or expired."
    client = await logged_in()
    waiting = await pending(client)
    await confirm(client, {"confirmation_id": waiting["id"], "confirmed": True})
    again = (await confirm(client, {"confirmation_id": waiting["id"], "confirmed": True})).json()
    assert [(e["type"], e["code"]) for e in again["events"]] == [
        ("error", "confirmation_unavailable")
    ]
    assert await Part.objects.filter(name="Bolt").acount() == 1


async def test_another_actors_or_an_unknown_confirmation_is_a_bad_event():
    # Reference: "bad_event | Confirmation HTTP, WebSocket | The event shape, confirmation
    # payload, or confirmation ID is invalid." Foreign and unknown ids answer alike.
    waiting = await pending(await logged_in())
    mallory = await logged_in("mallory")
    answers = []
    for confirmation_id in (waiting["id"], str(uuid4())):
        response = await confirm(mallory, {"confirmation_id": confirmation_id, "confirmed": True})
        assert response.status_code == 200
        (event,) = response.json()["events"]
        assert (event["type"], event["code"]) == ("error", "bad_event")
        answers.append(event)
    assert answers[0] == answers[1]
    anonymous = (
        await confirm(AsyncClient(), {"confirmation_id": waiting["id"], "confirmed": True})
    ).json()
    assert anonymous["events"][0]["code"] == "bad_event"
    status = (await PendingConfirmation.objects.aget(pk=waiting["id"])).status
    assert status == "pending"


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        (b"nope", 400, "bad_event"),
        (b"[]", 400, "bad_event"),
        ({}, 400, "bad_event"),
        ({"confirmation_id": "call-1"}, 400, "bad_event"),
        ({"confirmation_id": 1, "confirmed": True}, 400, "bad_event"),
        ({"confirmation_id": "abc", "confirmed": "true"}, 400, "bad_event"),
        ({"confirmation_id": "x" * (1024 * 1024), "confirmed": True}, 413, "request_too_large"),
        ({"confirmation_id": "call-1", "confirmed": True}, 200, "bad_event"),
    ],
)
async def test_a_malformed_confirmation_is_a_bad_event(payload, status, code):
    response = await confirm(await logged_in(), payload)
    assert response.status_code == status
    assert [(e["type"], e["code"]) for e in response.json()["events"]] == [("error", code)]


async def test_accept_event_stream_answers_with_sse_and_heartbeats():
    client = await logged_in()
    waiting = await pending(client)
    response = await client.post(
        "/test/confirm/",
        json.dumps({"confirmation_id": waiting["id"], "confirmed": True, "extra": 1}),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response["Content-Type"].startswith("text/event-stream")
    assert response["X-Accel-Buffering"] == "no"
    events = sse_events(b"".join([chunk async for chunk in response.streaming_content]))
    assert types(events) == ["confirmation_resolved", "tool_result", "text_chunk", "done"]


async def test_sse_refusals_follow_the_accept_header():
    response = await confirm(await logged_in(), b"[]", Accept="text/event-stream")
    assert response.status_code == 400
    assert sse_events(response.content)[0]["code"] == "bad_event"


async def test_confirmations_count_against_the_rate_limit(settings):
    configure(settings, rate_limit={"requests": 1, "window_seconds": 60})
    client = await logged_in()
    waiting = await pending(client)
    response = await confirm(client, {"confirmation_id": waiting["id"], "confirmed": True})
    assert response.status_code == 429
    assert response.json()["events"][0]["code"] == "rate_limited"
    assert not await Part.objects.filter(name="Bolt").aexists()


async def test_permission_denial_method_and_csrf(settings):
    assert (await AsyncClient().get(CONFIRM)).status_code == 405
    checked = AsyncClient(enforce_csrf_checks=True)
    assert (await confirm(checked, {"confirmation_id": "x", "confirmed": True})).status_code == 403
    configure(settings, permission=lambda user, scope: False)
    denied = await confirm(await logged_in(), {"confirmation_id": "x", "confirmed": True})
    assert denied.status_code == 403
    assert denied.json()["events"][0]["code"] == "permission_denied"
