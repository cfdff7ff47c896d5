"""Streamed turns that outlive their connection, and their replay after a reload or a drop.

A streamed turn (SSE, WebSocket) runs in a `TurnFeed`: a task of its own that numbers the
turn's events (the event's *position*) and keeps them in memory while its readers follow
them, and for `READ_GRACE_SECONDS` after the end (a reload at the very end
may have lost the last frames without the server noticing). When the reader goes away
before the turn ends (a reload, a dropped connection) the feed is *detached*, not
cancelled: the turn runs to its end in this process and is recorded normally. A detached
feed that has not ended after `Relays.detached_turn_seconds` is cancelled (recorded
aborted): the way a turn nobody waits on ends early.

A turn can have several *streams*: the message's, then, after a confirmation, the answer
of the decision (`POST chat/confirm/`, a WebSocket confirm) or of its expiry. Positions are
unique within the turn across its streams and grow from one stream to the next: stream k's
events are at `k * STREAM_STRIDE + 1, + 2, ...`, the message's stream being 0 (positions 1,
2, 3, ...) and a later one numbered by `new_stream()` (tenths of a second since 2020,
increasing in each process). A client that keeps the highest position it saw therefore
never takes an older stream's event for a new one, and `after` names the stream too.

Only a detached feed writes its events to the Django cache (public async API, any
backend: the local-memory cache in one process, Redis across processes), so a turn whose
client stays connected costs no cache write. Detaching writes the buffer at once, then the
events that follow in small batches (what arrived while the last write was awaited):

    chatomon:turnlog:<turn_id>:head  {"owner": [kind, key], "stream": k, "last": n,
                                      "finished": bool, "written_at": unix seconds}
    chatomon:turnlog:<turn_id>:<n>   the event at position n

each with a TTL of `LOG_TTL_SECONDS`, longer than a detached turn may run. An event is
written before the head that counts it, so a reader never looks for one not yet there.
The head is the turn's latest stream's (a writer of an older stream stops when it finds a
newer one there); while its turn runs the head is written again at least every
`HEAD_REFRESH_SECONDS`, so a head older than `STALE_SECONDS` names a writer that died.

`resume(owner, turn_id, after)` follows a turn from just after position `after`: from
this process's feed when the turn runs (or just ran) here, else from the cache log,
polling it; a turn that is running but has neither yet (its first event is still to come,
or its connection's end has not been noticed) is waited for while its row says it runs.
A stream older than the one `after` names is never replayed, nor one of this process
that a later stream of the turn replaced elsewhere (a finished feed while the turn's row
says it runs, or one that suspended on a confirmation the row no longer waits on). The
waits are bounded: no feed and no log for `STALE_SECONDS`, or a log whose head went stale,
ends the replay (the client reads the history). Another owner's turn, or one unknown, is
None (the transports answer `turn_not_found`).

`relays()` is the registry of the running event loop, kept on the app config (strong
references: detached turns are not garbage-collected); `Relays.aclose()` cancels and
awaits every feed it holds (tests call it when they end).

The log goes through the "default" cache alias. A cache that processes do not share (the
local-memory cache, the default) makes a turn resumable only by the process that runs it:
behind several processes, configure a shared one (Redis, memcached) for cross-process
resumption. Django and Channels offer no
public hook for an ASGI server's shutdown, so nothing calls it there: a process stopped
mid-turn leaves that turn's row running (until `chat_cleanup` marks it) and a detached
log that stops growing; readers of either give up after `STALE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any

from django.apps import apps
from django.core.cache import caches

from chatomon.chat.pipeline.wire import GENERIC_ERROR_MESSAGE, error_event
from chatomon.chat.store.records import Owner
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.persistence.turns import turn_status
from chatomon.django.transports.reads import read

__all__ = [
    "DETACHED_TURN_SECONDS",
    "LOG_TTL_SECONDS",
    "POLL_SECONDS",
    "READ_GRACE_SECONDS",
    "REPLAY_GRACE_SECONDS",
    "STALE_SECONDS",
    "STREAM_STRIDE",
    "TURN_NOT_FOUND_MESSAGE",
    "Relays",
    "TurnFeed",
    "event_id",
    "new_stream",
    "parse_event_id",
    "relays",
    "resume",
    "stream_of",
    "with_positions",
]

logger = logging.getLogger(__name__)

LOG_PREFIX = "chatomon:turnlog:"
DETACHED_TURN_SECONDS = 900.0
"""How long a detached turn may still run before it is cancelled (and recorded aborted)."""
REPLAY_GRACE_SECONDS = 120.0
"""How long a finished detached feed stays replayable from this process's memory."""
READ_GRACE_SECONDS = 10.0
"""How long a feed read to its end stays replayable: its reader may have gone away just as
the last events were sent (a reload at the very end) without the server noticing."""
LOG_TTL_SECONDS = int(DETACHED_TURN_SECONDS + 300)
"""The cache log's lifetime: longer than a detached turn may run, with time to come back."""
TURN_NOT_FOUND_MESSAGE = "This turn cannot be resumed."
"""The message of `turn_not_found`: an unknown turn, another owner's, or one long finished."""
POLL_SECONDS = 0.25
"""How often a reader of another process's turn asks the cache for more."""
TURN_CHECK_SECONDS = 2.0
"""How often a reader waiting for a turn's first logged event asks whether it still runs."""
STALE_SECONDS = 30.0
"""How long a reader waits with neither a feed nor a log moving before it gives up."""
HEAD_REFRESH_SECONDS = 10.0
"""How often a detached turn's log head is written again while its turn runs quiet."""
STREAM_STRIDE = 1_000_000
"""Positions per stream of a turn: stream k's events are at k * STREAM_STRIDE + 1, ..."""
_EPOCH_2020 = 1_577_836_800.0
_last_stream = 0


def new_stream() -> int:
    """A number for a turn's next stream (after a confirmation): above every earlier one.

    Tenths of a second since 2020 (positions stay below 2**53: exact in JavaScript),
    increasing within the process; two streams of one turn are a decision apart.
    """
    global _last_stream  # noqa: PLW0603 - one counter for the process
    _last_stream = max(int((time.time() - _EPOCH_2020) * 10), _last_stream + 1)
    return _last_stream


def stream_of(position: int) -> int:
    """The stream of a position (0: the message's own)."""
    return position // STREAM_STRIDE


TURN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a resumable turn id looks like (the stores' are 32 hex digits; a caller's own may be
up to 64 of these): anything else from a client is `turn_not_found`, never a cache key (a
memcached backend refuses spaces and control characters)."""

Positioned = tuple[int, dict[str, Any]]
"""An event and its position in its turn's stream (1 for the first)."""


def event_id(turn_id: str, position: int) -> str:
    """The SSE `id:` of an event: `<turn_id>:<position>`.

    Examples:
        >>> event_id("t-1", 3)
        't-1:3'
    """
    return f"{turn_id}:{position}"


def parse_event_id(value: str | None) -> tuple[str, int] | None:
    """The turn id and position of an SSE `Last-Event-ID`; None when it is not one.

    Examples:
        >>> parse_event_id("t-1:3")
        ('t-1', 3)
        >>> parse_event_id("nonsense") is None
        True
    """
    turn_id, _, position = (value or "").strip().rpartition(":")
    if not turn_id or not position.isdigit():
        return None
    return turn_id, int(position)


def _key(turn_id: str, part: str | int) -> str:
    return f"{LOG_PREFIX}{turn_id}:{part}"


class TurnFeed:
    """One streamed turn's events, numbered, in a task of its own (see the module docstring)."""

    def __init__(self, owner: Owner, relays: Relays, stream: int = 0) -> None:
        """A feed of `owner`'s turn (its stream `stream`), registered in `relays`."""
        self.owner = owner
        self.relays = relays
        self.stream = stream
        self.base = stream * STREAM_STRIDE
        """The position before the stream's first event."""
        self.events: list[dict[str, Any]] = []
        """The events so far; the one at position `base + n` is `events[n - 1]`."""
        self.turn_id: str | None = None
        self.finished = False
        self.detached = False
        self.readers = 0
        """Readers following the feed now (`attach`, `left_at`): detached when none is left."""
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.Task[None] | None = None
        self._signal: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def start(self, source: AsyncIterator[dict[str, Any]]) -> None:
        """Run the turn's event source to its end in a task of its own."""
        self.task = asyncio.ensure_future(self._pump(source))

    async def _pump(self, source: AsyncIterator[dict[str, Any]]) -> None:
        try:
            async with contextlib.aclosing(source) as stream:  # type: ignore[type-var]
                async for event in stream:
                    self._append(event)
        except Exception as error:
            logger.exception("chat event stream failed")
            send_chat_error("chat_error", GENERIC_ERROR_MESSAGE, exception=error)
            self._append(error_event("chat_error", GENERIC_ERROR_MESSAGE))
        finally:
            self.finished = True
            self._notify()
            self.relays.finished(self)

    def _append(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if self.turn_id is None and isinstance(event.get("turn_id"), str):
            self.turn_id = event["turn_id"]
            self.relays.named(self)
        self._notify()

    def _notify(self) -> None:
        # One future per change, replaced: any number of readers wait on it at once.
        signal, self._signal = self._signal, asyncio.get_running_loop().create_future()
        signal.set_result(None)

    async def changed(self, within: float | None = None) -> bool:
        """Wait for the next event or the end, at most `within` seconds: whether it came.

        Never cancels what other readers wait on (one future, shared, is only watched).
        """
        done, _ = await asyncio.wait({self._signal}, timeout=within)
        return bool(done)

    async def follow(self, after: int = 0) -> AsyncIterator[Positioned]:
        """The events after position `after`, then each new one, until the turn ends.

        An `after` of an earlier stream follows this one from its start. A reader that
        stops before the end (its client went away) detaches the feed.
        """
        read = max(0, after - self.base)
        self.attach()
        try:
            while True:
                while read < len(self.events):
                    read += 1
                    yield self.base + read, self.events[read - 1]
                if self.finished:
                    return
                await self.changed()
        finally:
            self.left_at(read)

    def attach(self) -> None:
        """A reader starts following the feed (its `left_at` ends that)."""
        self.readers += 1

    def left_at(self, read: int) -> None:
        """A reader stopped after `read` events: the last one detaches an unread feed.

        Another tab still following keeps it attached.
        """
        self.readers = max(0, self.readers - 1)
        if self.readers == 0 and (not self.finished or read < len(self.events)):
            self.detach()

    def detach(self) -> None:
        """The reader went away: the turn goes on, its events go to the cache log too."""
        if self.detached:
            return
        self.detached = True
        self.relays.detached(self)
        self.writer = asyncio.ensure_future(self._write_log())

    def cancel(self) -> None:
        """End the turn now (a logout, a detached turn over its time): recorded aborted."""
        if self.task is not None:
            self.task.cancel()

    async def _write_log(self) -> None:
        written = 0
        try:
            while self.turn_id is None and not self.finished:
                await self.changed()
            if self.turn_id is None:
                return  # ended before the turn opened: nothing to resume
            cache = caches["default"]
            owner = [self.owner.kind, self.owner.key]
            base = self.base
            while True:
                count, finished = len(self.events), self.finished
                batch = {
                    _key(self.turn_id, base + n + 1): self.events[n] for n in range(written, count)
                }
                if batch:
                    await cache.aset_many(batch, LOG_TTL_SECONDS)
                current = await cache.aget(_key(self.turn_id, "head"))
                if isinstance(current, Mapping) and int(current.get("stream", 0)) > self.stream:
                    return  # a later stream of the turn writes the head now
                head = {
                    "owner": owner,
                    "stream": self.stream,
                    "last": base + count,
                    "finished": finished,
                    "written_at": time.time(),
                }
                await cache.aset(_key(self.turn_id, "head"), head, LOG_TTL_SECONDS)
                written = count
                if finished:
                    return
                if written == len(self.events) and not self.finished:
                    await self.changed(HEAD_REFRESH_SECONDS)  # quiet: the head is refreshed
        except Exception as error:  # noqa: BLE001 - replay from other processes is a comfort
            logger.warning("a detached chat turn's log could not be written: %s", error)


class Relays:
    """One event loop's turn feeds: by turn id, and every detached one until it ends."""

    detached_turn_seconds: float = DETACHED_TURN_SECONDS
    grace_seconds: float = REPLAY_GRACE_SECONDS
    read_grace_seconds: float = READ_GRACE_SECONDS

    def __init__(self) -> None:
        """An empty registry."""
        self.by_turn: dict[str, TurnFeed] = {}
        self.running: set[TurnFeed] = set()
        """Every feed not ended yet (strong references: the tasks run on unobserved)."""
        self.timers: dict[TurnFeed, asyncio.TimerHandle] = {}

    def start(
        self, owner: Owner, source: AsyncIterator[dict[str, Any]], stream: int = 0
    ) -> TurnFeed:
        """Run `source` (a turn's events) in a new feed of `owner`'s.

        `stream`: 0 for a message's turn, `new_stream()` for a turn continued after its
        confirmation (see the module docstring).
        """
        feed = TurnFeed(owner, self, stream)
        self.running.add(feed)
        feed.start(source)
        return feed

    def get(self, turn_id: str) -> TurnFeed | None:
        """The feed of `turn_id` in this process (its latest stream), if any."""
        return self.by_turn.get(turn_id)

    def named(self, feed: TurnFeed) -> None:
        """The feed learnt its turn id (its first event): findable by it from now on."""
        assert feed.turn_id is not None
        self.by_turn[feed.turn_id] = feed  # a later stream of a turn (resumed) replaces it

    def detached(self, feed: TurnFeed) -> None:
        """The feed lost its reader: bound its run, keep it after its end for a while."""
        loop = asyncio.get_running_loop()
        if feed.finished:
            self._keep_for_grace(feed, self.grace_seconds)
        else:
            self.timers[feed] = loop.call_later(self.detached_turn_seconds, feed.cancel)

    def finished(self, feed: TurnFeed) -> None:
        """The feed's turn ended: kept a while to be replayed (longer when detached)."""
        self.running.discard(feed)
        grace = self.grace_seconds if feed.detached else self.read_grace_seconds
        self._keep_for_grace(feed, grace)

    def _keep_for_grace(self, feed: TurnFeed, seconds: float) -> None:
        timer = self.timers.pop(feed, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self.timers[feed] = loop.call_later(seconds, self._forget, feed)

    def _forget(self, feed: TurnFeed) -> None:
        self.timers.pop(feed, None)
        if feed.turn_id is not None and self.by_turn.get(feed.turn_id) is feed:
            del self.by_turn[feed.turn_id]

    async def aclose(self) -> None:
        """Cancel every feed still running and await it and its log writer; forget all."""
        feeds = list(self.running) + list(self.by_turn.values())
        for feed in self.running:
            feed.cancel()
        tasks = [t for f in feeds for t in (f.task, f.writer) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        for timer in self.timers.values():  # after: an ending feed starts its grace timer
            timer.cancel()
        self.running.clear()
        self.by_turn.clear()
        self.timers.clear()


def relays() -> Relays:
    """The running event loop's `Relays`, kept on the chatomon app config."""
    config = apps.get_app_config("chatomon")
    registries: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Relays] | None
    registries = getattr(config, "relays", None)
    if registries is None:  # one per loop: a feed's tasks belong to the loop they run on
        registries = weakref.WeakKeyDictionary()
        config.relays = registries  # type: ignore[attr-defined]
    loop = asyncio.get_running_loop()
    registry = registries.get(loop)
    if registry is None:
        registry = registries[loop] = Relays()
    return registry


async def with_positions(events: AsyncIterator[Positioned]) -> AsyncIterator[dict[str, Any]]:
    """Positioned events as events with a `position` field (a WebSocket's own stream).

    An event without a turn id (a refusal before the turn opened) has none. The event is
    copied: the feed's own is shared by its readers.
    """
    async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
        async for position, event in stream:
            yield {**event, "position": position} if "turn_id" in event else event


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
    head = await caches["default"].aget(_key(turn_id, "head"))
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
        head = await cache.aget(_key(turn_id, "head"))
        if not isinstance(head, Mapping):
            return  # expired: the history has what was stored
        stream = int(head.get("stream", 0))
        if stream < stream_of(position):
            return  # the log's stream is older than what was read: the history has it
        position = max(position, stream * STREAM_STRIDE)
        last = int(head.get("last", 0))
        if last > position:
            keys = [_key(turn_id, n) for n in range(position + 1, last + 1)]
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
        head = await cache.aget(_key(turn_id, "head"))
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
