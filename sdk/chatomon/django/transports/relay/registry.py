"""The process's turn feeds, by event loop: `relays()` and its `Relays`.

`relays()` is the registry of the running event loop, kept on the app config (strong
references: detached turns are not garbage-collected). It finds a turn's feed by turn id
(its latest stream's), bounds a detached feed's run (`Relays.detached_turn_seconds`), and
keeps an ended feed replayable from memory for a while: `READ_GRACE_SECONDS` after a
reader read it to its end (a reload at the very end may have lost the last frames without
the server noticing), `REPLAY_GRACE_SECONDS` after a detached one ended.
`Relays.aclose()` cancels and awaits every feed it holds (tests call it when they end;
nothing calls it on a server's shutdown: see the package docstring).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from typing import Any

from django.apps import apps

from chatomon.chat.store.records import Owner
from chatomon.django.transports.relay.feed import DETACHED_TURN_SECONDS, TurnFeed

__all__ = ["READ_GRACE_SECONDS", "REPLAY_GRACE_SECONDS", "Relays", "relays"]

REPLAY_GRACE_SECONDS = 120.0
"""How long a finished detached feed stays replayable from this process's memory."""
READ_GRACE_SECONDS = 10.0
"""How long a feed read to its end stays replayable: its reader may have gone away just as
the last events were sent (a reload at the very end) without the server noticing."""


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
        confirmation (see `relay.positions`).
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
