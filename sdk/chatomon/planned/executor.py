"""Running one planned task: an executor's provider rounds over the read tools.

The resolver ranks the managers the task may need; the executor gets the task, a schema
slice of those candidates and its dependencies' evidence, and calls read tools one at a
time (`query`, `aggregate`, `get_manager_schema`, `find_path`, `search_managers`), plus
`calculate` when the task needs a calculation and `add_subtasks` on a root. Never
`mutate`. Every successful result becomes evidence linked to the task's next open
requirement of its kind; the task is resolved as soon as every requirement is linked,
without a further round. A call identical to one already made in the turn reuses its
evidence (or waits for it while it runs). A task that ends unresolved is tried once more
with the stronger role (`select_executor_role(prior_failure=True)`, then the fallback
executor).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from chatomon.chat.events import ToolCallStarted, ToolResult
from chatomon.chat.tools.results import is_tool_error
from chatomon.errors import ProviderError
from chatomon.nucleus import StepTiming
from chatomon.planned.calculations import CalculationError, CalculationOperand, calculate_evidence
from chatomon.planned.evidence import (
    EvidenceKind,
    EvidenceRecord,
    canonical_call_identity,
)
from chatomon.planned.execution import Execution, TaskState
from chatomon.planned.models import CALCULATION_OPERATIONS, EvidenceRequirement, PlannedTask
from chatomon.planned.prompts import executor_messages
from chatomon.planned.provider_calls import InvalidProviderRoundError
from chatomon.planned.resolver import ManagerCandidate
from chatomon.planned.routing import select_executor_role
from chatomon.planned.validation import PlanValidationError, validate_dynamic_children
from chatomon.providers.base import Message, ToolCall, ToolDefinition
from chatomon.schemas import PlannedEvidence

__all__ = ["TaskRunner"]

logger = logging.getLogger(__name__)

EVIDENCE_KINDS: Mapping[str, EvidenceKind] = {
    "search_managers": "schema",
    "get_manager_schema": "schema",
    "find_path": "path",
    "query": "query",
    "aggregate": "query",
}
"""The read tools an executor may call, and the kind of evidence each result is."""

CALCULATE = ToolDefinition(
    "calculate",
    "Compute one value exactly from evidence you gathered. operands: paths into evidence "
    'payloads, e.g. {"evidence_id": "e1", "path": ["data", "*", "density"]}.',
    {
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": list(CALCULATION_OPERATIONS)},
            "operands": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "evidence_id": {"type": "string"},
                        "path": {"type": "array", "items": {"type": ["string", "integer"]}},
                    },
                    "required": ["evidence_id"],
                },
            },
        },
        "required": ["operation", "operands"],
    },
)
ADD_SUBTASKS = ToolDefinition(
    "add_subtasks",
    "Add at most two follow-up tasks this task needs (same shape as plan tasks).",
    {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"type": "object"}}},
        "required": ["children"],
    },
)
SCHEMA_SLICE = 3
"""Candidate managers whose schemas an executor prompt holds (a slice, not the index)."""
MAX_ROUNDS_PER_ATTEMPT = 6
"""Rounds one executor attempt may take before the task counts as failed (the round
budget bounds the whole turn; this keeps one confused executor from spending all of it)."""

AddChildren = Callable[[PlannedTask, Sequence[PlannedTask]], Awaitable[None]]


class TaskRunner:
    """Runs the tasks of one turn's `Execution`."""

    def __init__(
        self,
        execution: Execution,
        *,
        add_children: AddChildren,
        tasks: Callable[[], Sequence[PlannedTask]],
    ) -> None:
        self.execution = execution
        self.add_children = add_children
        self.tasks = tasks  # every task of the plan so far, for the ids of dynamic children

    async def run(self, state: TaskState, dependencies: Sequence[TaskState]) -> None:
        """Resolve `state`'s task, or end it with its stable reason."""
        state.start()
        candidates = self._candidates(state.task, dependencies)
        if not candidates:
            state.finish("blocked", "manager_unresolved")
            return
        state.manager = candidates[0].manager
        evidence = [
            record.to_json()
            for dependency in dependencies
            for record in self.execution.store.for_task(dependency.task.id)
        ]
        first = select_executor_role(
            state.task,
            unique_manager=len(candidates) == 1 or "exact_name" in candidates[0].match_sources,
            path_depth=self._path_depth(candidates[0].manager, dependencies),
            prior_failure=False,
        )
        for role in _roles_after(first):
            state.role = role
            if await self._attempt(state, role, candidates, evidence):
                state.finish("resolved")
                return
        state.finish("blocked", "provider_failed")

    def _candidates(
        self, task: PlannedTask, dependencies: Sequence[TaskState]
    ) -> tuple[ManagerCandidate, ...]:
        query = " ".join(part for part in (task.manager_hint, task.question) if part)
        anchors = [d.manager for d in dependencies if d.manager is not None]
        return self.execution.resolver.resolve(query, anchors=anchors)

    def _path_depth(self, manager: str, dependencies: Sequence[TaskState]) -> int:
        index = self.execution.toolset.registry.schema_index()
        depth = 0
        for dependency in dependencies:
            if dependency.manager is None or dependency.manager == manager:
                continue
            path = index.find_path(dependency.manager, manager)
            depth = max(depth, len(path.relations) if path is not None else 99)
        return depth

    async def _attempt(
        self,
        state: TaskState,
        role: str,
        candidates: Sequence[ManagerCandidate],
        evidence: list[dict[str, Any]],
    ) -> bool:
        execution = self.execution
        schema = execution.resolver.schema_slice(candidates[:SCHEMA_SLICE])
        messages = executor_messages(state.task, schema, evidence)
        tools = self._tools(state.task)
        for _ in range(MAX_ROUNDS_PER_ATTEMPT):
            if execution.store.satisfied(state.task):
                return True
            execution.budget.consume_subtree(state.root_id, role)
            state.rounds += 1
            try:
                result = await execution.provider_round(role, messages, tools)
            except (InvalidProviderRoundError, ProviderError, TimeoutError) as error:
                if isinstance(error, TimeoutError) and execution.remaining() == 0.0:
                    raise  # the evidence deadline: the scheduler ends the task with it
                # This role could not do it (a request over its own time cap included):
                # the next attempt's role may.
                logger.info("planned task %s: %s failed: %s", state.task.id, role, error)
                return False
            call = result.tool_call
            if call is None:
                return execution.store.satisfied(state.task)
            outcome = await self._call(state, call)
            messages = [*messages, Message.assistant("", [call]), Message.tool(call, outcome)]
        return execution.store.satisfied(state.task)

    def _tools(self, task: PlannedTask) -> list[ToolDefinition]:
        toolset = self.execution.toolset
        tools = [
            definition
            for definition in toolset.definitions
            if definition.name in EVIDENCE_KINDS and not toolset.is_mutation(definition.name)
        ]
        if any(r.kind == "calculation" for r in task.requirements):
            tools.append(CALCULATE)
        if task.is_root:
            tools.append(ADD_SUBTASKS)
        return tools

    async def _call(self, state: TaskState, call: ToolCall) -> Any:
        """Run one tool call of the task; its result (an error result when refused)."""
        if call.name == CALCULATE.name:
            return self._calculate(state, call)
        if call.name == ADD_SUBTASKS.name and state.task.is_root:
            return await self._add_subtasks(state, call)
        if call.name not in EVIDENCE_KINDS or self.execution.toolset.is_mutation(call.name):
            return _error("tool_not_available", f"{call.name} cannot be used to answer a read")
        identity = canonical_call_identity(call.name, call.arguments)
        in_flight = self.execution.in_flight
        while (running := in_flight.get(identity)) is not None:
            await asyncio.shield(running)  # the same call of another task: wait for it
        known = self.execution.store.by_identity(identity)
        if known is not None:
            self._reuse(state, known)
            return _shown(known)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        in_flight[identity] = future
        try:
            return await self._run_tool(state, call, identity)
        finally:
            if in_flight.get(identity) is future:
                del in_flight[identity]
            future.set_result(None)

    def _reuse(self, state: TaskState, record: EvidenceRecord) -> None:
        """Link evidence an identical call already gathered, once per task.

        The task's own earlier call is not linked again: one record never satisfies two
        requirements of the task.
        """
        if any(mine.id == record.id for mine in self.execution.store.for_task(state.task.id)):
            return
        self._link(state, record, reused=True)

    async def _run_tool(self, state: TaskState, call: ToolCall, identity: str) -> Any:
        execution, task_id = self.execution, state.task.id
        wire_id = f"{task_id}.{call.id}"  # provider call ids repeat across roles and tasks
        state.call_ids.append(wire_id)
        await execution.emit(ToolCallStarted(wire_id, call.name, call.arguments, task_id=task_id))
        started = time.perf_counter()
        result = await execution.toolset.call(call.name, call.arguments, execution.tool_context)
        failed = is_tool_error(result)
        status = "error" if failed else "ok"
        await execution.emit(
            StepTiming("tool_call", call.name, started, time.perf_counter(), status)
        )
        await execution.emit(ToolResult(wire_id, call.name, result, task_id=task_id))
        if not failed:
            record = EvidenceRecord(
                id=execution.store.next_id(),
                task_id=task_id,
                kind=EVIDENCE_KINDS[call.name],
                payload=result,
                provenance={"tool": call.name, "call_id": wire_id},
                call_identity=identity,
            )
            self._link(state, record, add=True)
            if call.name == "aggregate":
                self._aggregate_as_calculation(state, record)
            return _shown(record)
        return result

    def _link(
        self, state: TaskState, record: EvidenceRecord, *, add: bool = False, reused: bool = False
    ) -> None:
        store, task = self.execution.store, state.task
        requirement = _open_requirement(task, record.kind, store.for_task(task.id))
        if add:
            store.add(record, requirement=(task.id, requirement) if requirement else None)
        elif requirement is not None:
            store.link(record.id, task.id, requirement)
        state.evidence.append(_reported(record, reused=reused))

    def _aggregate_as_calculation(self, state: TaskState, record: EvidenceRecord) -> None:
        """An aggregate answers the task's open calculation too (a count, a sum...)."""
        store, task = self.execution.store, state.task
        requirement = _open_requirement(task, "calculation", store.for_task(task.id))
        if requirement is None:
            return
        derived = EvidenceRecord(
            id=store.next_id(),
            task_id=task.id,
            kind="calculation",
            payload={"operation": requirement.operation, "aggregate": record.to_json()["payload"]},
            provenance={"tool": "aggregate", "from": record.id},
        )
        store.add(derived, requirement=(task.id, requirement))
        state.evidence.append(_reported(derived))

    def _calculate(self, state: TaskState, call: ToolCall) -> Any:
        store, task = self.execution.store, state.task
        args = call.arguments
        try:
            operands = [
                CalculationOperand(str(o["evidence_id"]), o.get("path", ()))
                for o in args.get("operands", ())
            ]
            record = calculate_evidence(
                store.next_id(), task.id, str(args.get("operation")), operands, store
            )
        except (CalculationError, KeyError, TypeError, AttributeError) as error:
            return _error(
                "calculation_failed",
                str(error)
                if isinstance(error, CalculationError)
                else "operands must be objects with an evidence_id",
            )
        self._link(state, record, add=True)
        return {
            "status": "ok",
            "evidence_id": record.id,
            "value": record.to_json()["payload"]["value"],
        }

    async def _add_subtasks(self, state: TaskState, call: ToolCall) -> Any:
        try:
            children = validate_dynamic_children(state.task, call.arguments, self.tasks())
        except PlanValidationError as error:
            return _error("invalid_subtasks", str(error))
        await self.add_children(state.task, children)
        return {"status": "ok", "added": [child.id for child in children]}


def _roles_after(first: str) -> tuple[str, ...]:
    """The executor roles of a task's attempts: its own, then a stronger one once."""
    return (
        (first, "complex_executor") if first == "simple_executor" else (first, "fallback_executor")
    )


def _open_requirement(
    task: PlannedTask, kind: str, linked: Sequence[EvidenceRecord]
) -> EvidenceRequirement | None:
    """The task's first requirement of `kind` no evidence of the task satisfies yet."""
    done = sum(1 for record in linked if record.kind == kind)
    wanted = [r for r in task.requirements if r.kind == kind]
    return wanted[done] if done < len(wanted) else None


def _reported(record: EvidenceRecord, *, reused: bool = False) -> PlannedEvidence:
    payload = record.to_json()["payload"]
    return PlannedEvidence(
        id=record.id,
        kind=record.kind,
        tool=record.provenance.get("tool"),
        call_id=record.provenance.get("call_id"),
        reused=reused,
        summary=_summary(payload),
    )


def _summary(payload: Any) -> str:
    """A content-free label of an evidence payload."""
    if isinstance(payload, Mapping):
        if isinstance(payload.get("data"), list):
            return f"{len(payload['data'])} rows"
        if isinstance(payload.get("groups"), list):
            return f"{len(payload['groups'])} groups"
        if "operation" in payload:  # the operation only: its value is content
            return str(payload["operation"])
    return type(payload).__name__


def _shown(record: EvidenceRecord) -> Any:
    """A result as its executor sees it: with its evidence id, for `calculate` operands."""
    payload = record.to_json()["payload"]
    return {"evidence_id": record.id, **payload} if isinstance(payload, Mapping) else payload


def _error(code: str, message: str) -> dict[str, Any]:
    return {"status": "error", "code": code, "message": message}
