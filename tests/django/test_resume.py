"""Streamed turns outlive their reader and replay from a position (transports.relay), in process.

A detached turn runs to its end and is recorded completed; `resume` answers its events
after a position, each once, from this process's feed or from the cache log (what another
process reads), on the local-memory cache and, with REDIS_URL, on Redis. A WebSocket that
drops mid-turn leaves it running, and a new socket resumes it. The wire (uvicorn, SSE's
`Last-Event-ID`, two processes) is tests/django/test_resume_server.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest
from channels.testing.websocket import WebsocketCommunicator
from django.core.cache import caches
from django.db import connection
from django.test import AsyncClient, RequestFactory

from chatomon.chat.pipeline.wire import TERMINAL_TYPES
from chatomon.chat.store.records import Owner
from chatomon.django.models import Turn
from chatomon.django.service import chat_service
from chatomon.django.transports.relay import (
    STREAM_STRIDE,
    Positioned,
    TurnFeed,
    event_id,
    parse_event_id,
    relays,
    resume,
)
from chatomon.django.transports.sse import HEARTBEAT, _position, feed_frames
from tests.asgi_app.fixtures import configure, make_user, sse_events, sse_until, types

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("chat_project", "close_worker_connections"),
]
READER = Owner.session("reader")
REDIS = os.environ.get("REDIS_URL", "")


@pytest.fixture(params=["locmem", "redis"])
def cache_backend(request: pytest.FixtureRequest, settings: Any) -> str:
    """The cache the log goes through: the local-memory cache, then Redis (with REDIS_URL)."""
    if request.param == "redis":
        if not REDIS:
            pytest.skip("needs REDIS_URL")
        backend = "django.core.cache.backends.redis.RedisCache"
        prefix = f"chatomon-resume-{uuid4().hex}"
        settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": REDIS, "KEY_PREFIX": prefix}}
    return str(request.param)


async def drained(source: AsyncIterator[Positioned] | None) -> list[Positioned]:
    assert source is not None
    return [positioned async for positioned in source]


async def until_running() -> None:
    for _ in range(250):  # the turn's row is written by the store's worker thread
        if await Turn.objects.filter(status="running").aexists():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no turn started")


async def started(text: str, owner: Owner = READER) -> tuple[TurnFeed, list[Positioned]]:
    """A turn in a feed, its reader gone after the first event (the feed detached)."""
    feed = relays().start(owner, chat_service().run_turn(None, text, owner=owner))
    reader = feed.follow()
    first = [await anext(reader)]
    await reader.aclose()
    assert feed.detached and not feed.finished
    return feed, first


async def test_a_detached_turn_runs_to_its_end_and_is_recorded_completed(cache_backend):
    feed, first = await started("drip 2 tick")
    assert feed.task is not None
    await feed.task
    turn = await Turn.objects.aget(pk=feed.turn_id)
    assert turn.status == "completed"
    assert types([event for _, event in first]) == ["text_chunk"]
    assert feed.events[-1]["type"] == "done"


async def test_resume_replays_only_what_follows_the_position_then_the_live_events(cache_backend):
    feed, first = await started("drip 2 tick")
    assert feed.turn_id is not None
    replayed = await drained(await resume(READER, feed.turn_id, first[-1][0]))
    positions = [position for position, _ in replayed]
    assert positions == list(range(2, len(feed.events) + 1))
    kinds = types([event for _, event in replayed])
    assert kinds == ["text_chunk", "done"] and kinds.count("done") == 1
    assert replayed[0][1]["content"] == "tick 2 "  # the first chunk is not sent again


async def test_another_process_replays_a_detached_turn_from_the_cache_log(cache_backend):
    feed, _ = await started("drip 2 tick")
    assert feed.task is not None and feed.turn_id is not None
    await feed.task
    assert feed.writer is not None
    await feed.writer
    relays().by_turn.clear()  # as a process that never ran it: the log is all there is
    replayed = await drained(await resume(READER, feed.turn_id, 1))
    assert replayed == list(enumerate(feed.events, start=1))[1:]
    everything = await drained(await resume(READER, feed.turn_id, 0))
    assert [event for _, event in everything] == feed.events
    assert [e["type"] for _, e in everything].count("done") == 1


async def test_the_log_is_followed_while_the_turn_still_runs(cache_backend):
    feed, _ = await started("drip 3 tick")
    assert feed.turn_id is not None
    await asyncio.sleep(0.3)  # the buffer is in the log; the rest comes as it happens
    relays().by_turn.clear()
    replayed = await drained(await resume(READER, feed.turn_id, 0))
    assert types([event for _, event in replayed]) == ["text_chunk"] * 3 + ["done"]
    assert [position for position, _ in replayed] == [1, 2, 3, 4]


async def test_a_turn_of_another_owner_or_unknown_is_not_resumed(cache_backend):
    feed, _ = await started("drip 2 tick")
    assert feed.turn_id is not None
    assert await resume(Owner.session("stranger"), feed.turn_id, 0) is None
    assert await resume(READER, "no-such-turn", 0) is None
    assert feed.task is not None
    await feed.task
    assert feed.writer is not None
    await feed.writer
    relays().by_turn.clear()
    assert await resume(Owner.session("stranger"), feed.turn_id, 0) is None  # from the log


async def test_a_running_turn_with_no_event_yet_is_waited_for():
    # Its client went away before its first event: only its row says it runs (owner-scoped).
    feed = relays().start(READER, chat_service().run_turn(None, "slow 0.6 hi", owner=READER))
    await until_running()
    feed.detach()
    turn = await Turn.objects.aget()
    assert feed.turn_id is None
    assert await resume(Owner.session("stranger"), turn.pk, 0) is None
    replayed = await drained(await resume(READER, turn.pk, 0))
    assert types([event for _, event in replayed]) == ["text_chunk", "done"]


async def test_a_detached_turn_over_its_time_is_cancelled_and_recorded_aborted(monkeypatch):
    monkeypatch.setattr(relays(), "detached_turn_seconds", 0.2)
    feed = relays().start(READER, chat_service().run_turn(None, "slow 30 hi", owner=READER))
    await until_running()
    feed.detach()
    assert feed.task is not None
    await asyncio.wait({feed.task}, timeout=5)
    assert feed.task.cancelled()
    assert [t.status async for t in Turn.objects.all()] == ["aborted"]


def test_event_ids_name_the_turn_and_the_position():
    assert parse_event_id(event_id("a:b", 12)) == ("a:b", 12)
    assert parse_event_id("a:") is None and parse_event_id(None) is None


async def open_socket(
    username: str, path: str = "/chat/", client: AsyncClient | None = None
) -> WebsocketCommunicator:
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    if client is None:
        client = AsyncClient()
        await client.aforce_login(await make_user(username))
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"origin", b"http://testserver"), (b"cookie", cookie)]
    socket = WebsocketCommunicator(chat_websocket_application(), path, headers=headers)
    assert (await socket.connect())[0]
    return socket


async def until_terminal(socket: WebsocketCommunicator) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] not in TERMINAL_TYPES:
        events.append(json.loads(await socket.receive_from(10)))
    return events


async def test_a_socket_that_drops_mid_turn_is_resumed_by_the_next_one(cache_backend):
    first = await open_socket("alice")
    await first.send_to(text_data=json.dumps({"type": "message", "text": "drip 2 tick"}))
    seen = [json.loads(await first.receive_from(5))]
    await first.disconnect()
    turn_id = seen[0]["turn_id"]
    later = await open_socket("alice")
    stranger = await open_socket("mallory")
    await stranger.send_to(text_data=json.dumps({"type": "resume", "turn_id": turn_id}))
    refused = json.loads(await stranger.receive_from(5))
    assert (refused["type"], refused["code"]) == ("error", "turn_not_found")
    await later.send_to(text_data=json.dumps({"type": "resume", "turn_id": turn_id, "after": 1}))
    rest = await until_terminal(later)
    assert types(seen + rest) == ["text_chunk", "text_chunk", "done"]
    assert [e["content"] for e in seen + rest[:1]] == ["tick 1 ", "tick 2 "]
    assert rest[-1]["turn_id"] == turn_id
    assert await later.receive_nothing(0.2)
    assert (await Turn.objects.aget(pk=turn_id)).status == "completed"
    await later.send_to(text_data=json.dumps({"type": "resume", "turn_id": 7}))
    assert json.loads(await later.receive_from(5))["code"] == "bad_event"
    await later.disconnect()
    await stranger.disconnect()


async def test_a_streams_frames_carry_ids_and_heartbeats_and_closing_it_detaches_the_turn():
    feed = relays().start(READER, chat_service().run_turn(None, "drip 2 tick", owner=READER))
    frames = feed_frames(feed, 0.05)
    assert await anext(frames) == HEARTBEAT  # the first chunk comes after a second
    while (framed := await anext(frames)) == HEARTBEAT:
        pass
    assert feed.turn_id is not None
    assert framed.startswith(f"id: {feed.turn_id}:1\ndata: ".encode())
    assert not feed.detached
    await frames.aclose()  # the client went away
    assert feed.detached and not feed.finished


async def test_a_resumed_turn_that_suspends_ends_with_its_confirmation(settings):
    configure(settings, provider_config={"delay_seconds": 0.3})  # gone before the tool call
    user = await make_user("alice")
    owner = Owner.user(user.pk)
    create = 'mutate createPart {"name": "Bolt"}'
    feed = relays().start(owner, chat_service().run_turn(user, create, owner=owner))
    await until_running()
    feed.detach()
    turn = await Turn.objects.aget()
    replayed = [event for _, event in await drained(await resume(owner, turn.pk, 0))]
    assert types(replayed) == ["tool_call", "confirm_mutation"]
    assert replayed[-1]["approver"] == "client" and replayed[-1]["turn_id"] == turn.pk
    assert (await Turn.objects.aget()).status == "awaiting_confirmation"


async def confirmed_over_sse(client: AsyncClient, waiting: dict[str, Any]) -> Any:
    return await client.post(
        "/chat/confirm/",
        json.dumps({"confirmation_id": waiting["id"], "confirmed": True}),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )


async def test_an_sse_confirmation_answer_dropped_mid_turn_resumes_and_finishes_once(settings):
    # Review finding 3: the confirmation's SSE answer had no ids and was cancelled on close.
    configure(settings, provider_config={"delay_seconds": 0.3})
    user = await make_user("alice")
    client = AsyncClient()
    await client.aforce_login(user)
    create = 'mutate createPart {"name": "Bolt"}'
    asked = await client.post(
        "/chat/stream/", json.dumps({"text": create}), content_type="application/json"
    )
    waiting = (await sse_until(asked))[-1]
    response = await confirmed_over_sse(client, waiting)
    chunks = response.streaming_content
    first = await anext(chunks)
    while first == HEARTBEAT:
        first = await anext(chunks)
    await chunks.aclose()  # the connection dropped after the decision
    last = parse_event_id(first.split(b"\n")[0].removeprefix(b"id: ").decode())
    assert last is not None and last[0] == waiting["turn_id"]
    assert sse_events(first)[0]["type"] == "confirmation_resolved"
    assert last[1] > 1  # above the message stream's positions (1, 2)
    rest = await drained(await resume(Owner.user(user.pk), *last))
    assert types([e for _, e in rest]) == ["tool_result", "text_chunk", "done"]
    assert [p for p, _ in rest] == [last[1] + 1, last[1] + 2, last[1] + 3]
    assert (await Turn.objects.aget(pk=waiting["turn_id"])).status == "completed"


async def test_a_stream_replaced_by_a_later_one_elsewhere_is_not_replayed(settings):
    # Review finding 2: this process still holds the message stream's finished feed (its
    # confirm_mutation) while the confirmation's answer runs detached in another process.
    configure(settings, provider_config={"delay_seconds": 0.3})
    user = await make_user("alice")
    owner = Owner.user(user.pk)
    client = AsyncClient()
    await client.aforce_login(user)
    create = 'mutate createPart {"name": "Bolt"}'
    message = relays().start(owner, chat_service().run_turn(user, create, owner=owner))
    asked = [event for _, event in await drained(message.follow())]
    assert types(asked) == ["tool_call", "confirm_mutation"]
    response = await confirmed_over_sse(client, asked[-1])
    chunks = response.streaming_content
    while await anext(chunks) == HEARTBEAT:
        pass
    await chunks.aclose()  # dropped: the answer runs on detached, in its cache log
    answer = relays().get(asked[-1]["turn_id"])
    assert answer is not None and answer is not message
    answer.detach()  # as the server does when it notices the client went away
    await asyncio.sleep(0.1)  # its log is written
    relays().by_turn[message.turn_id or ""] = message  # as the process that ran the message
    replayed = await drained(await resume(owner, asked[-1]["turn_id"], 0))
    kinds = types([event for _, event in replayed])
    assert kinds == ["confirmation_resolved", "tool_result", "text_chunk", "done"]
    assert replayed[0][0] > STREAM_STRIDE  # above every position of the message's stream
    again = await drained(await resume(owner, asked[-1]["turn_id"], replayed[0][0]))
    assert types([event for _, event in again]) == kinds[1:]


async def socket_waiting_for_confirmation(client: AsyncClient) -> tuple[Any, dict[str, Any]]:
    socket = await open_socket("alice", client=client)
    create = 'mutate createPart {"name": "Bolt"}'
    await socket.send_to(text_data=json.dumps({"type": "message", "text": create}))
    return socket, (await until_terminal(socket))[-1]


async def test_a_socket_resuming_a_confirmations_answer_gets_it_once(settings):
    # Review finding 1: the answer is also published to the conversation's group, which the
    # resuming socket joined (?conversation_id=): its copies arrived as well.
    configure(settings, provider_config={"delay_seconds": 0.3})
    client = AsyncClient()
    await client.aforce_login(await make_user("alice"))
    first, waiting = await socket_waiting_for_confirmation(client)
    assert waiting["type"] == "confirm_mutation" and waiting["position"] == 2
    decision = {"type": "confirm", "confirmation_id": waiting["id"], "confirmed": True}
    await first.send_to(text_data=json.dumps(decision))
    resolved = json.loads(await first.receive_from(5))
    assert resolved["type"] == "confirmation_resolved" and resolved["position"] > STREAM_STRIDE
    await first.disconnect()
    path = f"/chat/?conversation_id={waiting['conversation_id']}"
    later = await open_socket("alice", path, client)
    resuming = {"type": "resume", "turn_id": waiting["turn_id"], "after": resolved["position"]}
    await later.send_to(text_data=json.dumps(resuming))
    rest = await until_terminal(later)
    assert types(rest) == ["tool_result", "text_chunk", "done"]
    positions = [event["position"] for event in rest]
    assert positions == [resolved["position"] + n for n in (1, 2, 3)]
    assert await later.receive_nothing(0.5)  # no group copy follows
    await later.disconnect()


async def test_a_logout_aborts_the_turn_a_socket_resumed():
    # Review finding 5: the resumed turn was not the socket's feed, so nothing cancelled it.
    client = AsyncClient()
    await client.aforce_login(await make_user("alice"))
    first = await open_socket("alice", client=client)
    await first.send_to(text_data=json.dumps({"type": "message", "text": "drip 30 tick"}))
    seen = json.loads(await first.receive_from(5))
    await first.disconnect()
    later = await open_socket("alice", client=client)
    resuming = {"type": "resume", "turn_id": seen["turn_id"], "after": seen["position"]}
    await later.send_to(text_data=json.dumps(resuming))
    assert json.loads(await later.receive_from(5))["position"] == 2
    await client.post("/test/logout/")
    assert await later.receive_output(5) == {"type": "websocket.close", "code": 4401}
    assert (await Turn.objects.aget(pk=seen["turn_id"])).status == "aborted"


async def test_a_turn_orphaned_by_a_dead_process_is_waited_for_a_bounded_time(monkeypatch):
    # Review finding 4: a running row with no feed and no log (its process died), or a log
    # whose writer stopped, kept a resume waiting until the cleanup or the log's expiry.
    from chatomon.django.transports.relay import replay  # noqa: PLC0415

    monkeypatch.setattr(replay, "STALE_SECONDS", 0.6)
    feed = relays().start(READER, chat_service().run_turn(None, "slow 30 hi", owner=READER))
    await until_running()
    turn = await Turn.objects.aget()
    assert feed.turn_id is None  # no event yet: as another process's turn, nothing to read
    replayed = await asyncio.wait_for(drained(await resume(READER, turn.pk, 0)), 5)
    assert replayed == []  # given up: the client reads the history
    head = {"owner": [READER.kind, READER.key], "stream": 0, "last": 0, "finished": False}
    await caches["default"].aset(f"chatomon:turnlog:{turn.pk}:head", {**head, "written_at": 0})
    stale = await asyncio.wait_for(drained(await resume(READER, turn.pk, 0)), 5)
    assert stale == []  # the log's writer stopped long ago
    feed.cancel()
    # The cancelled turn records itself aborted: done before the test database is flushed
    # (on a shared in-memory SQLite the flush met "database table is locked").
    assert feed.task is not None
    await asyncio.gather(feed.task, return_exceptions=True)
    assert (await Turn.objects.aget()).status == "aborted"


async def test_a_resume_naming_no_turn_id_is_not_found_without_touching_the_cache():
    # Review finding 10: a client's turn id went into cache keys as it came (memcached
    # refuses spaces and control characters: InvalidCacheKey, a 500).
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the local-memory cache warns of a memcached-bad key
        assert await resume(READER, "not a turn", 0) is None
        assert await resume(READER, "t" * 65, 0) is None


def test_last_event_id_wins_over_a_stale_after_for_the_same_turn():
    # Review finding 10: an EventSource sends its latest id on reconnect; the URL's ?after=
    # stays as first written.
    factory = RequestFactory()
    header = {"Last-Event-ID": "t1:5"}
    assert _position(factory.get("/r/?turn_id=t1&after=2", headers=header)) == ("t1", 5)
    assert _position(factory.get("/r/?turn_id=t2&after=2", headers=header)) == ("t2", 2)
    assert _position(factory.get("/r/", headers=header)) == ("t1", 5)
    assert _position(factory.get("/r/?turn_id=t1")) == ("t1", 0)


async def test_a_resume_counts_against_the_rate_limit(settings):
    # Review finding 7: a resume skipped the limiter, over SSE and over the WebSocket.
    configure(settings, rate_limit={"requests": 1, "window_seconds": 60})
    client = AsyncClient()
    await client.aforce_login(await make_user("alice"))
    response = await client.post(
        "/chat/stream/", json.dumps({"text": "hello"}), content_type="application/json"
    )
    turn_id = sse_events(b"".join([c async for c in response.streaming_content]))[-1]["turn_id"]
    refused = await client.get(f"/chat/stream/resume/?turn_id={turn_id}")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert sse_events(refused.content)[0]["code"] == "rate_limited"
    socket = await open_socket("alice", client=client)
    await socket.send_to(text_data=json.dumps({"type": "resume", "turn_id": turn_id}))
    assert json.loads(await socket.receive_from(5))["code"] == "rate_limited"
    await socket.disconnect()


async def test_a_feed_is_detached_only_when_its_last_reader_leaves():
    # Review finding 7: any reader leaving detached the feed while another tab still read it.
    feed = relays().start(READER, chat_service().run_turn(None, "drip 3 tick", owner=READER))
    frames, other = feed_frames(feed, 5), feed.follow()
    while await anext(frames) == HEARTBEAT:
        pass
    await anext(other)
    await frames.aclose()
    assert not feed.detached and feed.readers == 1
    await other.aclose()
    assert feed.detached and feed.readers == 0


async def streamed_turn(client: AsyncClient, text: str = "drip 2 tick") -> str:
    """The id of a turn `POST chat/stream/` ran to its end."""
    response = await client.post(
        "/chat/stream/", json.dumps({"text": text}), content_type="application/json"
    )
    events = sse_events(b"".join([chunk async for chunk in response.streaming_content]))
    return str(events[-1]["turn_id"])


async def test_a_resume_stays_out_of_atomic_requests(settings):
    # Its view had an as_view of its own without non_atomic_requests: under ATOMIC_REQUESTS
    # Django refused the async view (RuntimeError, a 500) instead of replaying the turn.
    seen: list[bool] = []

    def permission(user: Any, scope: Any) -> bool:
        seen.append(connection.in_atomic_block)
        return True

    configure(settings, permission=permission)
    client = AsyncClient()
    await client.aforce_login(await make_user("alice"))
    turn_id = await streamed_turn(client)
    settings.DATABASES["default"]["ATOMIC_REQUESTS"] = True
    try:
        resumed = await client.get(f"/chat/stream/resume/?turn_id={turn_id}&after=1")
        body = b"".join([chunk async for chunk in resumed.streaming_content])
    finally:
        settings.DATABASES["default"]["ATOMIC_REQUESTS"] = False
    assert resumed.status_code == 200
    assert types(sse_events(body)) == ["text_chunk", "done"]
    assert seen == [False, False]  # the message's checks, then the resume's


async def test_the_history_stays_out_of_atomic_requests(settings):
    # Its as_view lacked non_atomic_requests too: Django refused the async view (a 500).
    configure(settings)
    client = AsyncClient()
    await client.aforce_login(await make_user("alice"))
    await streamed_turn(client)
    settings.DATABASES["default"]["ATOMIC_REQUESTS"] = True
    try:
        history = await client.get("/chat/history/")
    finally:
        settings.DATABASES["default"]["ATOMIC_REQUESTS"] = False
    assert history.status_code == 200
    assert history.json()["items"]


@pytest.mark.parametrize(
    ("permission", "status", "reason"),
    [
        ("tests.django.test_sse.database_down", 503, "store_unavailable"),
        ("tests.django.test_sse.broken_check", 500, None),
    ],
)
async def test_a_resume_whose_checks_fail_answers_chat_error_as_an_event_stream(
    settings, permission, status, reason
):
    # The checks are the chat endpoints' own (ChatEndpoint.admit): a failure there was
    # Django's HTML 500 for a resume.
    configure(settings, permission=permission)
    response = await AsyncClient().get("/chat/stream/resume/?turn_id=t1")
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/event-stream")
    (event,) = sse_events(response.content)
    assert (event["code"], event.get("reason")) == ("chat_error", reason)


async def test_a_resume_refuses_as_an_event_stream_and_makes_no_chat_identity(settings):
    configure(settings, rate_limit={"requests": 1, "window_seconds": 60})
    visitor = AsyncClient()
    for _ in range(2):  # an anonymous visitor with no chat: nothing counted, no session
        refused = await visitor.get("/chat/stream/resume/?turn_id=t1")
        assert refused.status_code == 404 and "sessionid" not in visitor.cookies
        assert sse_events(refused.content)[0]["code"] == "turn_not_found"
    unnamed = await visitor.get("/chat/stream/resume/")
    assert (unnamed.status_code, sse_events(unnamed.content)[0]["code"]) == (400, "bad_event")
    configure(settings, permission=lambda user, scope: False)
    denied = await visitor.get("/chat/stream/resume/?turn_id=t1")
    assert denied.status_code == 403 and denied["Content-Type"].startswith("text/event-stream")
    assert sse_events(denied.content)[0]["code"] == "permission_denied"
