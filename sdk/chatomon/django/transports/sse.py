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

The turn runs in a task of its own, feeding a queue the response reads: the turn's code
always runs in one task (its timeouts and context stay intact), and a client that goes
away cancels that task, which records the turn as aborted.

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

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from chatomon.chat.pipeline.wire import GENERIC_ERROR_MESSAGE, error_event
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.transports.expiry import through_expiry
from chatomon.django.transports.http import ChatEndpoint
from chatomon.storable import storable

__all__ = [
    "HEARTBEAT",
    "HEARTBEAT_SECONDS",
    "ChatStreamView",
    "event_stream_response",
    "frame",
    "heartbeat_frames",
]

logger = logging.getLogger(__name__)

HEARTBEAT = b": heartbeat\n\n"
HEARTBEAT_SECONDS = 15.0
CONTENT_TYPE = "text/event-stream; charset=utf-8"
_END = object()


def frame(event: Mapping[str, Any]) -> bytes:
    r"""One event as an SSE frame, whatever text it holds.

    JSON escapes a NUL, but writes an unpaired surrogate as it is, which has no UTF-8
    encoding: it is replaced with U+FFFD (`storable`) rather than raising and cutting the
    stream with no terminal event.

    Examples:
        >>> frame({"type": "done"})
        b'data: {"type":"done"}\n\n'
        >>> frame({"content": "a\ud800"})
        b'data: {"content":"a\xef\xbf\xbd"}\n\n'
    """
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False, default=str)
    return b"data: " + storable(body).encode() + b"\n\n"


async def _produce(events: AsyncIterator[dict[str, Any]], queue: asyncio.Queue[Any]) -> None:
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
    events: AsyncIterator[dict[str, Any]], heartbeat_seconds: float = HEARTBEAT_SECONDS
) -> AsyncIterator[bytes]:
    """The events as SSE frames, a heartbeat comment after each quiet `heartbeat_seconds`.

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
            yield frame(item)
    finally:
        if getter is not None:
            getter.cancel()
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer


def event_stream_response(
    events: AsyncIterator[dict[str, Any]], heartbeat_seconds: float = HEARTBEAT_SECONDS
) -> StreamingHttpResponse:
    """A streaming `text/event-stream` response of the events."""
    response = StreamingHttpResponse(
        heartbeat_frames(events, heartbeat_seconds), content_type=CONTENT_TYPE
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def refusal_response(status: int, event: Mapping[str, Any]) -> HttpResponse:
    """A refusal as a one-frame event stream with its HTTP status."""
    response = HttpResponse(frame(event), content_type=CONTENT_TYPE, status=status)
    response["Cache-Control"] = "no-cache"
    return response


class ChatStreamView(ChatEndpoint):
    """`POST chat/stream/`: `{"text", "conversation_id"?}` → the turn as an event stream.

    `ChatStreamView.as_view(heartbeat_seconds=1)` changes the heartbeat interval.
    """

    heartbeat_seconds: float = HEARTBEAT_SECONDS

    def refuse(self, request: HttpRequest, status: int, event: dict[str, Any]) -> HttpResponse:
        """A refusal as a one-frame event stream."""
        return refusal_response(status, event)

    async def post(self, request: HttpRequest) -> HttpResponseBase:
        """Stream the turn's events."""
        admitted = await self.admit(request)
        if isinstance(admitted, HttpResponseBase):
            return admitted
        events = through_expiry(admitted.run_turn(), admitted.service, admitted.owner)
        return event_stream_response(events, self.heartbeat_seconds)
