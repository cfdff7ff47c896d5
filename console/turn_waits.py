"""A turn's waits for a decision: who decided, when, how long it waited, and the wall time.

The report's `pauses` say what waited, for whom, how long and how it ended; the
`PendingConfirmation` rows of the turn add who decided, when and why. The report's
``duration_ms`` counts active time only (a resumed turn's clock skips the wait), so the
page shows it beside the time waited and the two together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chatomon.django.models import PendingConfirmation, Turn

from .people import display_names

__all__ = ["TurnWaits", "Wait", "turn_waits"]


@dataclass(frozen=True)
class Wait:
    """One wait of a turn for a decision on a mutation."""

    mutation: str
    approver: str  # "staff" or "client"
    outcome: str  # approved, rejected, expired, cancelled, or pending (still waiting)
    requested_at: datetime | None
    decided_at: datetime | None
    decided_by: str  # the decider's display name, "" when nobody decided
    reason: str
    waited_ms: float | None  # None while it still waits


@dataclass(frozen=True)
class TurnWaits:
    """The waits of a turn and its time: active, waiting and both."""

    waits: tuple[Wait, ...]
    active_ms: float | None

    @property
    def waited_ms(self) -> float:
        """The time spent waiting for decisions that were made."""
        return sum(w.waited_ms or 0.0 for w in self.waits)

    @property
    def total_ms(self) -> float | None:
        """Active time plus waits: how long the turn took on the clock."""
        return None if self.active_ms is None else self.active_ms + self.waited_ms


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _wait(row: PendingConfirmation | None, pause: Mapping[str, Any], names: dict[str, str]) -> Wait:
    seconds = _number(pause.get("waited_seconds"))
    if seconds is None and row is not None and row.decided_at is not None:
        seconds = (row.decided_at - row.created_at).total_seconds()
    decider = row.decided_by if row is not None else None
    return Wait(
        mutation=str(pause.get("mutation") or (row.mutation if row else "?")),
        approver=str(pause.get("approver") or (row.approver if row else "?")),
        outcome=str(pause.get("outcome") or (row.status if row else "pending")),
        requested_at=row.created_at if row else None,
        decided_at=row.decided_at if row else None,
        decided_by=names.get(decider, "") if decider else "",
        reason=(row.reason or "") if row else "",
        waited_ms=None if seconds is None else seconds * 1000,
    )


def turn_waits(turn: Turn, report: Mapping[str, Any]) -> TurnWaits:
    """The turn's waits: its confirmations in order, each with its pause when recorded."""
    rows: Sequence[PendingConfirmation] = list(
        PendingConfirmation.objects.filter(turn_id=turn.id).order_by("created_at")
    )
    pauses = list(report.get("pauses") or ())
    names = display_names(r.decided_by for r in rows)
    # The n-th pause is the n-th decision: confirmations and pauses come in the same order.
    waits = [_wait(row, pauses[n] if n < len(pauses) else {}, names) for n, row in enumerate(rows)]
    # Pauses of confirmations that cleanup already deleted still count.
    waits += [_wait(None, pause, names) for pause in pauses[len(rows) :]]
    return TurnWaits(tuple(waits), _number(report.get("duration_ms")))
