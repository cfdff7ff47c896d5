"""One streamed turn's events, numbered, in a task that outlives its reader: `TurnFeed`.

A feed runs a turn's event source in a task of its own, numbers the events (their
positions, `relay.positions`) and keeps them in memory while its readers follow them.
When the last reader goes away before the turn ends (a reload, a dropped connection) the
feed is *detached*, not cancelled: the turn runs to its end in this process and is
recorded normally. A detached feed that has not ended after `DETACHED_TURN_SECONDS` (the
registry's `Relays.detached_turn_seconds`) is cancelled (recorded aborted): the way a turn
nobody waits on ends early.

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
`HEAD_REFRESH_SECONDS`, so a head older than `relay.replay.STALE_SECONDS` names a writer
that died (its reader gives up).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from django.core.cache import caches

from chatomon.chat.pipeline.wire import GENERIC_ERROR_MESSAGE, error_event
from chatomon.chat.store.records import Owner
from chatomon.django.audit.signals import send_chat_error
from chatomon.django.transports.relay.positions import STREAM_STRIDE, Positioned

__all__ = [
    "DETACHED_TURN_SECONDS",
    "HEAD_REFRESH_SECONDS",
    "LOG_PREFIX",
    "LOG_TTL_SECONDS",
    "FeedRegistry",
    "TurnFeed",
    "log_key",
]

logger = logging.getLogger(__name__)

LOG_PREFIX = "chatomon:turnlog:"
DETACHED_TURN_SECONDS = 900.0
"""How long a detached turn may still run before it is cancelled (and recorded aborted)."""
LOG_TTL_SECONDS = int(DETACHED_TURN_SECONDS + 300)
"""The cache log's lifetime: longer than a detached turn may run, with time to come back."""
HEAD_REFRESH_SECONDS = 10.0
"""How often a detached turn's log head is written again while its turn runs quiet."""


def log_key(turn_id: str, part: str | int) -> str:
    """The cache key of a turn's log head (`part` "head") or of its event at position `part`."""
    return f"{LOG_PREFIX}{turn_id}:{part}"


class FeedRegistry(Protocol):
    """What a feed tells the registry that holds it (`relay.registry.Relays`)."""

    def named(self, feed: TurnFeed) -> None:
        """The feed learnt its turn id (its first event)."""

    def detached(self, feed: TurnFeed) -> None:
        """The feed lost its reader."""

    def finished(self, feed: TurnFeed) -> None:
        """The feed's turn ended."""


class TurnFeed:
    """One streamed turn's events, numbered, in a task of its own (see the module docstring)."""

    def __init__(self, owner: Owner, relays: FeedRegistry, stream: int = 0) -> None:
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
                    log_key(self.turn_id, base + n + 1): self.events[n]
                    for n in range(written, count)
                }
                if batch:
                    await cache.aset_many(batch, LOG_TTL_SECONDS)
                current = await cache.aget(log_key(self.turn_id, "head"))
                if isinstance(current, Mapping) and int(current.get("stream", 0)) > self.stream:
                    return  # a later stream of the turn writes the head now
                head = {
                    "owner": owner,
                    "stream": self.stream,
                    "last": base + count,
                    "finished": finished,
                    "written_at": time.time(),
                }
                await cache.aset(log_key(self.turn_id, "head"), head, LOG_TTL_SECONDS)
                written = count
                if finished:
                    return
                if written == len(self.events) and not self.finished:
                    await self.changed(HEAD_REFRESH_SECONDS)  # quiet: the head is refreshed
        except Exception as error:  # noqa: BLE001 - replay from other processes is a comfort
            logger.warning("a detached chat turn's log could not be written: %s", error)
