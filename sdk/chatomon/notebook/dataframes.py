"""TurnReports as pandas DataFrames: one row per orbital run.

pandas is optional (`pip install "chatomon[pandas]"`); without it these functions raise
`OptionalDependencyError` naming the extra. `report_rows` gives the same rows as plain
dicts and needs nothing.

```python
frame = reports_to_dataframe(reports)
frame.groupby("orbital")["duration_ms"].describe()
```
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from chatomon.errors import OptionalDependencyError
from chatomon.schemas import OrbitalResult, TurnReport

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "report_rows", "report_to_dataframe", "reports_to_dataframe"]

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
"""The columns, in order; a frame of reports without orbital runs still has them."""


def _row(report: TurnReport, result: OrbitalResult, decision: str | None) -> dict[str, Any]:
    return {
        "turn_id": report.turn_id,
        "conversation_id": report.conversation_id,
        "atom_name": report.atom_name,
        "started_at": report.started_at,
        "final_action": report.final_action,
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


def report_rows(report: TurnReport) -> list[dict[str, Any]]:
    """One dict per orbital run of `report`: the input chain, then each output attempt.

    `decision` is the output attempt's decision (None on the input side).
    """
    rows = [_row(report, result, None) for result in report.input]
    for attempt in report.output:
        rows += [_row(report, result, attempt.decision) for result in attempt.results]
    return rows


def _frame(rows: list[dict[str, Any]], feature: str) -> pd.DataFrame:
    """`rows` as a DataFrame of `COLUMNS`; `feature` names the caller in the error."""
    try:
        import pandas as pd  # noqa: PLC0415 - optional, and slow to import
    except ImportError as error:
        raise OptionalDependencyError("pandas", "pandas", feature=feature) from error
    return pd.DataFrame(rows, columns=list(COLUMNS))


def report_to_dataframe(report: TurnReport) -> pd.DataFrame:
    """`report` as a DataFrame with one row per orbital run (see `COLUMNS`).

    Raises:
        OptionalDependencyError: When pandas is not installed.
    """
    return _frame(report_rows(report), "report.to_dataframe()")


def reports_to_dataframe(reports: Iterable[TurnReport]) -> pd.DataFrame:
    """Many reports as one DataFrame, one row per orbital run, in the reports' order.

    Raises:
        OptionalDependencyError: When pandas is not installed.
    """
    rows = [row for report in reports for row in report_rows(report)]
    return _frame(rows, "reports_to_dataframe()")
