"""`TurnBudget`: the rate-limit hook a turn consults before each step that spends tokens.

The chat service is transport-neutral; the Django app supplies a budget over its cache
(token limits per user, session or client IP). As the chat API reference says: "Once a
token budget is exhausted, GeneralManager records the completed provider usage and rejects
the next tool, confirmation write, summary, or provider round." So every provider round and
every summary is recorded once completed, and `require_room` runs before each of those four
steps: an exhausted budget ends the turn with the `rate_limited` error and the whole seconds
until the budget frees.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

from chatomon.errors import ToolLoopError
from chatomon.schemas import TokenUsage

__all__ = ["TurnBudget", "require_room"]


@runtime_checkable
class TurnBudget(Protocol):
    """How much provider usage the asking actor may still spend."""

    async def check(self) -> float | None:
        """Seconds until the budget frees, or None while there is room left."""
        ...

    async def record(self, usage: TokenUsage) -> None:
        """Count the tokens of a provider round (or a summary) that completed."""
        ...


async def require_room(budget: TurnBudget | None) -> None:
    """Let the next step spend tokens, or stop the turn while the budget is exhausted.

    Raises:
        ToolLoopError: `rate_limited`, with `retry_after_seconds` (at least 1).
    """
    if budget is None:
        return
    wait = await budget.check()
    if wait is not None:
        raise ToolLoopError("rate_limited", retry_after_seconds=max(1, math.ceil(wait)))
