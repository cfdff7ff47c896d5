"""TurnReports as pandas DataFrames: every turn is there, whatever ran in it.

Two levels (`level=`):

- `"orbital"` (the default): one row per orbital run, and one row for a turn that ran no
  orbital (its orbital columns empty), so a service without orbitals still gives one row
  per turn.
- `"turn"`: one row per turn (`TURN_COLUMNS`): how it ended, how long it took, how many
  orbital runs it had, its tokens.

pandas is optional (`pip install "chatomon[pandas]"`); without it these functions raise
`OptionalDependencyError` naming the extra. `report_rows` gives the same rows as plain
dicts and needs nothing.

```python
frame = reports_to_dataframe(reports)
frame.groupby("orbital")["duration_ms"].describe()
reports_to_dataframe(reports, level="turn")["final_action"].value_counts()
```
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from chatomon.errors import OptionalDependencyError
from chatomon.schemas import OrbitalResult, TurnReport

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COLUMNS",
    "TURN_COLUMNS",
    "Level",
    "report_rows",
    "report_to_dataframe",
    "reports_to_dataframe",
]

Level = Literal["orbital", "turn"]
"""A frame's rows: one per orbital run (a turn without any: one row), or one per turn."""

COLUMNS = (
    "turn_id",
    "conversation_id",
    "atom_name",
    "started_at",
    "final_action",
    "side",
    "attempt",
    "decision",
    "orbital",
    "kind",
    "action",
    "reason",
    "escalate",
    "has_guidance",
    "duration_ms",
    "error_type",
    "error_policy",
    "fingerprint",
)
"""The columns of `level="orbital"`, in order; an empty frame still has them."""

TURN_COLUMNS = (
    "turn_id",
    "conversation_id",
    "atom_name",
    "started_at",
    "duration_ms",
    "final_action",
    "escalated",
    "orbital_runs",
    "output_attempts",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "error_type",
)
"""The columns of `level="turn"`, in order."""


def _row(report: TurnReport, result: OrbitalResult | None, decision: str | None) -> dict[str, Any]:
    turn = {
        "turn_id": report.turn_id,
        "conversation_id": report.conversation_id,
        "atom_name": report.atom_name,
        "started_at": report.started_at,
        "final_action": report.final_action,
    }
    if result is None:
        # The turn ran no orbital: it is still a row, its orbital columns empty.
        return {**dict.fromkeys(COLUMNS), **turn}
    return {
        **turn,
        "side": result.side,
        "attempt": result.attempt,
        "decision": decision,
        "orbital": result.name,
        "kind": result.kind,
        "action": result.action,
        "reason": result.reason,
        "escalate": result.escalate,
        "has_guidance": result.has_guidance,
        "duration_ms": result.duration_ms,
        "error_type": result.error_type,
        "error_policy": result.error_policy,
        "fingerprint": result.fingerprint,
    }


def _turn_row(report: TurnReport) -> dict[str, Any]:
    runs = len(report.input) + sum(len(attempt.results) for attempt in report.output)
    return {
        "turn_id": report.turn_id,
        "conversation_id": report.conversation_id,
        "atom_name": report.atom_name,
        "started_at": report.started_at,
        "duration_ms": report.duration_ms,
        "final_action": report.final_action,
        "escalated": report.escalated,
        "orbital_runs": runs,
        "output_attempts": len(report.output),
        "tool_calls": sum(1 for step in report.steps if step.kind == "tool_call"),
        "input_tokens": report.usage.input_tokens,
        "output_tokens": report.usage.output_tokens,
        "error_type": report.error_type,
    }


def report_rows(report: TurnReport, level: Level = "orbital") -> list[dict[str, Any]]:
    """The rows of `report` as dicts (see `Level`); never empty.

    At `level="orbital"`: one dict per orbital run, the input chain then each output attempt
    (`decision` is the output attempt's decision, None on the input side); a turn that ran
    no orbital gives one dict with its orbital columns None. At `level="turn"`: one dict of
    `TURN_COLUMNS`.
    """
    if level == "turn":
        return [_turn_row(report)]
    if level != "orbital":
        raise ValueError(f"level must be 'orbital' or 'turn', not {level!r}")
    rows = [_row(report, result, None) for result in report.input]
    for attempt in report.output:
        rows += [_row(report, result, attempt.decision) for result in attempt.results]
    return rows or [_row(report, None, None)]


def _frame(rows: list[dict[str, Any]], level: Level, feature: str) -> pd.DataFrame:
    """`rows` as a DataFrame of the level's columns; `feature` names the caller in the error."""
    try:
        import pandas as pd  # noqa: PLC0415 - optional, and slow to import
    except ImportError as error:
        raise OptionalDependencyError("pandas", "pandas", feature=feature) from error
    return pd.DataFrame(rows, columns=list(TURN_COLUMNS if level == "turn" else COLUMNS))


def report_to_dataframe(report: TurnReport, level: Level = "orbital") -> pd.DataFrame:
    """`report` as a DataFrame, by `level` (see `report_rows`).

    One row per orbital run (`COLUMNS`; one row when none ran), or at `level="turn"` its
    one row of `TURN_COLUMNS`.

    Raises:
        OptionalDependencyError: When pandas is not installed.
        ValueError: When `level` is neither "orbital" nor "turn".
    """
    return _frame(report_rows(report, level), level, "report.to_dataframe()")


def reports_to_dataframe(reports: Iterable[TurnReport], level: Level = "orbital") -> pd.DataFrame:
    """Many reports as one DataFrame, in the reports' order; empty only when `reports` is.

    One row per orbital run, a turn that ran no orbital one row (`COLUMNS`); or at
    `level="turn"` one row per turn (`TURN_COLUMNS`).

    Raises:
        OptionalDependencyError: When pandas is not installed.
        ValueError: When `level` is neither "orbital" nor "turn".
    """
    rows = [row for report in reports for row in report_rows(report, level)]
    return _frame(rows, level, "reports_to_dataframe()")
