"""The values of a planned read: its literals, tasks, requirements and validated plan.

A plan is a small tree: one to six root tasks (the planner's), each with at most two
dynamic children (an executor's), roots depending only on other roots. Everything here
is frozen; `chatomon.planned.validation` is the only producer of a `ValidatedPlan` from
untrusted JSON, and `ValidatedPlan.to_json()` writes the same JSON back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from chatomon.public_errors import PlannedReason
from chatomon.schemas import PlannedTaskStatus

__all__ = [
    "CALCULATION_OPERATIONS",
    "EvidenceRequirement",
    "PlanIntent",
    "PlannedTask",
    "RequirementKind",
    "RoutingFeature",
    "TaskStatus",
    "TerminalReason",
    "ValidatedPlan",
]

TaskStatus = PlannedTaskStatus
"""The status of one task: pending, running, resolved, blocked, budget_exhausted."""

TerminalReason = PlannedReason
"""The stable reason a planned turn, or one of its tasks, ended without evidence."""

RequirementKind = Literal["schema", "path", "query", "calculation"]
"""The kind of evidence a requirement asks for (and an evidence record holds)."""

RoutingFeature = Literal["has_dependency", "requires_calculation", "multiple_queries"]
"""A property of a task that sends it to the complex executor."""

PlanIntent = Literal["read", "mutation"]
"""What the planner classified the request as; a mutation goes to the legacy tool loop."""

CALCULATION_OPERATIONS = (
    "count",
    "sum",
    "average",
    "minimum",
    "maximum",
    "difference",
    "ratio",
    "percentage",
)
"""The only operations a calculation requirement, or the calculate helper, may name."""


@dataclass(frozen=True, slots=True)
class EvidenceRequirement:
    """One explicit piece of evidence needed to resolve a planned task.

    Attributes:
        kind: The kind of evidence that satisfies it.
        description: What the evidence is about, in the planner's words (may be empty).
        operation: The calculation's operation: set for, and only for, kind "calculation".

    Raises:
        ValueError: When `kind` is unknown or `operation` does not fit it (the validator
            reports the same mistakes, naming their field, before building requirements).
    """

    kind: RequirementKind
    description: str = ""
    operation: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in get_args(RequirementKind):
            msg = f"unknown requirement kind {self.kind!r}"
            raise ValueError(msg)
        if self.kind == "calculation":
            if self.operation not in CALCULATION_OPERATIONS:
                allowed = ", ".join(CALCULATION_OPERATIONS)
                msg = f"a calculation requirement needs an operation, one of {allowed}"
                raise ValueError(msg)
        elif self.operation is not None:
            msg = f"only a calculation requirement has an operation, not {self.kind!r}"
            raise ValueError(msg)

    def to_json(self) -> dict[str, str]:
        """The requirement as the plan JSON writes it (a "needs" item)."""
        need: dict[str, str] = {"kind": self.kind}
        if self.description:
            need["description"] = self.description
        if self.operation is not None:
            need["operation"] = self.operation
        return need


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """A validated root or bounded dynamic child task.

    Attributes:
        id: Unique in the turn (`^[A-Za-z][A-Za-z0-9_-]{0,31}$`).
        question: The sub-question the task answers.
        requirements: The evidence that resolves it (1 to 4).
        depends_on: Root tasks whose evidence it needs first.
        parent_id: The root that added it as a dynamic child; None for a root.
        manager_hint: The planner's guess at a manager; the resolver decides, it is
            never trusted.
    """

    id: str
    question: str
    requirements: tuple[EvidenceRequirement, ...]
    depends_on: tuple[str, ...] = ()
    parent_id: str | None = None
    manager_hint: str | None = None

    @property
    def is_root(self) -> bool:
        """Whether the planner wrote it (rather than an executor adding it as a child)."""
        return self.parent_id is None

    @property
    def features(self) -> frozenset[RoutingFeature]:
        """The routing features that make it more than one simple lookup."""
        found: set[RoutingFeature] = set()
        if self.depends_on:
            found.add("has_dependency")
        if any(r.kind == "calculation" for r in self.requirements):
            found.add("requires_calculation")
        if sum(1 for r in self.requirements if r.kind == "query") > 1:
            found.add("multiple_queries")
        return frozenset(found)

    def to_json(self) -> dict[str, Any]:
        """The task as the plan JSON writes it (without its parent: see ValidatedPlan)."""
        task: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.manager_hint is not None:
            task["manager"] = self.manager_hint
        task["depends_on"] = list(self.depends_on)
        task["needs"] = [r.to_json() for r in self.requirements]
        return task


@dataclass(frozen=True, slots=True)
class ValidatedPlan:
    """An immutable plan accepted by the planned-chat validator.

    Attributes:
        intent: "read" (tasks to run) or "mutation" (no tasks: the legacy loop runs).
        tasks: Roots in plan order, then dynamic children in the order they were added.
    """

    intent: PlanIntent
    tasks: tuple[PlannedTask, ...] = ()

    @property
    def roots(self) -> tuple[PlannedTask, ...]:
        """The planner's tasks, in plan order."""
        return tuple(task for task in self.tasks if task.is_root)

    def task(self, task_id: str) -> PlannedTask:
        """The task with id `task_id`.

        Raises:
            KeyError: When the plan has no such task.
        """
        for task in self.tasks:
            if task.id == task_id:
                return task
        msg = f"the plan has no task {task_id!r}"
        raise KeyError(msg)

    def dependents(self, task_id: str) -> tuple[PlannedTask, ...]:
        """The tasks that list `task_id` in their depends_on, in plan order."""
        return tuple(task for task in self.tasks if task_id in task.depends_on)

    def children(self, task_id: str) -> tuple[PlannedTask, ...]:
        """The dynamic children of root `task_id`, in the order they were added."""
        return tuple(task for task in self.tasks if task.parent_id == task_id)

    def with_children(self, children: Sequence[PlannedTask]) -> ValidatedPlan:
        """A copy of the plan with `children` (from validate_dynamic_children) appended."""
        return ValidatedPlan(self.intent, self.tasks + tuple(children))

    def to_json(self) -> dict[str, Any]:
        """The plan JSON that `validate_plan` accepts and turns back into this plan.

        Roots are listed under "tasks"; dynamic children, which the planner never writes,
        under "children" by parent id, so that the round trip keeps them.
        """
        plan: dict[str, Any] = {
            "intent": self.intent,
            "tasks": [task.to_json() for task in self.roots],
        }
        children: dict[str, list[dict[str, Any]]] = {}
        for task in self.tasks:
            if task.parent_id is not None:
                children.setdefault(task.parent_id, []).append(task.to_json())
        if children:
            plan["children"] = children
        return plan
