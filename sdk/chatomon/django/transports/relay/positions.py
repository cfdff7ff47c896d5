"""Where an event stands in its turn: its position, its stream, its SSE event id.

A turn can have several *streams*: the message's, then, after a confirmation, the answer
of the decision (`POST chat/confirm/`, a WebSocket confirm) or of its expiry. Positions are
unique within the turn across its streams and grow from one stream to the next: stream k's
events are at `k * STREAM_STRIDE + 1, + 2, ...`, the message's stream being 0 (positions 1,
2, 3, ...) and a later one numbered by `new_stream()` (tenths of a second since 2020,
increasing in each process). A client that keeps the highest position it saw therefore
never takes an older stream's event for a new one, and `after` names the stream too.

An SSE frame carries its position in its `id:` (`event_id`, read back from a
`Last-Event-ID` by `parse_event_id`); a WebSocket event in a `position` field
(`with_positions`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

__all__ = [
    "STREAM_STRIDE",
    "Positioned",
    "event_id",
    "new_stream",
    "parse_event_id",
    "stream_of",
    "with_positions",
]

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


async def with_positions(events: AsyncIterator[Positioned]) -> AsyncIterator[dict[str, Any]]:
    """Positioned events as events with a `position` field (a WebSocket's own stream).

    An event without a turn id (a refusal before the turn opened) has none. The event is
    copied: the feed's own is shared by its readers.
    """
    async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
        async for position, event in stream:
            yield {**event, "position": position} if "turn_id" in event else event
