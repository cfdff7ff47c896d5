r"""`POST chat/stream/`: a turn as server-sent events, `data: <JSON>\n\n` per event.

The response is `text/event-stream` with `Cache-Control: no-cache` and
`X-Accel-Buffering: no` (nginx would otherwise buffer it), streamed from an async iterator
under ASGI. The anonymous session exists before the headers go out, so the first byte the
client reads already comes with a usable session cookie. A comment line (`: heartbeat`) is
sent whenever no event came for `heartbeat_seconds` (15 s) so that proxies keep a long turn
open; the stream ends after the terminal event (done, error, confirm_mutation), except
that a `confirm_mutation` the end user must decide keeps it open until the confirmation is
decided elsewhere (it then ends) or expires (its resumed turn follows; see
`chatomon.django.transports.expiry`).

The turn runs in a task of its own (a `chatomon.django.transports.relay.TurnFeed`): the
turn's code always runs in one task (its timeouts and context stay intact). It starts when
the response is first read, after the response middleware (`turn_stream_response`). Each event
frame of a turn carries the standard SSE `id:` line, `id: <turn_id>:<position>` (1 for the
turn's first event; a stream that continues the turn after its confirmation, `POST
chat/confirm/`, numbers on above every earlier position: see `transports.relay`), before
its `data:` line. A client that goes away does not end the
turn: it is detached, runs to its end and is recorded normally, and can be followed again:

`GET chat/stream/resume/?turn_id=<id>` with the standard `Last-Event-ID: <turn_id>:<n>`
header (or `&after=<n>` for a client that cannot set it; the header alone also names the
turn, and wins over `after` when it names the same turn) answers the turn's events after
position n, each once, then the live ones until the terminal event, with heartbeats
(`ChatResumeView`). It is owner-scoped: another owner's turn, or one unknown or long
finished, is 404 `turn_not_found` (a one-frame event stream), and so is any turn for an
anonymous visitor with no chat yet (no session is made for it); a request naming no turn is
400 `bad_event`. It is admitted as `POST chat/stream/` is (`ChatEndpoint`, in one worker
trip, outside ATOMIC_REQUESTS): visitor tokens and CORS, the `permission` setting (403),
the chat service (500 `chat_error`), the rate limit (429 `rate_limited`: a resume counts as
a request), and a failure of those checks is `chat_error` (503 `store_unavailable`, else
500). A turn that ended while its client was away replays to its terminal event; a
stream that ends without one (the turn ended unseen, or its log expired) leaves the client
to read `GET chat/history/`.

A stream lasts as long as its model takes, and most of that time it waits: the store
releases its database connection after each of its calls (`chatomon.django.persistence`),
so waiting streams hold none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    StreamingHttpResponse,
)

from chatomon.chat.pipeline.wire import (
    GENERIC_ERROR_MESSAGE,
    error_event,
    store_unavailable_event,
)
from chatomon.chat.store.records import Owner
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.settings import ChatSettings
from chatomon.django.transports.admission import Admitted, existing_chat_identity
from chatomon.django.transports.expiry import through_expiry
from chatomon.django.transports.http import ChatEndpoint
from chatomon.django.transports.relay import (
    TURN_NOT_FOUND_MESSAGE,
    Positioned,
    TurnFeed,
    event_id,
    parse_event_id,
    relays,
    resume,
    turn_not_found_event,
)
from chatomon.django.transports.requests import BadRequest
from chatomon.errors import StoreUnavailableError
from chatomon.storable import storable

__all__ = [
    "HEARTBEAT",
    "HEARTBEAT_SECONDS",
    "TURN_NOT_FOUND_MESSAGE",
    "ChatResumeView",
    "ChatStreamView",
    "EventStreamEndpoint",
    "event_stream_response",
    "feed_frames",
    "frame",
    "heartbeat_frames",
    "positioned_frames",
    "streaming_response",
    "turn_stream_response",
]

logger = logging.getLogger(__name__)

HEARTBEAT = b": heartbeat\n\n"
HEARTBEAT_SECONDS = 15.0
CONTENT_TYPE = "text/event-stream; charset=utf-8"
_END = object()


def frame(event: Mapping[str, Any], event_id: str | None = None) -> bytes:
    r"""One event as an SSE frame, whatever text it holds.

    JSON escapes a NUL, but writes an unpaired surrogate as it is, which has no UTF-8
    encoding: it is replaced with U+FFFD (`storable`) rather than raising and cutting the
    stream with no terminal event. `event_id` is written as its `id:` line.

    Examples:
        >>> frame({"type": "done"})
        b'data: {"type":"done"}\n\n'
        >>> frame({"type": "done"}, "t:2")
        b'id: t:2\ndata: {"type":"done"}\n\n'
        >>> frame({"content": "a\ud800"})
        b'data: {"content":"a\xef\xbf\xbd"}\n\n'
    """
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=str)
    data = b"data: " + storable(body).encode() + b"\n\n"
    return data if event_id is None else b"id: " + event_id.encode() + b"\n" + data


async def positioned_frames(events: AsyncIterator[Positioned]) -> AsyncIterator[bytes]:
    """Positioned events as frames with their `id:` (an event with no turn id has none)."""
    async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
        async for position, event in stream:
            turn_id = event.get("turn_id")
            yield frame(event, event_id(turn_id, position) if isinstance(turn_id, str) else None)


async def feed_frames(
    feed: TurnFeed, heartbeat_seconds: float = HEARTBEAT_SECONDS
) -> AsyncIterator[bytes]:
    """A live feed's frames with their ids, a heartbeat after each quiet `heartbeat_seconds`.

    Reads the feed in place (no queue, no task of its own: the feed already runs the turn in
    one); closed before the end (the client went away), it detaches the feed.
    """
    position = 0
    feed.attach()
    try:
        while True:
            while position < len(feed.events):
                event = feed.events[position]
                position += 1
                turn_id = event.get("turn_id")
                ident = None
                if isinstance(turn_id, str):
                    ident = event_id(turn_id, feed.base + position)
                yield frame(event, ident)
            if feed.finished:
                return
            if not await feed.changed(heartbeat_seconds):
                yield HEARTBEAT
    finally:
        feed.left_at(position)


def turn_stream_response(
    admitted: Admitted,
    events: AsyncIterator[dict[str, Any]],
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
    *,
    stream: int = 0,
) -> StreamingHttpResponse:
    """A turn's events as a resumable event stream (`POST chat/stream/`, `chat/confirm/`).

    Open past a client confirmation until it is decided or expires (`through_expiry`),
    each frame with its id, in a feed that outlives the connection (`transports.relay`).
    `stream`: 0 for a message's turn, `new_stream()` for one continued after a decision.
    """
    waiting = through_expiry(events, admitted.service, admitted.owner)
    return streaming_response(_started_frames(admitted.owner, waiting, heartbeat_seconds, stream))


async def _started_frames(
    owner: Owner, events: AsyncIterator[dict[str, Any]], heartbeat_seconds: float, stream: int
) -> AsyncIterator[bytes]:
    """`feed_frames` of a feed started when the response is first read, not in the view.

    The response middleware runs between the view and the first read: a turn started in
    the view would write beside it (a new anonymous session saved on SQLite races the
    turn's opening, and an in-memory SQLite refuses the second writer at once). A client
    gone before the first read never starts the turn.
    """
    feed = relays().start(owner, events, stream=stream)
    async with contextlib.aclosing(feed_frames(feed, heartbeat_seconds)) as frames:  # type: ignore[type-var]
        async for chunk in frames:
            yield chunk


async def _produce(
    events: AsyncIterator[Mapping[str, Any] | bytes], queue: asyncio.Queue[Any]
) -> None:
    try:
        async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
            async for event in stream:
                await queue.put(event)
    except Exception as error:
        logger.exception("chat event stream failed")
        send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error)
        await queue.put(error_event("chat_error", GENERIC_ERROR_MESSAGE))
    finally:
        queue.put_nowait(_END)


async def heartbeat_frames(
    events: AsyncIterator[Mapping[str, Any] | bytes], heartbeat_seconds: float = HEARTBEAT_SECONDS
) -> AsyncIterator[bytes]:
    """The events as SSE frames, a heartbeat comment after each quiet `heartbeat_seconds`.

    An item already framed (bytes, see `positioned_frames`) is sent as it is.

    Ends with the events (a stream waiting on its client's confirmation goes on past its
    `confirm_mutation`: see `chatomon.django.transports.expiry`); closing it early cancels
    the turn.
    """
    queue: asyncio.Queue[Any] = asyncio.Queue()
    producer = asyncio.ensure_future(_produce(events, queue))
    getter: asyncio.Future[Any] | None = None
    try:
        while True:
            # One pending get across heartbeats: a get cancelled by a timeout could lose
            # the event that arrived at the same moment.
            getter = getter or asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter}, timeout=heartbeat_seconds)
            if not done:
                yield HEARTBEAT
                continue
            item, getter = getter.result(), None
            if item is _END:
                return
            yield item if isinstance(item, bytes) else frame(item)
    finally:
        if getter is not None:
            getter.cancel()
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer


def event_stream_response(
    events: AsyncIterator[Mapping[str, Any] | bytes], heartbeat_seconds: float = HEARTBEAT_SECONDS
) -> StreamingHttpResponse:
    """A streaming `text/event-stream` response of the events."""
    return streaming_response(heartbeat_frames(events, heartbeat_seconds))


def streaming_response(frames: AsyncIterator[bytes]) -> StreamingHttpResponse:
    """A streaming `text/event-stream` response of frames, unbuffered by proxies."""
    response = StreamingHttpResponse(frames, content_type=CONTENT_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def refusal_response(status: int, event: Mapping[str, Any]) -> HttpResponse:
    """A refusal as a one-frame event stream with its HTTP status."""
    response = HttpResponse(frame(event), content_type=CONTENT_TYPE, status=status)
    response["Cache-Control"] = "no-cache"
    return response


class EventStreamEndpoint(ChatEndpoint):
    """A chat endpoint answering with an event stream: its refusals are one-frame streams.

    `as_view(heartbeat_seconds=1)` changes the heartbeat interval.
    """

    heartbeat_seconds: float = HEARTBEAT_SECONDS

    def refuse(self, request: HttpRequest, status: int, event: dict[str, Any]) -> HttpResponse:
        """A refusal as a one-frame event stream."""
        return refusal_response(status, event)


class ChatStreamView(EventStreamEndpoint):
    """`POST chat/stream/`: `{"text", "conversation_id"?}` → the turn as an event stream."""

    async def post(self, request: HttpRequest) -> HttpResponseBase:
        """Stream the turn's events."""
        admitted = await self.admit(request)
        if isinstance(admitted, HttpResponseBase):
            return admitted
        return turn_stream_response(admitted, admitted.run_turn(), self.heartbeat_seconds)


def _position(request: HttpRequest) -> tuple[str, int] | None:
    """The turn and position a resume request asks for.

    The turn: `?turn_id=`, else the one `Last-Event-ID` names. The position: the header's
    when it names that turn (the browser's EventSource sends its latest on every
    reconnect, while the URL's `?after=` stays as first written), else `?after=`, else 0.
    """
    last = parse_event_id(request.headers.get("Last-Event-ID"))
    turn_id = request.GET.get("turn_id") or (last[0] if last else "")
    if not turn_id:
        return None
    if last is not None and last[0] == turn_id:
        return turn_id, last[1]
    after = request.GET.get("after", "")
    return turn_id, int(after) if after.isdigit() else 0


class ChatResumeView(EventStreamEndpoint):
    """`GET chat/stream/resume/`: a running or just-finished turn's events (module docstring).

    Admitted as every chat request is (`ChatEndpoint`); what it asks for is in its URL and
    `Last-Event-ID` (`payload`: the turn and the position), and it follows a turn its
    owner already has, so it makes no anonymous chat identity (`identify`).
    """

    http_method_names = ("get",)

    def payload(self, request: HttpRequest, settings: ChatSettings) -> tuple[str, int] | BadRequest:
        """The turn and the position asked for (`_position`), or 400 `bad_event`."""
        asked = _position(request)
        if asked is None:
            message = "Name the turn: ?turn_id= or Last-Event-ID."
            return BadRequest(error_event("bad_event", message))
        return asked

    def identify(self, request: HttpRequest) -> tuple[Owner, str] | HttpResponse:
        """The owner and scope; an anonymous visitor with no chat yet has no turn: 404.

        No identity is created for it (no session, no cookie), and nothing is counted
        against the rate limit: there is nothing it could follow.
        """
        known = existing_chat_identity(getattr(request, "session", None))
        if not request.user.is_authenticated and known is None:
            return self.refuse(request, 404, turn_not_found_event())
        return super().identify(request)

    async def get(self, request: HttpRequest) -> HttpResponseBase:
        """Replay the turn after the asked position, then follow it to its end.

        A resume counts against the rate limit like a message (`admit`): it may follow a
        turn for as long as it runs, and a client looping on it must not go uncounted.
        """
        admitted = await self.admit(request)
        if isinstance(admitted, HttpResponseBase):
            return admitted
        try:
            source = await resume(admitted.owner, *admitted.payload)
        except StoreUnavailableError:
            return self.refuse(request, 503, store_unavailable_event())
        if source is None:
            return self.refuse(request, 404, turn_not_found_event())
        return event_stream_response(positioned_frames(source), self.heartbeat_seconds)
