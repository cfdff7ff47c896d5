"""Turn events for a plain form post of the console chat: run to the end, then redirect.

Streamed posts (console.js asks for ``text/event-stream``, as
`chatomon.django.transports.confirm.wants_event_stream` reads it) go out as the chat endpoint's own
event stream (`chatomon.django.transports.sse.event_stream_response`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

__all__ = ["drain"]


async def drain(events: AsyncIterator[dict[str, Any]]) -> tuple[str | None, str | None]:
    """Run the events to the end: (conversation id, error code of a failed turn)."""
    conversation_id = error = None
    async for event in events:
        conversation_id = event.get("conversation_id") or conversation_id
        if event.get("type") == "error":
            error = str(event.get("code"))
    return conversation_id, error
