"""The state one planned read shares between its tasks while they run.

`Execution` holds what every task of a turn reads and charges: the roles' providers, the
tools, the resolver, the evidence store, the round budget, the deadline and the event
sink; `TaskState` is one task's progress, turned into its `PlannedTaskReport` at the end.
Both live only as long as the turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon.chat.budget import TurnBudget, require_room
from chatomon.chat.tools.toolset import Toolset
from chatomon.nucleus import StepTiming, provider_model
from chatomon.planned.budget import RoundBudget
from chatomon.planned.config import PlannedChatSettings
from chatomon.planned.evidence import EvidenceStore
from chatomon.planned.models import PlannedTask, TaskStatus
from chatomon.planned.provider_calls import ProviderRoundResult, complete_provider_round
from chatomon.planned.resolver import ManagerResolver
from chatomon.providers.base import Message, ToolDefinition
from chatomon.schemas import PlannedEvidence, PlannedTaskReport, TokenUsage

__all__ = ["EventSink", "Execution", "TaskState"]

EventSink = Callable[[Any], Awaitable[None]]
"""Receives the engine events of the turn (tool calls and results, usage, timings)."""


@dataclass
class TaskState:
    """One task's progress while the turn runs."""

    task: PlannedTask
    status: TaskStatus = "pending"
    reason: str | None = None
    role: str | None = None
    manager: str | None = None
    rounds: int = 0
    call_ids: list[str] = field(default_factory=list)
    evidence: list[PlannedEvidence] = field(default_factory=list)
    started: float | None = None
    ended: float | None = None

    @property
    def root_id(self) -> str:
        """The root whose subtree budget this task spends."""
        return self.task.parent_id or self.task.id

    def start(self) -> None:
        """Mark the task running."""
        self.status, self.started = "running", time.perf_counter()

    def finish(self, status: TaskStatus, reason: str | None = None) -> None:
        """End the task once; a later call keeps the first ending."""
        if self.status in ("pending", "running"):
            self.status, self.reason, self.ended = status, reason, time.perf_counter()

    def report(self, *, with_question: bool) -> PlannedTaskReport:
        """The task's part of the TurnReport."""
        duration = 0.0
        if self.started is not None:
            duration = ((self.ended or time.perf_counter()) - self.started) * 1000
        return PlannedTaskReport(
            id=self.task.id,
            question=self.task.question if with_question else None,
            depends_on=self.task.depends_on,
            parent_id=self.task.parent_id,
            role=self.role,
            manager=self.manager,
            status=self.status,
            reason=self.reason,
            rounds=self.rounds,
            tool_call_ids=tuple(self.call_ids),
            evidence=tuple(self.evidence),
            duration_ms=duration,
        )


@dataclass
class Execution:
    """What the tasks of one planned read share."""

    turn_id: str
    providers: Mapping[str, Any]
    settings: PlannedChatSettings
    toolset: Toolset
    tool_context: Any
    resolver: ManagerResolver
    budget: RoundBudget
    emit: EventSink
    rate_budget: TurnBudget | None = None
    deadline: float | None = None
    """`time.monotonic()` by which evidence gathering must end; None: no limit."""
    store: EvidenceStore = field(default_factory=EvidenceStore)
    usage: TokenUsage = field(default_factory=TokenUsage)
    prompt_chars: int = 0
    in_flight: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    """Tool calls running now, by canonical identity: an identical call waits for them."""

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def request_timeout(self) -> float | None:
        """The cap of one provider request: the settings' own, within the deadline."""
        limits = [
            t for t in (self.settings.request_timeout_seconds, self.remaining()) if t is not None
        ]
        return min(limits) if limits else None

    async def provider_round(
        self, role: str, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> ProviderRoundResult:
        """One provider request of `role`, already charged to the round budget.

        The asker's rate-limit budget is asked first and told the usage after; the usage,
        the prompt size and the round's timing go to the turn.
        """
        await require_room(self.rate_budget)
        started = time.perf_counter()
        result = await complete_provider_round(
            self.providers[role], messages, tools, self.request_timeout()
        )
        await self.account(role, result, started)
        return result

    async def account(self, role: str, result: ProviderRoundResult, started: float) -> None:
        """Count a finished provider request of `role` in the turn's usage and steps."""
        self.usage = self.usage + result.usage
        self.prompt_chars += result.prompt_chars
        if self.rate_budget is not None:
            await self.rate_budget.record(result.usage)
        await self.emit(result.usage)
        model = provider_model(self.providers[role])
        await self.emit(
            StepTiming(
                "provider_round",
                role,
                started,
                time.perf_counter(),
                model=model,
                usage=result.usage,
            )
        )
