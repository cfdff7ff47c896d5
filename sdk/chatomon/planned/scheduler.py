"""Planning a turn, then running its tasks: roots concurrently, dependents after them.

`prepare_planned_turn` asks the planner once (with its correction and fallback) and keeps
the planning usage for the turn's accounting. `schedule_tasks` runs the validated plan:
at most `max_concurrent_tasks` tasks at a time; a dependent starts once its roots ended and
is `dependency_blocked` (without any provider request) when one of them is not resolved;
dynamic children start as their root adds them; the evidence phase ends by
`evidence_timeout_seconds` (tasks still open: `deadline_exceeded`). A task's own failure
ends only that task and its dependents; a rate limit or an unexpected error ends the
turn, with every sibling cancelled and awaited first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon import schemas
from chatomon.chat.budget import TurnBudget
from chatomon.chat.tools.context import AuditHook
from chatomon.errors import ProviderError, ToolLoopError
from chatomon.planned.budget import RoundBudget, RoundBudgetExhausted
from chatomon.planned.config import PlannedChatSettings
from chatomon.planned.execution import Execution, TaskState
from chatomon.planned.executor import TaskRunner
from chatomon.planned.models import PlannedTask, ValidatedPlan
from chatomon.planned.planner import PlanningResult, plan_request
from chatomon.planned.provider_calls import InvalidProviderRoundError
from chatomon.providers.base import Message
from chatomon.schemas import PlannedCoverage, PlannedUnresolved

__all__ = [
    "PlannedCoverage",
    "PlannedExecutionResult",
    "PreparedPlannedTurn",
    "SchedulerCallbacks",
    "prepare_planned_turn",
    "schedule_tasks",
]

Planner = Callable[..., Awaitable[PlanningResult]]


@dataclass(frozen=True)
class SchedulerCallbacks:
    """The chat integration's seams, replaceable in deterministic tests.

    Attributes:
        rate_budget: The asker's rate-limit budget: asked before every provider request
            and told its usage (`rate_limited` ends the turn).
        audit: Receives the planned audit events (allowlisted first).
    """

    rate_budget: TurnBudget | None = None
    audit: AuditHook | None = None


@dataclass(frozen=True)
class PreparedPlannedTurn:
    """The planner's validated plan, with the accounting the turn carries on with.

    Attributes:
        planning: The plan and the usage, attempts and prompt size of planning.
        budget: The turn's round budget, already charged with the planner's requests.
        started: `time.perf_counter()` when planning started.
    """

    planning: PlanningResult
    budget: RoundBudget
    started: float

    @property
    def plan(self) -> ValidatedPlan:
        """The validated plan."""
        return self.planning.plan

    @property
    def mutation_plan(self) -> ValidatedPlan | None:
        """The plan when the planner classified the request as a mutation (for the tool loop)."""
        return self.plan if self.plan.intent == "mutation" else None


@dataclass
class PlannedExecutionResult:
    """The tasks of a planned read once they all ended; never sent to a client as is."""

    states: dict[str, TaskState]
    order: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> PlannedCoverage:
        """How many tasks resolved, and the stable reason of each one that did not."""
        unresolved = tuple(
            PlannedUnresolved(task_id=task_id, reason=state.reason or "dependency_blocked")
            for task_id in self.order
            if (state := self.states[task_id]).status != "resolved"
        )
        total = len(self.order)
        resolved = total - len(unresolved)
        status = "complete" if not unresolved else ("partial" if resolved else "none")
        return PlannedCoverage(status=status, resolved=resolved, total=total, unresolved=unresolved)

    @property
    def terminal_reason(self) -> str | None:
        """Why tasks stayed open: the first failed root's reason, else the first one's."""
        open_states = [self.states[i] for i in self.order if self.states[i].status != "resolved"]
        for state in open_states:
            if state.reason != "dependency_blocked":
                return state.reason
        return open_states[0].reason if open_states else None


async def prepare_planned_turn(
    user_text: str,
    messages: Sequence[Message | schemas.Message],
    settings: PlannedChatSettings,
    catalog_summary: Sequence[str],
    *,
    providers: Mapping[str, Any],
    planner: Planner = plan_request,
    manager_lines: Sequence[str] = (),
    budget: RoundBudget | None = None,
) -> PreparedPlannedTurn:
    """Plan once (with one correction and one fallback) and keep the planning usage.

    Args:
        user_text: The user's message.
        messages: The conversation before it.
        settings: The planned settings (round budgets, request timeout).
        catalog_summary: The catalog's lines for the planner.
        providers: The provider of each role.
        planner: The planning function (a seam for tests).
        manager_lines: The managers the planner is shown (a slice, not the index).
        budget: The turn's round budget (default: a new one from `settings`).

    Raises:
        InvalidPlanError: No valid plan after the correction and the fallback.
        RoundBudgetExhausted: The round budget ran out while planning.
    """
    budget = budget or RoundBudget(settings.max_rounds, settings.max_rounds_per_root)
    started = time.perf_counter()
    planning = await planner(
        user_text,
        messages,
        settings,
        budget,
        catalog_summary,
        providers=providers,
        manager_lines=manager_lines,
        timeout_seconds=settings.request_timeout_seconds,
    )
    return PreparedPlannedTurn(planning, budget, started)


async def schedule_tasks(plan: ValidatedPlan, execution: Execution) -> PlannedExecutionResult:
    """Run every task of `plan` under `execution`'s limits; every task ends with a status.

    Raises:
        ToolLoopError: The asker's rate limit ran out (`rate_limited`).
        Exception: An unexpected failure of any task, after the others were cancelled.
    """
    return await _Scheduler(plan, execution).run()


class _Scheduler:
    def __init__(self, plan: ValidatedPlan, execution: Execution) -> None:
        self.execution = execution
        self.result = PlannedExecutionResult(
            {t.id: TaskState(t) for t in plan.tasks}, [t.id for t in plan.tasks]
        )
        self.tasks: list[PlannedTask] = list(plan.tasks)
        self.running: dict[str, asyncio.Task[None]] = {}
        self.slots = asyncio.Semaphore(execution.settings.max_concurrent_tasks)
        self.runner = TaskRunner(execution, add_children=self._add_children, tasks=self._all)
        self.group: asyncio.TaskGroup | None = None
        self.fatal: BaseException | None = None

    def _all(self) -> Sequence[PlannedTask]:
        return self.tasks

    async def run(self) -> PlannedExecutionResult:
        timeout = self.execution.settings.evidence_timeout_seconds
        self.execution.deadline = time.monotonic() + timeout
        try:
            async with asyncio.timeout(timeout), asyncio.TaskGroup() as group:
                self.group = group
                for task in list(self.tasks):
                    self._spawn(task)
        except TimeoutError:
            pass  # the open tasks are marked below
        except BaseExceptionGroup:
            if self.fatal is not None:
                raise self.fatal from None
            raise
        for state in self.result.states.values():
            state.finish("blocked", "deadline_exceeded")
        return self.result

    def _spawn(self, task: PlannedTask) -> None:
        assert self.group is not None
        self.running[task.id] = self.group.create_task(self._run_one(task.id))

    async def _add_children(self, parent: PlannedTask, children: Sequence[PlannedTask]) -> None:
        for child in children:
            self.tasks.append(child)
            self.result.states[child.id] = TaskState(child)
            self.result.order.append(child.id)
            self._spawn(child)

    async def _run_one(self, task_id: str) -> None:
        state = self.result.states[task_id]
        roots = [self.result.states[d] for d in state.task.depends_on]
        for root in roots:  # a root's own failures end inside it: waiting never raises
            await self.running[root.task.id]
        if any(root.status != "resolved" for root in roots):
            state.finish("blocked", "dependency_blocked")
            return
        try:
            async with self.slots:
                await self.runner.run(state, roots)
        except RoundBudgetExhausted:
            state.finish("budget_exhausted", "budget_exhausted")
        except TimeoutError:
            state.finish("blocked", "deadline_exceeded")
        except (ProviderError, InvalidProviderRoundError):
            state.finish("blocked", "provider_failed")
        except ToolLoopError as error:
            self.fatal = self.fatal or error
            raise
        except Exception as error:
            self.fatal = self.fatal or error
            raise
