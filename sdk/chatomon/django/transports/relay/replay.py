"""The replay of a streamed turn after a reload or a drop: `resume`.

`resume(owner, turn_id, after)` follows a turn from just after position `after`: from
this process's feed when the turn runs (or just ran) here, else from the cache log,
polling it; a turn that is running but has neither yet (its first event is still to come,
or its connection's end has not been noticed) is waited for while its row says it runs.
A stream older than the one `after` names is never replayed, nor one of this process
that a later stream of the turn replaced elsewhere (a finished feed while the turn's row
says it runs, or one that suspended on a confirmation the row no longer waits on). The
waits are bounded: no feed and no log for `STALE_SECONDS`, or a log whose head went stale
(not rewritten for `STALE_SECONDS`, while its writer refreshes it every
`HEAD_REFRESH_SECONDS`), ends the replay (the client reads the history). Another owner's
turn, or one unknown, is None (the transports answer `turn_not_found`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from django.core.cache import caches

from chatomon.chat.pipeline.wire import error_event
from chatomon.chat.store.records import Owner
from chatomon.django.persistence.turns import turn_status
from chatomon.django.transports.reads import read
from chatomon.django.transports.relay.feed import TurnFeed, log_key
from chatomon.django.transports.relay.positions import STREAM_STRIDE, Positioned, stream_of
from chatomon.django.transports.relay.registry import Relays, relays

__all__ = [
    "POLL_SECONDS",
    "STALE_SECONDS",
    "TURN_CHECK_SECONDS",
    "TURN_ID",
    "TURN_NOT_FOUND_MESSAGE",
    "resume",
    "turn_not_found_event",
]

TURN_NOT_FOUND_MESSAGE = "This turn cannot be resumed."
"""The message of `turn_not_found`: an unknown turn, another owner's, or one long finished."""


def turn_not_found_event(turn_id: str | None = None) -> dict[str, Any]:
    """The `turn_not_found` error both transports answer a resume with (and the turn, if given)."""
    fields = {} if turn_id is None else {"turn_id": turn_id}
    return error_event("turn_not_found", TURN_NOT_FOUND_MESSAGE, **fields)


POLL_SECONDS = 0.25
"""How often a reader of another process's turn asks the cache for more."""
TURN_CHECK_SECONDS = 2.0
"""How often a reader waiting for a turn's first logged event asks whether it still runs."""
STALE_SECONDS = 30.0
"""How long a reader waits with neither a feed nor a log moving before it gives up."""

TURN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a resumable turn id looks like (the stores' are 32 hex digits; a caller's own may be
up to 64 of these): anything else from a client is `turn_not_found`, never a cache key (a
memcached backend refuses spaces and control characters)."""


def _owns(head: Mapping[str, Any], owner: Owner) -> bool:
    return list(head.get("owner") or ()) == [owner.kind, owner.key]


async def _current(feed: TurnFeed, owner: Owner, turn_id: str) -> bool:
    """Whether this process's feed is the turn's latest stream.

    A feed still producing is (no read). One that ended, or that waits on its client's
    confirmation (an SSE stream open past its `confirm_mutation`), is not when the turn's
    row says it runs (a later stream runs elsewhere), nor when it suspended on a
    confirmation the turn no longer waits on (a later stream answered it elsewhere).
    """
    suspended = bool(feed.events) and feed.events[-1].get("type") == "confirm_mutation"
    if not feed.finished and not suspended:
        return True
    status = await read(turn_status, owner, turn_id)
    if status == "running":
        return False
    return not suspended or status in (None, "awaiting_confirmation")


async def resume(owner: Owner, turn_id: str, after: int = 0) -> AsyncIterator[Positioned] | None:
    """`owner`'s turn from just after position `after`, or None (unknown, another owner's).

    Never a stream older than `after`'s, nor one a later stream of the turn replaced
    (module docstring).

    Raises:
        StoreUnavailableError: The turn had to be looked up and the database is away.
    """
    if not TURN_ID.fullmatch(turn_id):
        return None  # not a turn id: never looked up, nor put in a cache key
    registry = relays()
    floor = stream_of(after)
    feed = registry.get(turn_id)
    if feed is not None:
        if feed.owner != owner:
            return None
        if feed.stream >= floor and await _current(feed, owner, turn_id):
            return feed.follow(after)
        floor = max(floor, feed.stream + 1)
    head = await caches["default"].aget(log_key(turn_id, "head"))
    if isinstance(head, Mapping):
        if not _owns(head, owner):
            return None
        if int(head.get("stream", 0)) >= floor:
            return _from_log(turn_id, after)
    if await read(turn_status, owner, turn_id) != "running":
        return None
    return _awaited(registry, owner, turn_id, after, floor)


def _stale(head: Mapping[str, Any]) -> bool:
    """Whether an unfinished log's writer stopped writing (its process died)."""
    written_at = head.get("written_at")
    return isinstance(written_at, int | float) and time.time() - written_at > STALE_SECONDS


async def _from_log(turn_id: str, after: int) -> AsyncIterator[Positioned]:
    """The cache log's events after `after`, polled until its turn ended (or the log did).

    A later stream of the turn found in the log is followed from its start; a log whose
    writer stopped (`_stale`) ends the replay.
    """
    cache = caches["default"]
    position = after
    while True:
        head = await cache.aget(log_key(turn_id, "head"))
        if not isinstance(head, Mapping):
            return  # expired: the history has what was stored
        stream = int(head.get("stream", 0))
        if stream < stream_of(position):
            return  # the log's stream is older than what was read: the history has it
        position = max(position, stream * STREAM_STRIDE)
        last = int(head.get("last", 0))
        if last > position:
            keys = [log_key(turn_id, n) for n in range(position + 1, last + 1)]
            found = await cache.aget_many(keys)
            for n, key in enumerate(keys, start=position + 1):
                if key not in found:
                    return  # evicted: the history has what was stored
                position = n
                yield n, found[key]
        if head.get("finished") or _stale(head):
            return
        await asyncio.sleep(POLL_SECONDS)


async def _awaited(
    registry: Relays, owner: Owner, turn_id: str, after: int, floor: int
) -> AsyncIterator[Positioned]:
    """A running turn with no usable feed or log yet (of stream `floor` or later): wait.

    For as long as its row says it runs, at most `STALE_SECONDS` (a turn orphaned by a
    process that died has a running row and nothing else).
    """
    cache = caches["default"]
    loop = asyncio.get_running_loop()
    began = checked = loop.time()
    source: AsyncIterator[Positioned] | None = None
    while source is None:
        feed = registry.get(turn_id)
        head = await cache.aget(log_key(turn_id, "head"))
        if feed is not None and feed.owner == owner and feed.stream >= floor:
            source = feed.follow(after)
        elif isinstance(head, Mapping) and int(head.get("stream", 0)) >= floor:
            source = _from_log(turn_id, after) if _owns(head, owner) else None
            if source is None:
                return
        elif loop.time() - began >= STALE_SECONDS:
            return  # nothing came: the history has what was stored
        elif loop.time() - checked >= TURN_CHECK_SECONDS:
            checked = loop.time()
            if await read(turn_status, owner, turn_id) != "running":
                return  # it ended unseen by this process: the history has it
        if source is None:
            await asyncio.sleep(POLL_SECONDS)
    async with contextlib.aclosing(source) as stream:  # type: ignore[type-var]
        async for positioned in stream:
            yield positioned
