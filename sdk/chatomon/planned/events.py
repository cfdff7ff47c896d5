"""The public events of a planned turn, built by the pipeline's one wire-event builder.

A planned turn speaks the normal transport vocabulary: its tool events are the tool
loop's `tool_call` / `tool_result` with the owning `task_id`, it ends with exactly one
`done` carrying its coverage, or, when no grounded answer exists, one `error` with a
stable planned code and message. These helpers only adapt planned values to
`chatomon.chat.pipeline.wire`, so that no surface and no planned module invents a form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatomon.chat.events import ToolCallStarted, ToolResult
from chatomon.chat.pipeline.wire import coverage_done_event, public_error_event, streamed_event
from chatomon.public_errors import PLANNED_PUBLIC_MESSAGES, PLANNED_REASONS, planned_public_error
from chatomon.redaction import DEFAULT_REDACTION, Redaction
from chatomon.schemas import PlannedCoverage, PlannedUnresolved, TokenUsage

__all__ = [
    "PLANNED_PUBLIC_MESSAGES",
    "planned_coverage",
    "planned_done_event",
    "planned_error_event",
    "planned_tool_call_event",
    "planned_tool_result_event",
]


def planned_coverage(
    *, resolved: int, total: int, unresolved: Sequence[tuple[str, str]]
) -> PlannedCoverage:
    """The coverage of a grounded answer: complete when every task resolved, else partial.

    Raises:
        ValueError: Counts that cannot describe a grounded answer (nothing resolved, more
            resolved than planned), or an unresolved reason that is not a stable planned
            reason (which could carry private text to a client).
    """
    if not 0 < resolved <= total:
        raise ValueError(f"a grounded answer resolves 1..{total} tasks, not {resolved}")
    for task_id, reason in unresolved:
        if reason not in PLANNED_REASONS:
            raise ValueError(f"task {task_id!r}: {reason!r} is not a stable planned reason")
    complete = resolved == total and not unresolved
    return PlannedCoverage(
        status="complete" if complete else "partial",
        resolved=resolved,
        total=total,
        unresolved=tuple(PlannedUnresolved(task_id=t, reason=r) for t, r in unresolved),
    )


def planned_done_event(
    usage: TokenUsage, *, resolved: int, total: int, unresolved: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """Build the sole terminal event for a grounded complete or partial turn.

    Examples:
        >>> event = planned_done_event(TokenUsage(input_tokens=5), resolved=1, total=2,
        ...                            unresolved=[("t2", "dependency_blocked")])
        >>> event["coverage"]["status"], event["coverage"]["unresolved"]
        ('partial', [{'task_id': 't2', 'reason': 'dependency_blocked'}])
    """
    coverage = planned_coverage(resolved=resolved, total=total, unresolved=unresolved)
    return coverage_done_event(usage, coverage)


def planned_error_event(reason: object) -> dict[str, Any]:
    """Build the sole terminal event when no grounded answer exists.

    A reason outside the seven stable planned reasons is the generic `chat_error`.

    Examples:
        >>> planned_error_event("invalid_plan")["message"]
        'I could not prepare a safe plan for that request.'
        >>> planned_error_event("KeyError: 'PartManager'")["code"]
        'chat_error'
    """
    return public_error_event(planned_public_error(reason))


def planned_tool_call_event(
    task_id: str,
    call_id: str,
    name: str,
    args: Mapping[str, Any],
    *,
    redaction: Redaction = DEFAULT_REDACTION,
) -> dict[str, Any]:
    """Build an actual planned tool-call event with its owning task ID.

    The arguments pass the redaction rule, as in the tool loop's events.
    """
    event = streamed_event(ToolCallStarted(call_id, name, args, task_id=task_id), redaction)
    assert event is not None  # streamed_event builds every ToolCallStarted
    return event


def planned_tool_result_event(
    task_id: str,
    call_id: str,
    name: str,
    result: Any,
    *,
    redaction: Redaction = DEFAULT_REDACTION,
) -> dict[str, Any]:
    """Build the matching actual planned tool-result event (the result redacted)."""
    event = streamed_event(ToolResult(call_id, name, result, task_id=task_id), redaction)
    assert event is not None  # streamed_event builds every ToolResult
    return event
