"""The planned-turn values: literals as the reference lists them, tasks, requirements, plans."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from chatomon.planned.models import (
    CALCULATION_OPERATIONS,
    EvidenceRequirement,
    PlanIntent,
    PlannedTask,
    RequirementKind,
    RoutingFeature,
    TaskStatus,
    TerminalReason,
    ValidatedPlan,
)
from chatomon.planned.validation import validate_plan
from chatomon.public_errors import PLANNED_REASONS
from chatomon.schemas import PlannedTaskStatus

QUERY = EvidenceRequirement("query", "parts whose material is steel")
COUNT = EvidenceRequirement("calculation", operation="count")


def task(task_id: str = "t1", *requirements: EvidenceRequirement, **fields: object) -> PlannedTask:
    return PlannedTask(task_id, f"question of {task_id}", requirements or (QUERY,), **fields)


def test_literals_are_the_references() -> None:
    assert typing.get_args(TaskStatus) == (
        "pending",
        "running",
        "resolved",
        "blocked",
        "budget_exhausted",
    )
    assert TaskStatus is PlannedTaskStatus
    assert typing.get_args(TerminalReason) == PLANNED_REASONS
    assert typing.get_args(RequirementKind) == ("schema", "path", "query", "calculation")
    assert typing.get_args(RoutingFeature) == (
        "has_dependency",
        "requires_calculation",
        "multiple_queries",
    )
    assert typing.get_args(PlanIntent) == ("read", "mutation")
    assert CALCULATION_OPERATIONS == (
        "count",
        "sum",
        "average",
        "minimum",
        "maximum",
        "difference",
        "ratio",
        "percentage",
    )


def test_a_calculation_requirement_needs_a_known_operation() -> None:
    with pytest.raises(ValueError, match="needs an operation, one of count, sum"):
        EvidenceRequirement("calculation")
    with pytest.raises(ValueError, match="needs an operation"):
        EvidenceRequirement("calculation", operation="median")
    assert EvidenceRequirement("calculation", operation="ratio").operation == "ratio"


def test_only_a_calculation_requirement_has_an_operation() -> None:
    with pytest.raises(
        ValueError, match="only a calculation requirement has an operation, not 'query'"
    ):
        EvidenceRequirement("query", operation="sum")


def test_a_requirement_kind_is_one_of_the_four() -> None:
    with pytest.raises(ValueError, match=r"^unknown requirement kind 'mutation'$"):
        EvidenceRequirement("mutation")


def test_values_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        QUERY.kind = "path"
    with pytest.raises(dataclasses.FrozenInstanceError):
        task().id = "t2"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ValidatedPlan("read", (task(),)).intent = "mutation"


def test_a_task_without_a_parent_is_a_root() -> None:
    assert task().is_root
    assert not task("c1", parent_id="t1").is_root


@pytest.mark.parametrize(
    ("requirements", "depends_on", "expected"),
    [
        ((QUERY,), (), set()),
        ((QUERY,), ("t0",), {"has_dependency"}),
        ((QUERY, COUNT), (), {"requires_calculation"}),
        ((QUERY, QUERY), (), {"multiple_queries"}),
        ((EvidenceRequirement("schema"), EvidenceRequirement("path"), QUERY), (), set()),
        (
            (QUERY, QUERY, COUNT),
            ("t0",),
            {"has_dependency", "requires_calculation", "multiple_queries"},
        ),
    ],
)
def test_features(requirements, depends_on, expected) -> None:
    assert task("t1", *requirements, depends_on=depends_on).features == frozenset(expected)


def plan_with_children() -> ValidatedPlan:
    t1 = task("t1")
    t2 = task("t2", QUERY, COUNT, depends_on=("t1",))
    t3 = task("t3", depends_on=("t1",))
    plan = ValidatedPlan("read", (t1, t2, t3))
    return plan.with_children((task("c1", parent_id="t2", depends_on=("t1",)),))


def test_roots_task_dependents_and_children() -> None:
    plan = plan_with_children()
    assert [t.id for t in plan.roots] == ["t1", "t2", "t3"]
    assert [t.id for t in plan.tasks] == ["t1", "t2", "t3", "c1"]
    assert plan.task("t2").depends_on == ("t1",)
    assert [t.id for t in plan.dependents("t1")] == ["t2", "t3", "c1"]
    assert plan.dependents("t3") == ()
    assert [t.id for t in plan.children("t2")] == ["c1"]
    assert plan.children("t1") == ()


def test_an_unknown_task_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="the plan has no task 't9'"):
        plan_with_children().task("t9")


def test_with_children_leaves_the_plan_unchanged() -> None:
    plan = ValidatedPlan("read", (task("t1"),))
    grown = plan.with_children((task("c1", parent_id="t1"),))
    assert len(plan.tasks) == 1
    assert len(grown.tasks) == 2


def test_to_json_is_the_plan_json() -> None:
    plan = ValidatedPlan(
        "read",
        (
            PlannedTask("t1", "Which parts use steel?", (QUERY, COUNT), manager_hint="part"),
            PlannedTask(
                "t2", "And their weight?", (EvidenceRequirement("query"),), depends_on=("t1",)
            ),
        ),
    )
    assert plan.to_json() == {
        "intent": "read",
        "tasks": [
            {
                "id": "t1",
                "question": "Which parts use steel?",
                "manager": "part",
                "depends_on": [],
                "needs": [
                    {"kind": "query", "description": "parts whose material is steel"},
                    {"kind": "calculation", "operation": "count"},
                ],
            },
            {
                "id": "t2",
                "question": "And their weight?",
                "depends_on": ["t1"],
                "needs": [{"kind": "query"}],
            },
        ],
    }
    assert validate_plan(plan.to_json()) == plan


def test_to_json_round_trips_dynamic_children() -> None:
    plan = plan_with_children()
    assert plan.to_json()["children"] == {"t2": [task("c1", depends_on=("t1",)).to_json()]}
    assert validate_plan(plan.to_json()) == plan


def test_a_mutation_plan_has_no_tasks() -> None:
    plan = ValidatedPlan("mutation")
    assert plan.roots == ()
    assert plan.to_json() == {"intent": "mutation", "tasks": []}
    assert validate_plan(plan.to_json()) == plan
