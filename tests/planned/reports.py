"""One planned turn's report to draw, shared by the console's and the notebook's plan views.

Two roots, a dependent of the first and a dynamic child of the first; the second root ran
out of rounds, so coverage is partial. Both views draw the same tree from it, so they are
tested on the same data.
"""

from __future__ import annotations

from typing import Any

from chatomon.schemas import (
    PlannedCoverage,
    PlannedEvidence,
    PlannedTaskReport,
    PlannedTurnReport,
    PlannedUnresolved,
)

__all__ = ["sample_plan"]


def sample_plan(
    *, second_question: str = "Who supplies them?", **overrides: Any
) -> PlannedTurnReport:
    """The plan above; `second_question` is the budget-exhausted root's (hostile text tests)."""
    fields: dict[str, Any] = {
        "intent": "read",
        "tasks": (
            PlannedTaskReport(
                id="t1", question="Which parts use steel?", role="simple_executor",
                manager="PartManager", status="resolved", rounds=2,
                tool_call_ids=("c1", "c9"), duration_ms=12.0,
                evidence=(
                    PlannedEvidence(id="e1", kind="query", tool="query", call_id="c1",
                                    summary="3 rows"),
                    PlannedEvidence(id="e2", kind="calculation", summary="count = 3"),
                ),
            ),
            PlannedTaskReport(id="t2", question=second_question, status="budget_exhausted",
                              role="complex_executor", reason="budget_exhausted", rounds=8),
            PlannedTaskReport(id="t3", question="Their total weight?", depends_on=("t1",),
                              status="blocked"),
            PlannedTaskReport(id="t1a", question="Steel grades?", parent_id="t1",
                              role="simple_executor", status="resolved", tool_call_ids=("c2",),
                              evidence=(PlannedEvidence(id="e3", kind="query", tool="query",
                                                        call_id="c2", reused=True),)),
        ),
        "roles_used": ("planner", "simple_executor", "complex_executor", "synthesizer"),
        "planner_attempts": 2,
        "rounds_used": 14,
        "rounds_limit": 24,
        "prompt_chars": 9876,
        "coverage": PlannedCoverage(
            status="partial", resolved=2, total=4,
            unresolved=(PlannedUnresolved(task_id="t2", reason="budget_exhausted"),
                        PlannedUnresolved(task_id="t3", reason="dependency_blocked")),
        ),
        "terminal_reason": None,
    }  # fmt: skip
    fields.update(overrides)
    return PlannedTurnReport(**fields)
