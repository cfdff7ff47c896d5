"""Plan validation: the planner's JSON, and an executor's dynamic children, before any data.

The planner writes (extra keys are refused everywhere)::

    {"intent": "read", "tasks": [{"id": "t1", "question": "Which parts use steel?",
      "manager": "part", "depends_on": [],
      "needs": [{"kind": "query", "description": "parts whose material is steel"},
                {"kind": "calculation", "operation": "count"}]}]}

or `{"intent": "mutation"}` (no tasks: the legacy loop handles it). `ValidatedPlan.to_json`
adds `"children": {root_id: [task, ...]}` for dynamic children, validated here by the rules
of `validate_dynamic_children`. A read plan has 1 to
`MAX_ROOT_TASKS` roots with globally unique ids; a root depends only on other roots, never
on itself, and a root that depends on others is never depended upon
(`MAX_ROOT_DEPENDENCY_DEPTH`), which also rules out cycles. An executor may add at most
`MAX_CHILDREN_PER_ROOT` children to a root; children never get children.

Every mistake is a `PlanValidationError` whose message names the field
("tasks[1].depends_on: unknown task 't9'"): the planner's correction round reads it, a
client never does (its public reason is "invalid_plan").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chatomon._suggest import did_you_mean
from chatomon.planned.models import (
    CALCULATION_OPERATIONS,
    EvidenceRequirement,
    PlanIntent,
    PlannedTask,
    RequirementKind,
    ValidatedPlan,
)

__all__ = [
    "MAX_CHILDREN_PER_ROOT",
    "MAX_ROOT_DEPENDENCY_DEPTH",
    "MAX_ROOT_TASKS",
    "PlanValidationError",
    "validate_dynamic_children",
    "validate_plan",
]

MAX_CHILDREN_PER_ROOT = 2
"""Dynamic children one root may add, in all."""

MAX_ROOT_DEPENDENCY_DEPTH = 1
"""How deep root dependencies chain: a dependent root is never itself depended upon."""

MAX_ROOT_TASKS = 6
"""Roots a read plan may have (at least one)."""

TASK_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"
MAX_QUESTION_CHARS = 500
MAX_DESCRIPTION_CHARS = 500
MAX_MANAGER_HINT_CHARS = 200
MAX_NEEDS = 4
_MAX_REPORTED = 5  # enough for one correction round, short enough for its prompt

_Model = TypeVar("_Model", bound=BaseModel)


class PlanValidationError(ValueError):
    """Private validation detail with a stable public invalid_plan reason.

    Attributes:
        problems: Each mistake found, as "field: what is wrong".
    """

    public_reason: ClassVar[str] = "invalid_plan"

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems[:_MAX_REPORTED]))


class _Need(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RequirementKind
    description: str = Field("", max_length=MAX_DESCRIPTION_CHARS)
    operation: str | None = None


class _Task(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=TASK_ID_PATTERN)
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    manager: str | None = Field(None, max_length=MAX_MANAGER_HINT_CHARS)
    depends_on: list[str] = []
    needs: list[_Need] = Field(min_length=1, max_length=MAX_NEEDS)

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            msg = "must not be blank"
            raise ValueError(msg)
        return value


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    intent: PlanIntent
    tasks: list[_Task] = Field([], max_length=MAX_ROOT_TASKS)
    children: dict[str, list[_Task]] = {}


class _Children(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    children: list[_Task] = Field(max_length=MAX_CHILDREN_PER_ROOT)


def validate_plan(payload: object) -> ValidatedPlan:
    """Validate one complete JSON plan (a mapping or a JSON string) before any data access.

    Raises:
        PlanValidationError: Naming every mistake found (the first few in its message).
    """
    plan = _parse(_Plan, payload, "plan")
    if plan.intent == "mutation":
        if plan.tasks or plan.children:
            raise PlanValidationError(["tasks: a mutation plan has no tasks"])
        return ValidatedPlan("mutation")
    problems: list[str] = []
    if not plan.tasks:
        problems.append(f"tasks: a read plan needs 1 to {MAX_ROOT_TASKS} tasks, got 0")
    roots = _build(plan.tasks, "tasks", None, set(), problems)
    by_id = {task.id: task for task in roots}
    for index, task in enumerate(roots):
        _check_root_dependencies(task, f"tasks[{index}].depends_on", by_id, problems)
    tasks = list(roots)
    for parent_id, entries in plan.children.items():
        parent = by_id.get(parent_id)
        if parent is None:
            problems.append(f"children.{parent_id}: unknown task {parent_id!r}")
            continue
        tasks += _children(parent, entries, f"children.{parent_id}", tasks, problems)
    if problems:
        raise PlanValidationError(problems)
    return ValidatedPlan("read", tuple(tasks))


def validate_dynamic_children(
    parent: PlannedTask, payload: object, existing_tasks: Sequence[PlannedTask]
) -> tuple[PlannedTask, ...]:
    """Validate at most two non-recursive children owned by one root.

    `payload` is `{"children": [task, ...]}` (the plan's task shape, as a mapping or a JSON
    string). The children get `parent_id=parent.id`.

    Raises:
        PlanValidationError: When the parent is a child itself, the root would exceed
            MAX_CHILDREN_PER_ROOT children, an id is taken, or a dependency is not one of
            the parent's own.
    """
    if not parent.is_root:
        detail = f"parent: {parent.id!r} is a dynamic child; children never get children"
        raise PlanValidationError([detail])
    entries = _parse(_Children, payload, "children").children
    problems: list[str] = []
    children = _children(parent, entries, "children", existing_tasks, problems)
    if problems:
        raise PlanValidationError(problems)
    return children


def _children(
    parent: PlannedTask,
    entries: Sequence[_Task],
    where: str,
    existing: Sequence[PlannedTask],
    problems: list[str],
) -> tuple[PlannedTask, ...]:
    had = sum(1 for task in existing if task.parent_id == parent.id)
    if had + len(entries) > MAX_CHILDREN_PER_ROOT:
        problems.append(
            f"{where}: at most {MAX_CHILDREN_PER_ROOT} children per root; "
            f"{parent.id!r} has {had} and adds {len(entries)}"
        )
    taken = {task.id for task in existing} | {parent.id}
    children = _build(entries, where, parent.id, taken, problems)
    problems.extend(
        f"{where}[{index}].depends_on: {name!r} is not a dependency of {parent.id!r} "
        "(a child may depend only on its parent's dependencies)"
        for index, child in enumerate(children)
        for name in child.depends_on
        if name not in parent.depends_on
    )
    return children


def _build(
    entries: Sequence[_Task],
    where: str,
    parent_id: str | None,
    taken: set[str],
    problems: list[str],
) -> tuple[PlannedTask, ...]:
    """The tasks of `entries`, reporting duplicate ids and ill-formed needs."""
    tasks: list[PlannedTask] = []
    for index, entry in enumerate(entries):
        at = f"{where}[{index}]"
        if entry.id in taken:
            problems.append(f"{at}.id: duplicate task id {entry.id!r}")
        taken.add(entry.id)
        repeated = sorted({name for name in entry.depends_on if entry.depends_on.count(name) > 1})
        problems.extend(f"{at}.depends_on: {name!r} is listed twice" for name in repeated)
        needs = tuple(
            _requirement(need, f"{at}.needs[{n}]", problems) for n, need in enumerate(entry.needs)
        )
        tasks.append(
            PlannedTask(
                id=entry.id,
                question=entry.question,
                requirements=tuple(need for need in needs if need is not None),
                depends_on=tuple(dict.fromkeys(entry.depends_on)),
                parent_id=parent_id,
                manager_hint=entry.manager,
            )
        )
    return tuple(tasks)


def _requirement(need: _Need, at: str, problems: list[str]) -> EvidenceRequirement | None:
    if need.kind != "calculation":
        if need.operation is None:
            return EvidenceRequirement(need.kind, need.description)
        problems.append(f"{at}.operation: only a calculation has an operation")
        return None
    if need.operation in CALCULATION_OPERATIONS:
        return EvidenceRequirement(need.kind, need.description, need.operation)
    allowed = ", ".join(CALCULATION_OPERATIONS)
    if need.operation is None:
        problems.append(f"{at}.operation: a calculation needs one of {allowed}")
    else:
        hint = did_you_mean(need.operation, CALCULATION_OPERATIONS)
        problems.append(
            f"{at}.operation: unknown operation {need.operation!r}{hint} (one of {allowed})"
        )
    return None


def _check_root_dependencies(
    task: PlannedTask, at: str, roots: Mapping[str, PlannedTask], problems: list[str]
) -> None:
    for name in task.depends_on:
        target = roots.get(name)
        if name == task.id:
            problems.append(f"{at}: a task cannot depend on itself")
        elif target is None:
            problems.append(f"{at}: unknown task {name!r}{did_you_mean(name, roots)}")
        elif target.depends_on:
            problems.append(
                f"{at}: {name!r} depends on other tasks itself "
                f"(dependency depth is at most {MAX_ROOT_DEPENDENCY_DEPTH})"
            )


def _parse(model: type[_Model], payload: object, what: str) -> _Model:
    """`payload` (a mapping or a JSON string) validated as `model`."""
    if isinstance(payload, str | bytes):
        try:
            payload = json.loads(payload)
        except ValueError as error:
            raise PlanValidationError([f"{what}: not valid JSON ({error})"]) from None
        except RecursionError:  # "[[[[..." nested past the interpreter's limit
            raise PlanValidationError([f"{what}: not valid JSON (nested too deeply)"]) from None
    if not isinstance(payload, Mapping):
        raise PlanValidationError([f"{what}: expected a JSON object, got {type(payload).__name__}"])
    try:
        return model.model_validate(dict(payload))
    except ValidationError as error:
        raise PlanValidationError([_problem(e, what) for e in error.errors()]) from None


def _problem(error: Any, what: str) -> str:
    """One pydantic error as "field: what is wrong", in the plan's own vocabulary."""
    loc: tuple[str | int, ...] = tuple(error["loc"])
    kind, ctx = error["type"], error.get("ctx", {})
    if kind == "extra_forbidden":
        return f"{_path(loc[:-1]) or what}: unknown key {loc[-1]!r}"
    if kind == "missing":
        return f"{_path(loc)}: required"
    if kind == "string_pattern_mismatch":
        detail = "must be 1 to 32 letters, digits, '_' or '-', starting with a letter"
    elif kind in ("too_long", "too_short"):
        bound = ctx.get("max_length", ctx.get("min_length"))
        word = "at most" if kind == "too_long" else "at least"
        detail = f"{word} {bound} items, got {ctx.get('actual_length')}"
    elif kind == "string_too_long":
        detail = f"at most {ctx.get('max_length')} characters"
    elif kind == "value_error":
        detail = str(ctx.get("error"))
    else:
        detail = str(error["msg"])[:1].lower() + str(error["msg"])[1:]
    return f"{_path(loc)}: {detail}"


def _path(loc: tuple[str | int, ...]) -> str:
    """("tasks", 1, "needs", 0, "kind") as "tasks[1].needs[0].kind"."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
