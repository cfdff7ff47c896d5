"""select_executor_role: the simple executor only when every fact about the task is simple."""

from __future__ import annotations

import typing

import pytest

from chatomon.planned.models import EvidenceRequirement, PlannedTask
from chatomon.planned.routing import ExecutorRole, select_executor_role

QUERY = EvidenceRequirement("query")
SIMPLE = PlannedTask("t1", "Which parts use steel?", (EvidenceRequirement("schema"), QUERY))
SIMPLE_FACTS = {"unique_manager": True, "path_depth": 1, "prior_failure": False}


def test_the_roles_are_the_references() -> None:
    assert typing.get_args(ExecutorRole) == ("simple_executor", "complex_executor")


@pytest.mark.parametrize("path_depth", [0, 1])
def test_a_simple_task(path_depth: int) -> None:
    facts = {**SIMPLE_FACTS, "path_depth": path_depth}
    assert select_executor_role(SIMPLE, **facts) == "simple_executor"


@pytest.mark.parametrize(
    "facts",
    [
        {"unique_manager": False},
        {"path_depth": 2},
        {"path_depth": 5},
        {"prior_failure": True},
    ],
)
def test_any_complex_fact_routes_to_the_complex_executor(facts: dict[str, object]) -> None:
    assert select_executor_role(SIMPLE, **{**SIMPLE_FACTS, **facts}) == "complex_executor"


@pytest.mark.parametrize(
    "task",
    [
        PlannedTask("t2", "q", (QUERY,), depends_on=("t1",)),
        PlannedTask("t2", "q", (QUERY, EvidenceRequirement("calculation", operation="count"))),
        PlannedTask("t2", "q", (QUERY, EvidenceRequirement("query", "another"))),
    ],
    ids=["has_dependency", "requires_calculation", "multiple_queries"],
)
def test_any_routing_feature_routes_to_the_complex_executor(task: PlannedTask) -> None:
    assert task.features
    assert select_executor_role(task, **SIMPLE_FACTS) == "complex_executor"


def test_a_dynamic_child_without_features_can_be_simple() -> None:
    child = PlannedTask("c1", "q", (QUERY,), parent_id="t1")
    assert select_executor_role(child, **SIMPLE_FACTS) == "simple_executor"


def test_a_negative_path_depth_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^path_depth must be 0 or more, not -1$"):
        select_executor_role(SIMPLE, unique_manager=True, path_depth=-1, prior_failure=False)
