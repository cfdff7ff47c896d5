"""Live approvals: a channel-layer group every open console listens to over SSE.

Whenever the console decides a confirmation, or `approval_activity_listener` (a ChatService
activity listener) hears one requested or resolved, a message goes to `APPROVALS_GROUP`.
Each console page keeps one SSE connection (`live_stream`); on every message it renders,
for that viewer, the pending badge and the approval queue as out-of-band swaps, which the
htmx SSE extension applies in place. Between messages the stream also compares a cheap
fingerprint of the queue once a second, so confirmations from a service without the
listener, and expiries, still show within a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import BaseChannelLayer, get_channel_layer
from django.db.models import Count, Max, Q
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.template.loader import render_to_string
from django.utils import timezone

from chatomon.django.models import PendingConfirmation

from .access import DECIDE_CONFIRMATION, VIEW_APPROVALS, staff_view
from .approval_display import cards
from .approval_queries import pending_staff_count, queue

__all__ = [
    "APPROVALS_GROUP",
    "announce_approvals_changed",
    "approval_activity_listener",
    "live_stream",
    "sse_event",
]

logger = logging.getLogger(__name__)

APPROVALS_GROUP = "chatomon_console.approvals"
POLL_SECONDS = 1.0
KEEPALIVE_SECONDS = 15.0
APPROVAL_KINDS = frozenset({"confirmation_requested", "confirmation_resolved"})


async def announce_approvals_changed() -> None:
    """Tell every open console that the queue changed (no-op without a channel layer)."""
    layer = get_channel_layer()
    if layer is None:
        return
    await layer.group_send(APPROVALS_GROUP, {"type": "approvals.changed"})


def approval_activity_listener(activity: Any) -> Awaitable[None] | None:
    """A ChatService activity listener announcing requested and resolved confirmations.

    Sync for every other kind, so that delivering those needs no event loop.
    """
    if getattr(activity, "kind", None) in APPROVAL_KINDS:
        return announce_approvals_changed()
    return None


def sse_event(event: str, data: str) -> str:
    """One server-sent event; every line of `data` gets its own ``data:`` field."""
    lines = "".join(f"data: {line}\n" for line in data.splitlines() or [""])
    return f"event: {event}\n{lines}\n"


def live_fragment(request: HttpRequest) -> str:
    """The out-of-band swaps for this viewer: the badge, and the queue if they may see it."""
    now = timezone.now()
    user: Any = request.user
    context: dict[str, Any] = {"pending_count": pending_staff_count(now), "oob": True}
    if user.has_perm(VIEW_APPROVALS):
        context["cards"] = cards(queue(), now=now, may_decide=user.has_perm(DECIDE_CONFIRMATION))
        context["show_queue"] = True
    return render_to_string("chatomon_console/approvals/live.html", context, request=request)


def queue_fingerprint() -> tuple[Any, ...]:
    """What changes whenever the queue or the badge would: one indexed aggregate."""
    now = timezone.now()
    return tuple(
        PendingConfirmation.objects.filter(status="pending")
        .aggregate(
            total=Count("pk"),
            newest=Max("created_at"),
            open=Count("pk", filter=Q(approver="staff", expires_at__gt=now)),
        )
        .values()
    )


async def _events(request: HttpRequest, layer: BaseChannelLayer) -> AsyncIterator[str]:
    channel = await layer.new_channel()
    await layer.group_add(APPROVALS_GROUP, channel)
    fingerprint = sync_to_async(queue_fingerprint)
    try:
        seen, quiet = await fingerprint(), 0.0
        yield "retry: 2000\n: connected\n\n"
        while True:
            try:
                await asyncio.wait_for(layer.receive(channel), timeout=POLL_SECONDS)
            except TimeoutError:
                current = await fingerprint()
                if current == seen:
                    quiet += POLL_SECONDS
                    if quiet >= KEEPALIVE_SECONDS:
                        quiet = 0.0
                        yield ": keep-alive\n\n"
                    continue
            seen, quiet = await fingerprint(), 0.0
            yield sse_event("approvals", await sync_to_async(live_fragment)(request))
    finally:
        await layer.group_discard(APPROVALS_GROUP, channel)


@staff_view()
async def live_stream(request: HttpRequest) -> HttpResponseBase:
    """The SSE stream of out-of-band updates of one console page."""
    layer = get_channel_layer()
    if layer is None:
        # No CHANNEL_LAYERS: no live updates; 204 tells EventSource not to reconnect.
        return HttpResponse(status=204)
    response = StreamingHttpResponse(_events(request, layer), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would otherwise hold the events back
    return response
