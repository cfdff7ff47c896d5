"""Conversations continue without an id, over HTTP, SSE and WebSocket.

The reference's clients send only text (`{"text": "Which projects use aluminum parts?"}`,
`{"type": "message", "text": "List all materials"}`), and "ChatConversation belongs to an
authenticated user or anonymous Django session": such a client keeps its context. A
message without `conversation_id` continues the owner's current conversation, a socket
keeps its own; `"new_conversation": true` starts a new one.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.test import AsyncClient

from chatomon.django.models import ChatMessage, Conversation
from tests.asgi_app.fixtures import make_user, sse_events

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]


async def post(client: AsyncClient, payload: Any, path: str = "/chat/") -> Any:
    return await client.post(path, json.dumps(payload), content_type="application/json")


async def last_event(client: AsyncClient, payload: Any) -> dict[str, Any]:
    response = await post(client, payload)
    assert response.status_code == 200
    event: dict[str, Any] = response.json()["events"][-1]
    return event


async def stored_in(conversation_id: str) -> int:
    return await ChatMessage.objects.filter(conversation_id=conversation_id).acount()


async def test_a_session_posting_only_text_keeps_one_conversation():
    client = AsyncClient()
    first = await last_event(client, {"text": "one"})
    second = await last_event(client, {"text": "two"})
    assert second["conversation_id"] == first["conversation_id"]
    assert await stored_in(first["conversation_id"]) == 4  # both turns, one context
    other = await last_event(AsyncClient(), {"text": "three"})  # another session
    assert other["conversation_id"] != first["conversation_id"]


async def test_new_conversation_is_the_explicit_way_to_start_one():
    client = AsyncClient()
    first = await last_event(client, {"text": "one"})
    fresh = await last_event(client, {"text": "two", "new_conversation": True})
    assert fresh["conversation_id"] != first["conversation_id"]
    after = await last_event(client, {"text": "three"})
    assert after["conversation_id"] == fresh["conversation_id"]
    assert await Conversation.objects.acount() == 2


@pytest.mark.parametrize(
    "payload",
    [
        {"text": "x", "new_conversation": "yes"},
        {"text": "x", "new_conversation": 1},
        {"text": "x", "new_conversation": True, "conversation_id": "c-1"},
    ],
)
async def test_a_bad_new_conversation_is_bad_message_and_starts_nothing(payload):
    response = await post(AsyncClient(), payload)
    assert response.status_code == 400
    (event,) = response.json()["events"]
    assert (event["code"], event["field"]) == ("bad_message", "new_conversation")
    assert await Conversation.objects.acount() == 0


async def test_a_logged_in_user_continues_across_sessions_and_transports():
    user = await make_user()
    http, sse = AsyncClient(), AsyncClient()
    await http.aforce_login(user)
    await sse.aforce_login(user)
    first = await last_event(http, {"text": "one"})
    response = await sse.post(
        "/chat/stream/",
        json.dumps({"text": "two"}),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    body = b"".join([chunk async for chunk in response.streaming_content])
    assert sse_events(body)[-1]["conversation_id"] == first["conversation_id"]


async def open_socket(client: AsyncClient) -> WebsocketCommunicator:
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie)]
    socket = WebsocketCommunicator(chat_websocket_application(), "/chat/", headers=headers)
    connected, _ = await socket.connect()
    assert connected
    return socket


async def say(socket: WebsocketCommunicator, **frame: Any) -> dict[str, Any]:
    await socket.send_to(text_data=json.dumps({"type": "message", **frame}))
    while True:
        event: dict[str, Any] = json.loads(await socket.receive_from(5))
        if event["type"] in ("done", "error", "confirm_mutation"):
            return event


async def test_a_socket_keeps_its_conversation_until_told_to_start_a_new_one():
    client = AsyncClient()
    await client.aforce_login(await make_user())
    earlier = await last_event(client, {"text": "over http"})
    socket = await open_socket(client)
    first = await say(socket, text="one")
    assert first["conversation_id"] == earlier["conversation_id"]  # the user's current one
    fresh = await say(socket, text="two", new_conversation=True)
    assert fresh["conversation_id"] != first["conversation_id"]
    kept = await say(socket, text="three")
    assert kept["conversation_id"] == fresh["conversation_id"]  # the socket's own
    named = await say(socket, text="four", conversation_id=first["conversation_id"])
    assert named["conversation_id"] == first["conversation_id"]
    assert (await say(socket, text="five"))["conversation_id"] == first["conversation_id"]
    await socket.disconnect()
