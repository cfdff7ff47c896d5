"""The WebSocket consumer in process (Channels' WebsocketCommunicator): every event and code."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import uuid4

import pytest
from channels.layers import InMemoryChannelLayer
from channels.testing.websocket import WebsocketCommunicator
from django.test import AsyncClient

from chatomon.chat.pipeline.wire import PENDING_MESSAGE
from chatomon.data.actor import SimpleActor
from chatomon.django.models import Turn
from chatomon.django.service import chat_service
from chatomon.django.transports.relay import relays
from tests.asgi_app.fixtures import (
    configure,
    make_part,
    make_user,
    types,
)
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
CREATE = 'mutate createPart {"name": "Bolt"}'
STAFF = SimpleActor(id=0, is_authenticated=True, is_staff=True)


async def session_cookie(username: str | None) -> bytes | None:
    if username is None:
        return None
    client = AsyncClient()
    await client.aforce_login(await make_user(username))
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def open_socket(
    username: str | None = "alice", *, path: str = "/chat/", origin: bytes = b"http://testserver"
) -> WebsocketCommunicator:
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    headers = [(b"origin", origin)]
    cookie = await session_cookie(username)
    if cookie is not None:
        headers.append((b"cookie", cookie))
    socket = WebsocketCommunicator(chat_websocket_application(), path, headers=headers)
    connected, _ = await socket.connect()
    assert connected
    return socket


async def send(socket: WebsocketCommunicator, event: Any) -> None:
    await socket.send_to(text_data=event if isinstance(event, str) else json.dumps(event))


async def until_terminal(socket: WebsocketCommunicator, wait: float = 5) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] not in ("done", "error", "confirm_mutation"):
        events.append(json.loads(await socket.receive_from(wait)))
    return events


async def test_a_message_streams_the_turn_and_the_socket_stays_open():
    socket = await open_socket()
    await send(socket, {"type": "message", "text": "hello", "unknown": True})
    events = await until_terminal(socket)
    assert types(events) == ["text_chunk", "text_chunk", "done"]
    conversation = events[-1]["conversation_id"]
    await send(socket, {"type": "message", "text": "again", "conversation_id": conversation})
    assert (await until_terminal(socket))[-1]["conversation_id"] == conversation
    await socket.disconnect()


async def test_an_anonymous_socket_chats_as_its_session():
    socket = await open_socket(None)
    await send(socket, {"type": "message", "text": "hello"})
    assert (await until_terminal(socket))[-1]["type"] == "done"
    await socket.disconnect()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("not json", "bad_event"),
        ("[1]", "bad_event"),
        ({"type": "shout", "text": "hi"}, "bad_event"),
        ({"text": "hi"}, "bad_event"),
        ({"type": "message"}, "bad_message"),
        ({"type": "message", "text": " "}, "bad_message"),
        ({"type": "message", "text": 3}, "bad_message"),
        ({"type": "message", "text": "x" * 8001}, "message_too_long"),
        ({"type": "message", "text": "x" * (1024 * 1024)}, "request_too_large"),
        ({"type": "confirm", "confirmed": True}, "bad_event"),
        ({"type": "confirm", "confirmation_id": "a", "confirmed": "no"}, "bad_event"),
        ({"type": "confirm", "confirmation_id": "call-1", "confirmed": True}, "bad_event"),
    ],
)
async def test_bad_frames_get_their_code_and_start_nothing(frame, code):
    socket = await open_socket()
    await send(socket, frame)
    event = json.loads(await socket.receive_from())
    assert (event["type"], event["code"]) == ("error", code)
    assert await Turn.objects.acount() == 0
    await socket.disconnect()


async def test_a_second_message_while_a_turn_streams_is_turn_in_progress():
    socket = await open_socket()
    await send(socket, {"type": "message", "text": "slow 0.5 first"})
    await send(socket, {"type": "message", "text": "second"})
    refused = json.loads(await socket.receive_from())
    assert refused["code"] == "turn_in_progress"
    await send(socket, {"type": "confirm", "confirmation_id": "x", "confirmed": True})
    assert json.loads(await socket.receive_from())["code"] == "turn_in_progress"
    assert types(await until_terminal(socket)) == ["text_chunk", "done"]
    await socket.disconnect()


async def test_a_client_confirmation_blocks_messages_until_it_is_resolved_once():
    socket = await open_socket()
    await send(socket, {"type": "message", "text": CREATE})
    waiting = (await until_terminal(socket))[-1]
    assert (waiting["type"], waiting["approver"]) == ("confirm_mutation", "client")
    await send(socket, {"type": "message", "text": "meanwhile"})
    blocked = json.loads(await socket.receive_from())
    assert (blocked["code"], blocked["confirmation_id"]) == ("confirmation_pending", waiting["id"])
    # The one refusal of every surface (wire.pending_event): its message, its conversation.
    assert blocked["message"] == PENDING_MESSAGE
    assert blocked["conversation_id"] == waiting["conversation_id"]
    await send(socket, {"type": "confirm", "confirmation_id": waiting["id"], "confirmed": True})
    resumed = await until_terminal(socket)
    assert types(resumed) == ["confirmation_resolved", "tool_result", "text_chunk", "done"]
    assert await socket.receive_nothing(0.3)  # the group's copy of our own turn is dropped
    assert await Part.objects.filter(name="Bolt").acount() == 1
    # Reference: confirmation_unavailable when the state "was already claimed, resolved,
    # or expired".
    await send(socket, {"type": "confirm", "confirmation_id": waiting["id"], "confirmed": True})
    assert json.loads(await socket.receive_from())["code"] == "confirmation_unavailable"
    await send(socket, {"type": "message", "text": "after"})
    assert (await until_terminal(socket))[-1]["type"] == "done"
    await socket.disconnect()


async def test_another_users_or_an_unknown_confirmation_is_a_bad_event():
    # Reference: "bad_event | Confirmation HTTP, WebSocket | The event shape, confirmation
    # payload, or confirmation ID is invalid."
    owner = await open_socket("alice")
    await send(owner, {"type": "message", "text": CREATE})
    waiting = (await until_terminal(owner))[-1]
    thief = await open_socket("mallory")
    answers = []
    for confirmation_id in (waiting["id"], str(uuid4())):
        await send(
            thief, {"type": "confirm", "confirmation_id": confirmation_id, "confirmed": True}
        )
        answers.append(json.loads(await thief.receive_from()))
    assert [(e["type"], e["code"]) for e in answers] == [("error", "bad_event")] * 2
    assert answers[0] == answers[1]  # a foreign id reads as an unknown one
    assert not await Part.objects.filter(name="Bolt").aexists()
    await send(thief, {"type": "message", "text": "mine"})  # the socket is not blocked
    assert (await until_terminal(thief))[-1]["type"] == "done"
    await owner.disconnect()
    await thief.disconnect()


async def test_a_staff_approval_made_elsewhere_reaches_the_socket_through_its_group():
    part = await make_part()
    socket = await open_socket()
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "7.00"}}'
    await send(socket, {"type": "message", "text": text})
    waiting = (await until_terminal(socket))[-1]
    assert waiting["approver"] == "staff"
    await send(socket, {"type": "message", "text": "a staff approval does not block"})
    assert (await until_terminal(socket))[-1]["type"] == "done"
    decided = [
        e
        async for e in chat_service().resolve_confirmation(
            STAFF, waiting["id"], True, decided_by="staff:carol"
        )
    ]
    assert decided[-1]["type"] == "done"
    received = await until_terminal(socket)
    assert types(received) == types(decided)
    assert received[0]["decided_by"] == "a staff member"  # never the staff username
    assert await socket.receive_nothing(0.2)
    await socket.disconnect()


async def test_a_socket_follows_a_conversation_named_in_its_query_string():
    part = await make_part()
    first = await open_socket()
    text = f'mutate updatePartCost {{"part_id": {part}, "unit_cost": "7.00"}}'
    await send(first, {"type": "message", "text": text})
    waiting = (await until_terminal(first))[-1]
    await first.disconnect()
    path = f"/chat/?conversation_id={waiting['conversation_id']}"
    later = await open_socket(path=path)
    stranger = await open_socket("mallory", path=path)
    async for _ in chat_service().resolve_confirmation(STAFF, waiting["id"], False, decided_by="s"):
        pass
    assert types(await until_terminal(later))[0] == "confirmation_resolved"
    assert await stranger.receive_nothing(0.3)
    await later.disconnect()
    await stranger.disconnect()


async def test_disconnecting_detaches_the_turn_which_runs_on_and_is_recorded_completed():
    socket = await open_socket()
    await send(socket, {"type": "message", "text": "slow 0.5 answered anyway"})
    for _ in range(100):
        if await Turn.objects.filter(status="running").aexists():
            break
        await asyncio.sleep(0.02)
    await socket.disconnect()
    [feed] = relays().running  # kept by the process's registry, not by the socket
    assert feed.detached and feed.task is not None
    await feed.task
    assert [t.status async for t in Turn.objects.all()] == ["completed"]
    assert types(feed.events) == ["text_chunk", "done"]  # resumable: tests/django/test_resume.py


async def test_a_logout_closes_the_users_sockets_with_4401_and_aborts_the_turn():
    client = AsyncClient()
    await client.aforce_login(await make_user("alice"))
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie)]
    busy = WebsocketCommunicator(_application(), "/chat/", headers=headers)
    idle = WebsocketCommunicator(_application(), "/chat/", headers=headers)
    assert (await busy.connect())[0] and (await idle.connect())[0]
    others = await open_socket("bob")
    await send(busy, {"type": "message", "text": "slow 30 never answered"})
    for _ in range(100):
        if await Turn.objects.filter(status="running").aexists():
            break
        await asyncio.sleep(0.02)
    await client.post("/test/logout/")  # Django's logout(): the user_logged_out signal
    for socket in (busy, idle):
        assert await socket.receive_output(5) == {"type": "websocket.close", "code": 4401}
    assert [t.status async for t in Turn.objects.all()] == ["aborted"]
    await send(others, {"type": "message", "text": "bob chats on"})
    assert (await until_terminal(others))[-1]["type"] == "done"
    await others.disconnect()


async def test_a_failing_channel_layer_leaves_the_socket_chatting(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.BrokenLayer"}}
    socket = await open_socket()
    await send(socket, {"type": "message", "text": "hello"})
    assert types(await until_terminal(socket)) == ["text_chunk", "text_chunk", "done"]
    assert await socket.receive_nothing(1.5)  # its receive from the layer failed meanwhile
    await send(socket, {"type": "message", "text": "again"})
    assert (await until_terminal(socket))[-1]["type"] == "done"
    await socket.disconnect()


class BrokenLayer(InMemoryChannelLayer):
    """A layer whose every operation fails, as channels_redis' does with Redis down."""

    async def receive(self, channel: str) -> Any:
        raise ConnectionError("the layer is down")

    async def group_add(self, group: str, channel: str) -> None:
        raise ConnectionError("the layer is down")

    async def group_discard(self, group: str, channel: str) -> None:
        raise ConnectionError("the layer is down")


async def test_permission_denial_closes_with_4403(settings):
    configure(settings, permission=lambda user, scope: scope["type"] != "websocket")
    socket = WebsocketCommunicator(
        _application(), "/chat/", headers=[(b"origin", b"http://testserver")]
    )
    assert (await socket.connect())[0]
    assert await socket.receive_output() == {"type": "websocket.close", "code": 4403}


async def test_a_startup_failure_closes_with_1011_and_sends_the_chat_error_signal(settings):
    from chatomon.django.audit.signals import chat_error  # noqa: PLC0415

    errors: list[dict[str, Any]] = []

    def receiver(**kwargs: Any) -> None:
        errors.append(kwargs)

    configure(settings, provider="tests.asgi_app.providers.MissingProvider")
    socket = WebsocketCommunicator(
        _application(), "/chat/", headers=[(b"origin", b"http://testserver")]
    )
    chat_error.connect(receiver)
    try:
        assert (await socket.connect())[0]
        assert await socket.receive_output() == {"type": "websocket.close", "code": 1011}
    finally:
        chat_error.disconnect(receiver)
    assert [e["code"] for e in errors] == ["chat_error"]
    assert errors[0]["exception"] is not None


async def test_a_provider_that_cannot_be_built_closes_each_socket_with_1011_logged_once(
    settings, caplog
):
    configure(settings, provider="tests.asgi_app.providers.MissingProvider")
    for _ in range(2):
        socket = WebsocketCommunicator(
            _application(), "/chat/", headers=[(b"origin", b"http://testserver")]
        )
        assert (await socket.connect())[0]
        assert await socket.receive_output() == {"type": "websocket.close", "code": 1011}
    logged = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [r.name for r in logged] == ["chatomon.django.service"], logged


async def test_a_database_away_at_admission_sends_store_unavailable_then_closes_1011(
    monkeypatch, caplog
):
    from django.db import OperationalError  # noqa: PLC0415

    from chatomon.django.transports import websocket  # noqa: PLC0415

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")

    monkeypatch.setattr(websocket, "identify", unreachable)
    socket = WebsocketCommunicator(
        _application(), "/chat/", headers=[(b"origin", b"http://testserver")]
    )
    assert (await socket.connect())[0]
    event = json.loads(await socket.receive_from())
    assert (event["type"], event["code"], event["reason"]) == (
        "error",
        "chat_error",
        "store_unavailable",
    )
    assert await socket.receive_output() == {"type": "websocket.close", "code": 1011}
    assert any("database is unavailable" in r.getMessage() for r in caplog.records)


async def test_a_confirm_while_the_database_is_away_answers_store_unavailable(monkeypatch):
    # A confirm frame looks its confirmation up in the store before its turn's task starts:
    # a store failure there escaped the frame's handler, ending the consumer (a socket
    # dropped with no close frame on a server) instead of a chat_error.
    from chatomon.errors import StoreUnavailableError  # noqa: PLC0415

    async def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailableError("the chat store's database is unavailable")

    socket = await open_socket()
    monkeypatch.setattr(chat_service().store, "get_confirmation", unreachable)
    await send(socket, {"type": "confirm", "confirmation_id": str(uuid4()), "confirmed": True})
    event = json.loads(await socket.receive_from(5))
    assert (event["type"], event["code"], event.get("reason")) == (
        "error",
        "chat_error",
        "store_unavailable",
    )
    monkeypatch.undo()
    await send(socket, {"type": "message", "text": "still here"})  # the socket stays open
    assert (await until_terminal(socket))[-1]["type"] == "done"
    await socket.disconnect()


async def test_a_followed_conversation_with_the_store_away_closes_1011_after_the_event(
    monkeypatch,
):
    # `?conversation_id=` is looked up in the store after admission (which may need no
    # database: a cached or signed-cookie session): that failure ended the consumer.
    from chatomon.errors import StoreUnavailableError  # noqa: PLC0415

    async def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailableError("the chat store's database is unavailable")

    monkeypatch.setattr(chat_service().store, "get_conversation", unreachable)
    socket = await open_socket(path=f"/chat/?conversation_id={uuid4()}")
    event = json.loads(await socket.receive_from(5))
    assert (event["type"], event["code"], event.get("reason")) == (
        "error",
        "chat_error",
        "store_unavailable",
    )
    assert await socket.receive_output(5) == {"type": "websocket.close", "code": 1011}


async def test_a_frame_whose_handler_fails_answers_chat_error_and_the_socket_stays_open(
    monkeypatch,
):
    from chatomon.django.transports import websocket  # noqa: PLC0415

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a bug")

    socket = await open_socket()
    monkeypatch.setattr(websocket, "parse_message", broken)
    await send(socket, {"type": "message", "text": "hello"})
    event = json.loads(await socket.receive_from(5))
    assert (event["type"], event["code"]) == ("error", "chat_error")
    assert "bug" not in json.dumps(event)
    monkeypatch.undo()
    await send(socket, {"type": "message", "text": "hello"})
    assert (await until_terminal(socket))[-1]["type"] == "done"
    await socket.disconnect()


async def test_foreign_origins_are_refused_and_allowed_origins_win(settings):
    refused = WebsocketCommunicator(
        _application(), "/chat/", headers=[(b"origin", b"http://evil.example")]
    )
    assert (await refused.connect())[0] is False
    configure(settings, allowed_origins=["https://app.example"])
    host = WebsocketCommunicator(
        _application(), "/chat/", headers=[(b"origin", b"http://testserver")]
    )
    assert (await host.connect())[0] is False
    listed = await open_socket(origin=b"https://app.example")
    await listed.disconnect()


async def test_messages_and_confirms_count_against_the_rate_limit(settings):
    configure(settings, rate_limit={"requests": 1, "window_seconds": 60})
    socket = await open_socket()
    await send(socket, {"type": "message", "text": "one"})
    await until_terminal(socket)
    await send(socket, {"type": "message", "text": "two"})
    refused = json.loads(await socket.receive_from())
    assert refused["code"] == "rate_limited" and refused["retry_after_seconds"] > 0
    await send(socket, {"type": "confirm", "confirmation_id": "x", "confirmed": True})
    assert json.loads(await socket.receive_from())["code"] == "rate_limited"
    await socket.disconnect()


def _application() -> Any:
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    return chat_websocket_application()
