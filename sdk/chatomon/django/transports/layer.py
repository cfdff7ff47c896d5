"""The channel layer failing (Redis down, or its client timing out): chat sockets go on, degraded.

A chat socket needs the channel layer only for what happens elsewhere: the events of its
turns resumed by someone else (a staff approval, another process, an expiry sweep) and the
close on its user's logout. Its own turns stream without it. So when the layer fails:

- a group join, leave or publish that fails, or takes longer than `CALL_TIMEOUT_SECONDS`
  (a Redis that accepts nothing and refuses nothing would hold a logout request or a staff
  decision for the system's connect timeout, minutes), is skipped (`attempt`); a socket
  joined to nothing still chats;
- a socket's receive from the layer that fails (`LayerReceiver`) is retried, at once when
  it had been waiting a while (a client timeout: the layer answered until then), else after
  a back-off of up to `MAX_BACKOFF_SECONDS`; once the layer answers again the socket rejoins
  its groups, so events published after that reach it.

The socket reads the layer itself, with the channel layer's documented API (`new_channel`,
`receive`, `group_add`, `group_discard`), not through the receive Channels' consumer would
set up and await (a failure raised from that one ends the consumer, dropping the socket
with no close frame): `EitherReceive` hands the consumer the client's frames and the
layer's messages as one ASGI receive, every message received dispatched before either is
asked again, as Channels does with the two.

Each outage is logged once per process (a warning naming the operation and the error), and
its end once (info), not once per socket or per retry: `OUTAGE`. A failure that is a
timeout names the likely cause, a Redis client `socket_timeout` not longer than the layer's
blocking receive (system check chatomon.W003).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Receive = Callable[[], Awaitable[Any]]
"""An ASGI receive: the next message (a mapping with a "type")."""

__all__ = [
    "CALL_TIMEOUT_SECONDS",
    "MAX_BACKOFF_SECONDS",
    "OUTAGE",
    "EitherReceive",
    "LayerOutage",
    "LayerReceiver",
    "attempt",
]

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 30.0
"""The longest wait between two tries of an unreachable layer (the wait doubles from 0.5 s)."""
CALL_TIMEOUT_SECONDS = 5.0
"""The longest a group join, leave or publish may take before it counts as failed."""
QUICK_FAILURE_SECONDS = 1.0
"""A receive failing sooner than this found the layer unreachable: back off before retrying."""


@dataclass
class LayerOutage:
    """Whether the process's channel layer is failing now; logs each outage once."""

    down: bool = False
    failures: int = 0

    def failed(self, operation: str, error: BaseException) -> None:
        """A layer operation failed: log it when it starts an outage."""
        self.failures += 1
        if self.down:
            return
        self.down = True
        cause = ""
        if "timeout" in type(error).__name__.lower():
            cause = (
                " (a timeout: is the Redis client's socket_timeout longer than the layer's "
                "blocking receive? see system check chatomon.W003)"
            )
        logger.warning(
            "chat channel layer failed while %s: %s: %s%s; chat sockets go on without the "
            "events of turns resumed elsewhere and without logout closes until it answers",
            operation,
            type(error).__name__,
            error,
            cause,
        )

    def recovered(self) -> None:
        """A layer operation succeeded: log the end of an outage."""
        if not self.down:
            return
        self.down = False
        logger.info("chat channel layer answers again after %d failures", self.failures)
        self.failures = 0


OUTAGE = LayerOutage()
"""The process's one outage record: one log line per outage, whatever the number of sockets."""


async def attempt(
    operation: str, action: Awaitable[Any], seconds: float = CALL_TIMEOUT_SECONDS
) -> bool:
    """Await a layer operation; False (logged in `OUTAGE`) when it failed or timed out."""
    try:
        await asyncio.wait_for(action, seconds)
    except Exception as error:  # noqa: BLE001 - any layer failure leaves the socket degraded
        OUTAGE.failed(operation, error)
        return False
    OUTAGE.recovered()
    return True


@dataclass
class LayerReceiver:
    """A socket's receive from the layer that never raises a layer failure.

    `receive` reads the socket's channel (the layer's `receive` of its `new_channel`);
    `rejoin` adds the socket to its groups again and returns whether the layer accepted that.
    """

    receive: Callable[[], Awaitable[dict[str, Any]]]
    rejoin: Callable[[], Awaitable[bool]]
    backoff: float = field(default=0.0)

    async def __call__(self) -> dict[str, Any]:
        """The next message from the layer, however long the layer takes to come back."""
        while True:
            started = time.monotonic()
            try:
                message = await self.receive()
            except Exception as error:  # noqa: BLE001 - see the module docstring
                OUTAGE.failed("receiving", error)
                if time.monotonic() - started < QUICK_FAILURE_SECONDS:
                    # Unreachable: wait longer each time, so a dead Redis costs little.
                    self.backoff = min(MAX_BACKOFF_SECONDS, max(0.5, 2 * self.backoff))
                    await asyncio.sleep(self.backoff)
                else:
                    self.backoff = 0.0  # it answered until then: a client timeout
                # Groups joined (or lost) during the outage take effect from now on. Not
                # receiving before they do: a receive that came back while the rejoin
                # failed would wait on the restored layer for groups it is not in.
                while not await self.rejoin():
                    self.backoff = min(MAX_BACKOFF_SECONDS, max(0.5, 2 * self.backoff))
                    await asyncio.sleep(self.backoff)
                continue
            OUTAGE.recovered()
            self.backoff = 0.0
            return message


class EitherReceive:
    """One ASGI receive over several: the next message of whichever source has one first.

    A source's receive that has not answered yet is kept for the next call, never
    cancelled (an ASGI receive that is cancelled may lose its message). Every message
    already received is handed out before any source is asked again, the earliest source
    in `sources` first: so neither source can hold the other back (a client sending frames
    without pause does not delay its logout's close, nor a stream of group events the
    client's disconnect). `aclose` cancels what is still waiting, once the consumer ends.
    """

    def __init__(self, sources: Sequence[Receive]) -> None:
        self.sources = tuple(sources)
        self._waiting: dict[int, asyncio.Future[Any]] = {}

    async def __call__(self) -> Any:
        """The next message of any source (a source's failure is raised here)."""
        if not self._answered():
            for index, source in enumerate(self.sources):
                if index not in self._waiting:
                    self._waiting[index] = asyncio.ensure_future(source())
            await asyncio.wait(self._waiting.values(), return_when=asyncio.FIRST_COMPLETED)
        return self._waiting.pop(self._answered()[0]).result()

    def _answered(self) -> list[int]:
        return sorted(index for index, waiting in self._waiting.items() if waiting.done())

    async def aclose(self) -> None:
        """Cancel the receives still waiting, and wait for them to end."""
        waiting, self._waiting = list(self._waiting.values()), {}
        for receive in waiting:
            receive.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
