"""Client confirmations expire while their client waits, when the reference says.

The reference's `confirm_timeout_seconds` is the lifetime of a pending confirmation. A
client still connected when it runs out (an SSE stream left open after its
`confirm_mutation`, a WebSocket) sees the turn resume then: `confirmation_resolved` with
status "expired", the mutation's timed-out `tool_result`, the model's answer and one
terminal event. Nobody has to run `chat_cleanup` for that; it stays the sweeper of turns
nobody waits on. The expiry is one more claim on the confirmation, so when it races a
decision exactly one of them wins (`ChatService.expire_confirmation` yields nothing to
the loser).

Staff approvals are not watched here: they last a day by default, and the socket of a
turn waiting for staff hears of the decision (or of the sweeper's expiry) through the
conversation's channel-layer group.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async

from chatomon.chat.pipeline import ChatService
from chatomon.chat.pipeline.wire import resolved_event
from chatomon.chat.store.records import Owner
from chatomon.django.persistence.connections import release_spent_connections
from chatomon.errors import StoreUnavailableError

__all__ = [
    "EXPIRY_GRACE_SECONDS",
    "EXPIRY_POLL_SECONDS",
    "awaits_client",
    "seconds_left",
    "through_expiry",
]

logger = logging.getLogger(__name__)

EXPIRY_POLL_SECONDS = 2.0
"""How often a stream waiting on its client's confirmation asks whether it was decided."""
EXPIRY_GRACE_SECONDS = 0.05
"""Waited past `expires_at`, so that the store, reading its own clock, finds it overdue."""


def awaits_client(event: Mapping[str, Any] | None) -> bool:
    """Whether `event` suspended its turn for the end user's own decision."""
    return (
        event is not None
        and event.get("type") == "confirm_mutation"
        and event.get("approver") == "client"
        and isinstance(event.get("expires_at"), str)
    )


def seconds_left(event: Mapping[str, Any], now: datetime | None = None) -> float:
    """Seconds until the confirmation of a `confirm_mutation` event is overdue (at least 0).

    Examples:
        >>> event = {"expires_at": "2026-01-01T12:00:30+00:00"}
        >>> seconds_left(event, datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
        30.05
    """
    expires_at = datetime.fromisoformat(event["expires_at"])
    remaining = (expires_at - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, remaining) + EXPIRY_GRACE_SECONDS


async def through_expiry(
    events: AsyncIterator[dict[str, Any]],
    service: ChatService,
    owner: Owner,
    *,
    poll_seconds: float = EXPIRY_POLL_SECONDS,
) -> AsyncIterator[dict[str, Any]]:
    """`events`, then, if they end waiting on the client, the wait and its expiry.

    While it waits the stream asks every `poll_seconds` whether the confirmation was
    decided elsewhere (`POST chat/confirm/`, whose answer carries the resumed turn): it
    then ends with nothing more. A poll the store cannot answer (the database away) is
    skipped. When it runs out, its expiry's events follow.
    """
    last: dict[str, Any] | None = None
    async for event in events:
        last = event
        yield event
    if last is None or not awaits_client(last):
        return
    # What the request's thread still holds (its middleware's reads, a project's own) is
    # released before the wait, which may last `confirm_timeout_seconds`.
    await sync_to_async(release_spent_connections)()
    key = UUID(last["id"])
    while (remaining := seconds_left(last)) > EXPIRY_GRACE_SECONDS:
        await asyncio.sleep(min(poll_seconds, remaining))
        try:
            found = await service.store.get_confirmation(key, owner=owner)
        except StoreUnavailableError as error:
            # A database restart must not end the wait: the next poll asks again, and
            # the expiry answers store_unavailable itself if the outage outlasts it. Debug
            # only: every waiting stream polls, and the outage is logged where it fails.
            logger.debug("a stream waiting on confirmation %s could not poll: %s", key, error)
            continue
        if found is None or found.status not in ("pending", "expired"):
            return  # decided: its events went to whoever decided
    await asyncio.sleep(EXPIRY_GRACE_SECONDS)
    expired = False
    async for resumed in service.expire_confirmation(key):
        expired = True
        yield resumed
    if not expired:  # another resolved it first (the sweeper): say how, at least
        found = await service.store.get_confirmation(key, owner=owner)
        if found is not None and found.status != "pending":
            ids = {"conversation_id": last["conversation_id"], "turn_id": last["turn_id"]}
            yield {**resolved_event(found), **ids}
