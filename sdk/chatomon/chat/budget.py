"""`TurnBudget`: the rate-limit hook the tool loop consults before every provider round.

The chat service is transport-neutral; the Django app supplies a budget over its cache
(token limits per user, session or client IP). Once a budget is exhausted the loop ends
the turn with the `rate_limited` error and the seconds until the budget frees.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chatomon.schemas import TokenUsage

__all__ = ["TurnBudget"]


@runtime_checkable
class TurnBudget(Protocol):
    """How much provider usage the asking actor may still spend."""

    async def check(self) -> float | None:
        """Seconds until the budget frees, or None while there is room left."""
        ...

    async def record(self, usage: TokenUsage) -> None:
        """Count the tokens of a provider round that completed."""
        ...
