"""`POST chat/stream/`: SSE frames and their ids, headers, the session cookie, heartbeats."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from django.test import AsyncClient

from chatomon.chat.pipeline.wire import TERMINAL_TYPES
from chatomon.chat.store.records import Owner
from chatomon.django.models import Conversation, PendingConfirmation, Turn
from chatomon.django.service import chat_service
from chatomon.django.transports.http import envelope
from chatomon.django.transports.relay import event_id, relays
from chatomon.django.transports.sse import HEARTBEAT, frame, heartbeat_frames
from tests.asgi_app.fixtures import (
    configure,
    make_user,
    sse_events,
    types,
)
from tests.testapp.models import Part

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
STREAM = "/chat/stream/"


async def stream(client: AsyncClient, payload: Any, path: str = STREAM) -> tuple[Any, bytes]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload)
    response = await client.post(
        path, body, content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    if not response.streaming:
        return response, response.content
    return response, b"".join([chunk async for chunk in response.streaming_content])


async def test_a_turn_streams_as_data_frames_with_no_buffering_headers():
    response, body = await stream(AsyncClient(), {"text": "hello"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    assert response["X-Accel-Buffering"] == "no"
    assert response["Cache-Control"] == "no-cache"
    assert body.endswith(b"\n\n")
    events = sse_events(body)
    assert types(events) == ["text_chunk", "text_chunk", "done"]
    ids = [event_id(e["turn_id"], n) for n, e in enumerate(events, start=1)]
    assert body == b"".join(frame(e, i) for e, i in zip(events, ids, strict=True))


async def test_the_turn_starts_when_the_response_is_read_after_the_middleware():
    # The session middleware saves a new anonymous session after the view: a turn started
    # in the view would write beside it (an in-memory SQLite refuses the second writer).
    response = await AsyncClient().post(
        STREAM, json.dumps({"text": "hello"}), content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )  # fmt: skip
    assert response.streaming and "sessionid" in response.cookies
    assert not relays().running and await Turn.objects.acount() == 0
    events = sse_events(b"".join([chunk async for chunk in response.streaming_content]))
    assert types(events)[-1] == "done" and await Turn.objects.acount() == 1


async def test_the_anonymous_session_cookie_comes_with_the_headers():
    client = AsyncClient()
    response, body = await stream(client, {"text": "hello"})
    assert "sessionid" in response.cookies
    conversation = sse_events(body)[-1]["conversation_id"]
    _, again = await stream(client, {"text": "more", "conversation_id": conversation})
    assert sse_events(again)[-1]["conversation_id"] == conversation


async def test_a_heartbeat_comment_keeps_a_quiet_stream_open():
    _, body = await stream(AsyncClient(), {"text": "slow 0.3 hi"}, path="/test/stream/")
    assert body.count(HEARTBEAT) >= 2
    assert body.index(HEARTBEAT) < body.index(b"data: ")
    assert types(sse_events(body)) == ["text_chunk", "done"]


async def test_the_stream_frames_every_event_until_its_source_ends():
    # A stream waiting on its client's confirmation goes on past confirm_mutation.
    async def events() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text_chunk", "content": "a"}
        yield {"type": "confirm_mutation", "id": "c"}
        yield {"type": "done"}

    frames = [f async for f in heartbeat_frames(events(), 5)]
    assert [json.loads(f[6:])["type"] for f in frames] == ["text_chunk", "confirm_mutation", "done"]


async def until_awaiting(turns: int = 1) -> Turn:
    """The turn waiting for its confirmation, once there is one."""
    for _ in range(200):
        waiting = [t async for t in Turn.objects.filter(status="awaiting_confirmation")]
        if len(waiting) >= turns:
            return waiting[-1]
        await asyncio.sleep(0.02)
    raise AssertionError("no turn waits for a confirmation")


async def test_a_client_confirmation_keeps_the_stream_open_until_decided_elsewhere():
    user = await make_user()
    client = AsyncClient()
    await client.aforce_login(user)
    streaming = asyncio.create_task(stream(client, {"text": 'mutate createPart {"name": "Bolt"}'}))
    turn = await until_awaiting()
    await asyncio.sleep(0.1)
    assert not streaming.done()  # the client may still see the confirmation expire
    pending = await PendingConfirmation.objects.aget(turn_id=turn.pk)
    decided = await client.post(
        "/chat/confirm/",
        json.dumps({"confirmation_id": str(pending.pk), "confirmed": True}),
        content_type="application/json",
    )
    assert types(decided.json()["events"])[0] == "confirmation_resolved"
    _, body = await asyncio.wait_for(streaming, 5)  # ends at its next check, nothing more
    events = sse_events(body)
    assert types(events) == ["tool_call", "confirm_mutation"]
    assert (events[-1]["approver"], events[-1]["mutation"]) == ("client", "createPart")
    assert events[-1]["input"]["name"] == "Bolt"


async def test_a_waiting_client_sees_its_confirmation_expire_without_any_sweeper(settings):
    # The reference: confirm_timeout_seconds, "Seconds before a pending confirmation
    # expires". The turn resumes then, the model hears it timed out, one terminal event.
    configure(settings, confirm_timeout_seconds=0.4)
    user = await make_user()
    client = AsyncClient()
    await client.aforce_login(user)
    started = asyncio.get_running_loop().time()
    _, body = await stream(client, {"text": 'mutate createPart {"name": "Bolt"}'})
    waited = asyncio.get_running_loop().time() - started
    events = sse_events(body)
    assert types(events)[:3] == ["tool_call", "confirm_mutation", "confirmation_resolved"]
    assert events[2]["status"] == "expired"
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["result"]["reason"] == "confirmation_timed_out"
    assert [e["type"] for e in events if e["type"] in TERMINAL_TYPES] == [
        "confirm_mutation",
        "done",
    ]
    assert 0.4 <= waited < 3
    assert not await Part.objects.filter(name="Bolt").aexists()
    turn = await Turn.objects.aget(pk=events[-1]["turn_id"])
    assert turn.status == "completed"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{", 400, "bad_message"),
        (b"[]", 400, "bad_message"),
        ({"text": ""}, 400, "bad_message"),
        ({"text": "x" * 8001}, 400, "message_too_long"),
        ({"text": "x" * (1024 * 1024)}, 413, "request_too_large"),
    ],
)
async def test_bad_input_is_one_error_frame_with_its_status_and_no_side_effect(body, status, code):
    response, content = await stream(AsyncClient(), body)
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/event-stream")
    assert [(e["type"], e["code"]) for e in sse_events(content)] == [("error", code)]
    assert await Conversation.objects.acount() == 0


async def test_permission_denial_is_403(settings):
    configure(settings, permission=lambda user, scope: False)
    response, content = await stream(AsyncClient(), {"text": "hi"})
    assert response.status_code == 403
    assert sse_events(content)[0]["code"] == "permission_denied"


async def test_get_is_405_and_a_missing_csrf_token_403():
    assert (await AsyncClient().get(STREAM)).status_code == 405
    response, _ = await stream(AsyncClient(enforce_csrf_checks=True), {"text": "hi"})
    assert response.status_code == 403
    assert await Turn.objects.acount() == 0


async def test_rate_limited_streams_get_429(settings):
    configure(settings, rate_limit={"requests": 1, "window_seconds": 60})
    client = AsyncClient()
    await stream(client, {"text": "hi"})
    response, content = await stream(client, {"text": "hi"})
    assert response.status_code == 429
    assert sse_events(content)[0]["code"] == "rate_limited"


async def test_closing_the_stream_early_cancels_a_bare_event_source():
    # heartbeat_frames owns what it is given: a turn that must outlive its reader is
    # given as a feed's follow() (ChatStreamView; tests/django/test_resume.py).
    service = chat_service()
    owner = Owner.session("reader-went-away")
    frames = heartbeat_frames(service.run_turn(None, "slow 30 hi", owner=owner), 0.01)
    while not await Turn.objects.filter(status="running").aexists():  # the provider waits
        assert await anext(frames) == HEARTBEAT
    await frames.aclose()
    turns = [turn async for turn in Turn.objects.all()]
    assert [turn.status for turn in turns] == ["aborted"]


async def test_a_failing_event_source_ends_with_chat_error():
    async def broken() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text_chunk", "content": "a"}
        raise RuntimeError("boom")

    frames = [json.loads(f[6:]) async for f in heartbeat_frames(broken(), 5)]
    assert [(f["type"], f.get("code")) for f in frames] == [
        ("text_chunk", None),
        ("error", "chat_error"),
    ]
    assert "boom" not in frames[-1]["message"]


def test_frames_and_envelopes_are_json():
    event = {"type": "text_chunk", "content": "Zürich\nline"}
    raw = frame(event)
    assert raw.startswith(b"data: ") and raw.endswith(b"\n\n") and raw.count(b"\n") == 2
    assert json.loads(raw[6:]) == event
    assert envelope([event, {"type": "done"}]) == {
        "events": [event, {"type": "done"}],
        "answer": "Zürich\nline",
    }


async def test_a_slow_event_is_not_lost_to_a_heartbeat():
    async def late() -> AsyncIterator[dict[str, Any]]:
        for index in range(5):
            await asyncio.sleep(0.012)
            yield {"type": "text_chunk", "content": str(index)}
        yield {"type": "done"}

    frames = [f async for f in heartbeat_frames(late(), 0.01)]
    contents = [json.loads(f[6:]).get("content") for f in frames if f != HEARTBEAT]
    assert contents == ["0", "1", "2", "3", "4", None]


def database_down(user: Any, scope: Any) -> bool:
    """A `permission` check that reads the database while it refuses connections."""
    from django.db import OperationalError  # noqa: PLC0415

    raise OperationalError("connection to server failed: Connection refused")


def broken_check(user: Any, scope: Any) -> bool:
    """A `permission` check with a bug."""
    raise KeyError("a bug in the project's check")


@pytest.mark.parametrize(
    ("permission", "status", "reason"),
    [
        ("tests.django.test_sse.database_down", 503, "store_unavailable"),
        ("tests.django.test_sse.broken_check", 500, None),
    ],
)
@pytest.mark.parametrize("path", ["/chat/", STREAM, "/chat/confirm/"])
async def test_a_failure_before_the_turn_answers_chat_error_in_the_endpoints_format(
    settings: Any, path: str, permission: str, status: int, reason: str | None
) -> None:
    # Issue 19, item 4: the database refusing connections while the request reads the
    # user or the session answered Django's bare HTML 500; it is a chat_error in the
    # endpoint's own format, 503 (the client may try again), and any other failure of
    # the checks a 500 chat_error, never HTML.
    configure(settings, permission=permission)
    payload = {"text": "hello", "confirmation_id": "x", "confirmed": True}
    response = await AsyncClient().post(path, payload, content_type="application/json")
    content_type = response["Content-Type"]
    if path == STREAM:
        assert content_type.startswith("text/event-stream")
        (event,) = sse_events(response.content)
    else:
        assert content_type == "application/json"
        (event,) = response.json()["events"]
    assert response.status_code == status
    assert (event["type"], event["code"], event.get("reason")) == ("error", "chat_error", reason)
    assert "refused" not in response.content.decode() and "bug" not in response.content.decode()
