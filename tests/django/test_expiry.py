"""A client confirmation expires when the reference says, while its client waits.

The reference: `confirm_timeout_seconds` (default 30), "Seconds before a pending
confirmation expires". A client still connected then (WebSocket here; SSE in
test_sse.py) sees the turn resume as timed out, without anyone running `chat_cleanup`;
exactly one resolution wins when the expiry and a decision race.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.test import AsyncClient

from chatomon.chat.store.records import Owner
from chatomon.django.models import Turn
from chatomon.django.service import chat_service
from tests.asgi_app.fixtures import configure, make_user, types
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
CREATE = {"type": "message", "text": 'mutate createPart {"name": "Bolt"}'}


async def open_socket() -> tuple[WebsocketCommunicator, Any]:
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    user = await make_user()
    client = AsyncClient()
    await client.aforce_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie)]
    socket = WebsocketCommunicator(chat_websocket_application(), "/chat/", headers=headers)
    connected, _ = await socket.connect()
    assert connected
    return socket, user


async def receive_until(socket: WebsocketCommunicator, kind: str, wait: float = 5) -> list[Any]:
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != kind:
        events.append(json.loads(await socket.receive_from(wait)))
    return events


async def test_a_socket_sees_its_confirmation_expire_and_chats_on(settings):
    configure(settings, confirm_timeout_seconds=0.4)
    socket, _ = await open_socket()
    await socket.send_to(text_data=json.dumps(CREATE))
    asked = await receive_until(socket, "confirm_mutation")
    started = asyncio.get_running_loop().time()
    resumed = await receive_until(socket, "done", wait=3)
    assert asyncio.get_running_loop().time() - started < 2.5
    assert resumed[0]["type"] == "confirmation_resolved" and resumed[0]["status"] == "expired"
    result = next(e for e in resumed if e["type"] == "tool_result")
    assert result["result"]["reason"] == "confirmation_timed_out"
    assert resumed[-1]["turn_id"] == asked[-1]["turn_id"]
    assert await socket.receive_nothing(0.3)  # one copy: none from the group
    assert not await Part.objects.filter(name="Bolt").aexists()
    await socket.send_to(text_data=json.dumps({"type": "message", "text": "hello"}))
    assert types(await receive_until(socket, "done"))[-1] == "done"  # no longer pending
    await socket.disconnect()


async def test_a_decision_before_the_expiry_stops_the_wait(settings):
    configure(settings, confirm_timeout_seconds=0.6)
    socket, _ = await open_socket()
    await socket.send_to(text_data=json.dumps(CREATE))
    pending = (await receive_until(socket, "confirm_mutation"))[-1]
    decision = {"type": "confirm", "confirmation_id": pending["id"], "confirmed": True}
    await socket.send_to(text_data=json.dumps(decision))
    decided = await receive_until(socket, "done")
    assert decided[0]["status"] == "approved"
    assert await socket.receive_nothing(1.0)  # no expiry afterwards
    assert await Part.objects.filter(name="Bolt").aexists()
    await socket.disconnect()


@pytest.mark.parametrize("round_", range(3))
async def test_exactly_one_resolution_wins_when_expiry_and_a_decision_race(settings, round_):
    configure(settings, confirm_timeout_seconds=0.2)
    user = await make_user()
    service = chat_service()
    owner = Owner.user(user.pk)
    events = [e async for e in service.run_turn(user, CREATE["text"], owner=owner)]
    pending = events[-1]
    assert pending["type"] == "confirm_mutation"
    await asyncio.sleep(0.25)  # overdue now: both may try

    async def decide() -> list[dict[str, Any]]:
        stream = service.resolve_confirmation(user, pending["id"], True, owner=owner)
        return [e async for e in stream]

    async def expire() -> list[dict[str, Any]]:
        return [e async for e in service.expire_confirmation(pending["id"])]

    decided, expired = await asyncio.gather(decide(), expire())
    # One claim wins: the decision, or the expiry (made by the expiry call, or by the
    # decision's own first touch of an overdue confirmation, which then answers
    # confirmation_unavailable).
    stored = await service.store.get_confirmation(UUID(pending["id"]))
    assert stored is not None and stored.status in ("approved", "expired")
    resolved = [e for e in [*decided, *expired] if e["type"] == "confirmation_resolved"]
    assert len(resolved) <= 1
    if stored.status == "approved":
        assert [e["status"] for e in resolved] == ["approved"] and expired == []
    else:
        assert decided[0]["code"] == "confirmation_unavailable"
    turn = await Turn.objects.aget(pk=pending["turn_id"])
    assert turn.status == "completed"
    created = await Part.objects.filter(name="Bolt").aexists()
    assert created == (stored.status == "approved")


async def socket_just_past_expiry() -> tuple[Any, dict[str, Any]]:
    """A socket whose client confirmation ran out 10 ms ago, before its own timer ran."""
    socket, _ = await open_socket()
    await socket.send_to(text_data=json.dumps(CREATE))
    pending = (await receive_until(socket, "confirm_mutation"))[-1]
    expires_at = datetime.fromisoformat(pending["expires_at"])
    await asyncio.sleep(max(0.0, (expires_at - datetime.now(UTC)).total_seconds()) + 0.01)
    return socket, pending


async def test_a_socket_deciding_just_after_expiry_sees_the_expiry_whole(settings):
    # Its late decision is refused (confirmation_unavailable, the reference's "... or
    # expired"); the expiry that decision's touch ran is still the client's to see, whole.
    configure(settings, confirm_timeout_seconds=0.3)
    socket, pending = await socket_just_past_expiry()
    decision = {"type": "confirm", "confirmation_id": pending["id"], "confirmed": True}
    await socket.send_to(text_data=json.dumps(decision))  # before the socket's own timer
    events = await receive_until(socket, "done", wait=3)
    kinds = [e["type"] for e in events]
    assert kinds.count("confirmation_resolved") == 1 and kinds.count("done") == 1
    resolved = next(e for e in events if e["type"] == "confirmation_resolved")
    assert resolved["status"] == "expired"
    assert kinds.index("confirmation_resolved") < kinds.index("tool_result") < kinds.index("done")
    unavailable = [e for e in events if e.get("code") == "confirmation_unavailable"]
    assert len(unavailable) == 1
    assert await socket.receive_nothing(0.3)
    assert not await Part.objects.filter(name="Bolt").aexists()
    await socket.disconnect()


async def test_a_message_just_after_expiry_waits_for_the_timed_out_turn(settings):
    configure(settings, confirm_timeout_seconds=0.3)
    socket, pending = await socket_just_past_expiry()
    await socket.send_to(text_data=json.dumps({"type": "message", "text": "too soon"}))
    events = await receive_until(socket, "done", wait=3)
    refused = events[0]
    assert refused["type"] == "error"
    assert refused["code"] in ("confirmation_pending", "turn_in_progress")
    assert events[1]["type"] == "confirmation_resolved"
    assert events[-1]["turn_id"] == pending["turn_id"]  # the timed-out turn, not a new one
    await socket.send_to(text_data=json.dumps({"type": "message", "text": "now"}))
    assert (await receive_until(socket, "done"))[-1]["turn_id"] != pending["turn_id"]
    await socket.disconnect()


async def test_a_decision_before_the_expiry_leaves_the_expiry_nothing(settings):
    configure(settings, confirm_timeout_seconds=30)
    user = await make_user()
    service = chat_service()
    owner = Owner.user(user.pk)
    pending = [e async for e in service.run_turn(user, CREATE["text"], owner=owner)][-1]
    deciding = service.resolve_confirmation(user, pending["id"], True, owner=owner)
    decided = [e async for e in deciding]
    assert (decided[0]["status"], decided[-1]["type"]) == ("approved", "done")
    later = datetime.fromisoformat(pending["expires_at"]) + timedelta(seconds=1)
    assert [e async for e in service.expire_confirmation(pending["id"], now=later)] == []
    assert await Part.objects.filter(name="Bolt").aexists()


async def test_a_store_outage_while_a_stream_waits_keeps_it_waiting():
    # An SSE stream waiting on its client's confirmation asks the store every poll whether
    # it was decided: one poll meeting a database restart ended the stream with a bare
    # chat_error (the decision still pending, its client told nothing useful).
    from types import SimpleNamespace  # noqa: PLC0415

    from chatomon.django.transports.expiry import through_expiry  # noqa: PLC0415
    from chatomon.errors import StoreUnavailableError  # noqa: PLC0415

    polls: list[UUID] = []

    async def get_confirmation(key: UUID, owner: Owner) -> Any:
        polls.append(key)
        if len(polls) == 1:
            raise StoreUnavailableError("the chat store's database is unavailable")
        return None  # then: decided elsewhere, the stream ends

    waiting = {
        "type": "confirm_mutation",
        "approver": "client",
        "id": "6f1c8e5e-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
        "expires_at": (datetime.now(UTC) + timedelta(seconds=30)).isoformat(),
    }

    async def events() -> Any:
        yield waiting

    service: Any = SimpleNamespace(store=SimpleNamespace(get_confirmation=get_confirmation))
    streamed = [
        e async for e in through_expiry(events(), service, Owner.user(7), poll_seconds=0.01)
    ]
    assert streamed == [waiting]
    assert polls == [UUID(waiting["id"])] * 2
