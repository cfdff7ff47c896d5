"""Turn events over the wire for the console chat: SSE frames, or drained for a plain form post."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, StreamingHttpResponse

__all__ = ["drain", "sse_frames", "sse_response", "wants_stream"]


def wants_stream(request: HttpRequest) -> bool:
    """Whether the browser asked for the events as they happen (console.js does)."""
    return "text/event-stream" in request.headers.get("Accept", "")


async def sse_frames(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    """Each event as one SSE frame named by its type, data the event as JSON."""
    async for event in events:
        data = json.dumps(event, cls=DjangoJSONEncoder)
        yield f"event: {event.get('type', 'message')}\ndata: {data}\n\n"


def sse_response(events: AsyncIterator[dict[str, Any]]) -> StreamingHttpResponse:
    """A streaming text/event-stream response of the events."""
    response = StreamingHttpResponse(sse_frames(events), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


async def drain(events: AsyncIterator[dict[str, Any]]) -> tuple[str | None, str | None]:
    """Run the events to the end: (conversation id, error code of a failed turn)."""
    conversation_id = error = None
    async for event in events:
        conversation_id = event.get("conversation_id") or conversation_id
        if event.get("type") == "error":
            error = str(event.get("code"))
    return conversation_id, error
