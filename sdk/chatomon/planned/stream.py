"""`iter_planned_read_events`: a prepared planned read as public events, for custom transports.

Normal applications configure planned turns on `ChatService` (or `settings.CHATOMON`) and
use the routes; this lower-level helper serves an application that owns its transport or
a deterministic harness. It runs the read of a `PreparedPlannedTurn` and yields the event
contract's dicts: `tool_call` / `tool_result` with `task_id`, `text_chunk`s of the
streamed answer, then exactly one `done` (with coverage) or one `error` (a stable planned
code; anything unexpected is the generic `chat_error`). No orbital runs here: for guarded
turns use `PlannedNucleus` inside an `Atom`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from chatomon._engine.closing import closing_stream
from chatomon.chat.events import ToolCallStarted, ToolResult
from chatomon.chat.pipeline.wire import error_event
from chatomon.chat.tools.toolset import Toolset
from chatomon.errors import ToolLoopError
from chatomon.events import TextChunk
from chatomon.planned.events import (
    planned_done_event,
    planned_error_event,
    planned_tool_call_event,
    planned_tool_result_event,
)
from chatomon.planned.execution import Execution
from chatomon.planned.read import PlannedRead
from chatomon.planned.resolver import ManagerResolver
from chatomon.planned.scheduler import PreparedPlannedTurn, SchedulerCallbacks
from chatomon.planned.turns import PlannedTurns
from chatomon.providers.base import Message
from chatomon.public_errors import PLANNED_REASONS
from chatomon.schemas import PlannedTurnReport

__all__ = ["PlannedScope", "iter_planned_read_events"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlannedScope:
    """Where a planned read runs: the orchestration, the tools, and who asks.

    Attributes:
        planned: The configured orchestration.
        toolset: The chat tools (executors get the read tools only).
        actor: The asker, whose row scopes the tools apply.
    """

    planned: PlannedTurns
    toolset: Toolset
    actor: Any = None


async def iter_planned_read_events(
    prepared: PreparedPlannedTurn,
    *,
    scope: PlannedScope,
    conversation: str | None,
    messages: Sequence[Message],
    callbacks: SchedulerCallbacks | None = None,
) -> AsyncIterator[dict[str, Any]]:
    """Yield the read's public events, ending in one `done` or one `error`.

    Args:
        prepared: The planner's read plan (`prepare_planned_turn`).
        scope: The orchestration, tools and actor.
        conversation: The conversation id the events carry, when any.
        messages: The conversation, ending with the user's message.
        callbacks: The rate-limit budget and audit sink.
    """
    callbacks = callbacks or SchedulerCallbacks()
    index = scope.toolset.registry.schema_index()

    async def nowhere(event: Any) -> None:
        del event

    read = PlannedRead(
        prepared,
        Execution(
            turn_id=uuid4().hex,  # each read its own audit lineage
            providers=scope.planned.providers,
            settings=scope.planned.settings,
            toolset=scope.toolset,
            tool_context=scope.toolset.context(scope.actor, callbacks.audit),
            resolver=ManagerResolver(index, scope.planned.catalog_for(index)),
            budget=prepared.budget,
            emit=nowhere,
            rate_budget=callbacks.rate_budget,
        ),
        callbacks=callbacks,
    )
    report: PlannedTurnReport | None = None
    try:
        async with closing_stream(read.gather()) as events:
            async for event in events:
                if (wire := _wire(event)) is not None:
                    yield wire
        question = messages[-1].content if messages else ""
        async with closing_stream(read.answer(question)) as events:
            async for event in events:
                if isinstance(event, PlannedTurnReport):
                    report = event
                elif (wire := _wire(event)) is not None:
                    yield wire
    except ToolLoopError as error:  # the asker's rate limit: its code and retry time
        extra = {}
        if error.retry_after_seconds is not None:
            extra["retry_after_seconds"] = error.retry_after_seconds
        yield error_event(error.code, error.public_message, **extra)
        return
    except Exception as error:
        reason = getattr(error, "public_reason", None)
        if reason not in PLANNED_REASONS:
            logger.error("a planned read failed", exc_info=error)
        yield planned_error_event(reason)
        return
    coverage = report.coverage if report is not None else None
    if coverage is None:  # answer() always reports coverage; never a done without it
        yield planned_error_event("synthesis_failed")
        return
    yield planned_done_event(
        prepared.planning.usage + read.execution.usage,
        resolved=coverage.resolved,
        total=coverage.total,
        unresolved=[(u.task_id, u.reason) for u in coverage.unresolved],
    )


def _wire(event: Any) -> dict[str, Any] | None:
    if isinstance(event, ToolCallStarted):
        return planned_tool_call_event(event.task_id or "", event.id, event.name, event.args)
    if isinstance(event, ToolResult):
        return planned_tool_result_event(event.task_id or "", event.id, event.name, event.result)
    if isinstance(event, TextChunk):
        return event.to_dict()
    return None
