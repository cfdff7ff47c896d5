"""Closing streams as soon as their reader is done with them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

__all__ = ["close_stream", "closing_stream"]

T = TypeVar("T")


async def close_stream(stream: object) -> None:
    """`await stream.aclose()` when the stream has it (async generators do).

    A stream left unclosed is finalized only when the event loop collects it, keeping what
    it holds (a provider connection, a turn) open until then.
    """
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


@contextlib.asynccontextmanager
async def closing_stream(stream: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """`stream`, closed (`close_stream`) when the block ends, however it ends.

    A generator that relays another must close it when it is closed itself: otherwise
    what the inner one runs (sibling tasks, a provider request) outlives the relay.
    """
    try:
        yield stream
    finally:
        await close_stream(stream)
