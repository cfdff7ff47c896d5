"""Streamed turns that outlive their connection, and their replay after a reload or a drop.

A streamed turn (SSE, WebSocket) runs in a `TurnFeed`: a task of its own that numbers the
turn's events (the event's *position*) and keeps them in memory while its readers follow
them, and for `READ_GRACE_SECONDS` after the end. When the reader goes away before the
turn ends (a reload, a dropped connection) the feed is *detached*, not cancelled: the turn
runs to its end in this process and is recorded normally, and its events also go to a log
in the Django cache, which other processes can read. A detached feed that has not ended
after `Relays.detached_turn_seconds` is cancelled (recorded aborted): the way a turn
nobody waits on ends early. `resume(owner, turn_id, after)` then follows the turn from
just after position `after`: from this process's feed, else from the cache log.

A turn can have several *streams* (the message's, then the answer of its confirmation);
positions grow from one stream to the next, so the highest position a client saw names
what it has read, stream included.

Read in this order, one concept a module:

1. `positions` — positions, streams (`new_stream`, `stream_of`, `STREAM_STRIDE`), the SSE
   event id (`event_id`, `parse_event_id`) and the WebSocket's `position` field
   (`with_positions`).
2. `feed` — `TurnFeed`: pumps a turn's events, follows them for its readers, detaches when
   they are gone, and then writes the cache log (its keys and lifetimes are there).
3. `registry` — `relays()`, the running event loop's `Relays`: feeds by turn id, the
   bound on a detached feed's run, the grace during which an ended one stays replayable.
4. `replay` — `resume`: which feed, log or wait a reader follows, and when it gives up.

The log goes through the "default" cache alias. A cache that processes do not share (the
local-memory cache, the default) makes a turn resumable only by the process that runs it:
behind several processes, configure a shared one (Redis, memcached) for cross-process
resumption. Django and Channels offer no public hook for an ASGI server's shutdown, so
nothing calls `Relays.aclose()` there: a process stopped mid-turn leaves that turn's row
running (until `chat_cleanup` marks it) and a detached log that stops growing; readers of
either give up after `STALE_SECONDS`.
"""

from chatomon.django.transports.relay.feed import (
    DETACHED_TURN_SECONDS,
    HEAD_REFRESH_SECONDS,
    LOG_PREFIX,
    LOG_TTL_SECONDS,
    TurnFeed,
)
from chatomon.django.transports.relay.positions import (
    STREAM_STRIDE,
    Positioned,
    event_id,
    new_stream,
    parse_event_id,
    stream_of,
    with_positions,
)
from chatomon.django.transports.relay.registry import (
    READ_GRACE_SECONDS,
    REPLAY_GRACE_SECONDS,
    Relays,
    relays,
)
from chatomon.django.transports.relay.replay import (
    POLL_SECONDS,
    STALE_SECONDS,
    TURN_CHECK_SECONDS,
    TURN_ID,
    TURN_NOT_FOUND_MESSAGE,
    resume,
    turn_not_found_event,
)

__all__ = [
    "DETACHED_TURN_SECONDS",
    "HEAD_REFRESH_SECONDS",
    "LOG_PREFIX",
    "LOG_TTL_SECONDS",
    "POLL_SECONDS",
    "READ_GRACE_SECONDS",
    "REPLAY_GRACE_SECONDS",
    "STALE_SECONDS",
    "STREAM_STRIDE",
    "TURN_CHECK_SECONDS",
    "TURN_ID",
    "TURN_NOT_FOUND_MESSAGE",
    "Positioned",
    "Relays",
    "TurnFeed",
    "event_id",
    "new_stream",
    "parse_event_id",
    "relays",
    "resume",
    "stream_of",
    "turn_not_found_event",
    "with_positions",
]
