"""Closing streams as soon as their reader is done with them."""

from __future__ import annotations

__all__ = ["close_stream"]


async def close_stream(stream: object) -> None:
    """`await stream.aclose()` when the stream has it (async generators do).

    A stream left unclosed is finalized only when the event loop collects it, keeping what
    it holds (a provider connection, a turn) open until then.
    """
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
