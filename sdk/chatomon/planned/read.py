"""One planned read: gather its evidence once, then write the grounded answer.

`PlannedRead.gather` runs the scheduler and streams its engine events (tool calls and
results with their `task_id`, usage, timings) as they happen, from every concurrent task.
`PlannedRead.answer` streams the synthesizer's answer as `TextChunk`s, ends with the
`PlannedTurnReport` and the reply, and raises a stable-reason error when no grounded
answer exists (nothing resolved, or synthesis failed): the pipeline turns it into the
planned `error` event. An atom's regeneration calls `answer` again, without gathering twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from chatomon.chat.budget import require_room
from chatomon.events import TextChunk
from chatomon.nucleus import NucleusReply, StepTiming, provider_model
from chatomon.planned.audit import emit_planned_audit_event, planned_audit_lineage_id
from chatomon.planned.evidence import EvidenceRecord
from chatomon.planned.execution import Execution
from chatomon.planned.scheduler import (
    PlannedExecutionResult,
    PreparedPlannedTurn,
    SchedulerCallbacks,
    schedule_tasks,
)
from chatomon.planned.synthesis import (
    SynthesisChunk,
    SynthesisResult,
    eligible_evidence,
    iter_synthesis,
)
from chatomon.schemas import PlannedTurnReport

__all__ = ["PlannedRead", "UnresolvedPlanError"]


class UnresolvedPlanError(RuntimeError):
    """No task of a planned read resolved: the turn ends with the stable reason's error."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"no task of the planned read resolved ({reason})")
        self.public_reason = reason


class PlannedRead:
    """The evidence phase and the answers of one planned read."""

    def __init__(
        self,
        prepared: PreparedPlannedTurn,
        execution: Execution,
        *,
        callbacks: SchedulerCallbacks,
        with_questions: bool = False,
    ) -> None:
        self.prepared = prepared
        self.execution = execution
        self.callbacks = callbacks
        self.with_questions = with_questions
        self.result: PlannedExecutionResult | None = None
        self.synthesis_chars = 0

    async def gather(self) -> AsyncIterator[Any]:
        """Run every task, yielding their events as they happen."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        finished = object()

        async def put(event: Any) -> None:
            queue.put_nowait(event)

        self.execution.emit = put
        self._audit("plan", rounds=True)

        async def work() -> None:
            try:
                self.result = await schedule_tasks(self.prepared.plan, self.execution)
            finally:
                queue.put_nowait(finished)

        worker = asyncio.create_task(work())
        try:
            while (event := await queue.get()) is not finished:
                yield event
            await worker  # a turn-ending failure of the scheduler is raised here
        finally:
            if not worker.done():  # the consumer left: stop the tasks, and wait for them
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
            elif not worker.cancelled():
                worker.exception()  # retrieved: raised above, or not wanted any more
        for state in self.states():
            self._audit(
                "task",
                task=state.task.id,
                role=state.role,
                progress=state.status,
                latency_ms=round(
                    ((state.ended or time.perf_counter()) - (state.started or time.perf_counter()))
                    * 1000,
                    3,
                ),
                evidence_kinds=_kinds(self.execution.store.for_task(state.task.id)),
            )

    async def answer(self, user_text: str, guidance: Sequence[str] = ()) -> AsyncIterator[Any]:
        """Stream the grounded answer; end with the report and the reply, or raise."""
        assert self.result is not None, "gather() first"
        coverage = self.result.coverage
        if coverage.resolved == 0:
            reason = self.result.terminal_reason or "dependency_blocked"
            yield self.report(reason)
            raise UnresolvedPlanError(reason)
        question = user_text if not guidance else f"{user_text}\n\n({' '.join(guidance)})"
        execution = self.execution
        await require_room(execution.rate_budget)
        started = time.perf_counter()
        outcome: SynthesisResult | None = None
        try:
            async for item in iter_synthesis(
                question,
                self.answerable(),
                coverage,
                execution.settings,
                self.prepared.budget,
                providers=execution.providers,
                timeout_seconds=execution.settings.synthesis_timeout_seconds,
            ):
                if isinstance(item, SynthesisChunk):
                    if item.text:
                        yield TextChunk(item.text)
                elif isinstance(item, SynthesisResult):
                    outcome = item
        except Exception as error:
            yield self.report(getattr(error, "public_reason", None) or "synthesis_failed")
            raise
        assert outcome is not None, "iter_synthesis ends with its result"
        self.synthesis_chars += outcome.prompt_chars
        execution.usage = execution.usage + outcome.usage
        if execution.rate_budget is not None:
            await execution.rate_budget.record(outcome.usage)
        yield outcome.usage
        model = provider_model(execution.providers.get(outcome.role))
        yield StepTiming(
            "provider_round",
            outcome.role,
            started,
            time.perf_counter(),
            model=model,
            usage=outcome.usage,
        )
        yield self.report(self.result.terminal_reason)
        yield NucleusReply(outcome.text)

    def answerable(self) -> tuple[EvidenceRecord, ...]:
        """The evidence of the resolved tasks a synthesizer may use, each once."""
        records = [
            record
            for state in self.states()
            if state.status == "resolved"
            for record in self.execution.store.for_task(state.task.id)
        ]
        return eligible_evidence(records)

    def states(self) -> list[Any]:
        """The task states in plan order (dynamic children after their roots' siblings)."""
        if self.result is None:
            return []
        return [self.result.states[task_id] for task_id in self.result.order]

    def report(self, terminal_reason: str | None) -> PlannedTurnReport:
        """The plan, every task and the accounting, as the TurnReport records them."""
        planning, budget = self.prepared.planning, self.prepared.budget
        coverage = None if self.result is None else self.result.coverage
        self._audit(
            "turn",
            rounds=True,
            coverage=None if coverage is None else coverage.model_dump(mode="json"),
            terminal_reason=terminal_reason,
            usage=self.execution.usage.model_dump(),
        )
        return PlannedTurnReport(
            intent="read",
            tasks=tuple(state.report(with_question=self.with_questions) for state in self.states()),
            roles_used=budget.roles_used,
            planner_attempts=planning.attempts,
            rounds_used=budget.used,
            rounds_limit=budget.limit,
            prompt_chars=planning.prompt_chars + self.execution.prompt_chars + self.synthesis_chars,
            coverage=coverage,
            terminal_reason=terminal_reason,
        )

    def _audit(
        self, event: str, *, task: str | None = None, rounds: bool = False, **fields: Any
    ) -> None:
        sink = self.callbacks.audit
        if sink is None:
            return
        turn_id = self.execution.turn_id
        cleaned = {key: value for key, value in fields.items() if value is not None}
        cleaned["lineage_id"] = planned_audit_lineage_id(turn_id)
        if task is not None:
            cleaned["task_lineage_id"] = planned_audit_lineage_id(turn_id, task)
        if rounds:
            budget = self.prepared.budget
            cleaned["round_budget"] = {"used": budget.used, "limit": budget.limit}
        emit_planned_audit_event(sink, event, cleaned)


def _kinds(records: Sequence[EvidenceRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[record.kind] = counts.get(record.kind, 0) + 1
    return counts
