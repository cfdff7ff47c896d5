"""validate_plan and validate_dynamic_children: every rule, each with the field it names."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest

from chatomon.planned.models import EvidenceRequirement, PlannedTask, ValidatedPlan
from chatomon.planned.validation import (
    MAX_CHILDREN_PER_ROOT,
    MAX_ROOT_DEPENDENCY_DEPTH,
    MAX_ROOT_TASKS,
    PlanValidationError,
    validate_dynamic_children,
    validate_plan,
)

SPEC_EXAMPLE = {
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
        }
    ],
}


def entry(task_id: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": task_id,
        "question": f"question of {task_id}",
        "needs": [{"kind": "query"}],
    }
    if depends_on:
        data["depends_on"] = list(depends_on)
    data.update(fields)
    return data


def read_plan(*tasks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"intent": "read", "tasks": list(tasks), **extra}


def problems(payload: object) -> tuple[str, ...]:
    with pytest.raises(PlanValidationError) as caught:
        validate_plan(payload)
    return caught.value.problems


def test_the_constants_are_the_references() -> None:
    assert MAX_CHILDREN_PER_ROOT == 2
    assert MAX_ROOT_DEPENDENCY_DEPTH == 1
    assert MAX_ROOT_TASKS == 6


def test_the_error_is_a_value_error_with_the_public_reason() -> None:
    assert issubclass(PlanValidationError, ValueError)
    assert PlanValidationError.public_reason == "invalid_plan"
    error = PlanValidationError(["a: one", "b: two"])
    assert str(error) == "a: one; b: two"
    assert error.problems == ("a: one", "b: two")


def test_the_message_names_the_first_five_problems() -> None:
    error = PlanValidationError([f"p{i}: x" for i in range(8)])
    assert str(error) == "; ".join(f"p{i}: x" for i in range(5))
    assert len(error.problems) == 8


def test_the_spec_example_is_a_plan() -> None:
    plan = validate_plan(SPEC_EXAMPLE)
    assert plan == ValidatedPlan(
        "read",
        (
            PlannedTask(
                "t1",
                "Which parts use steel?",
                (
                    EvidenceRequirement("query", "parts whose material is steel"),
                    EvidenceRequirement("calculation", operation="count"),
                ),
                manager_hint="part",
            ),
        ),
    )


def test_a_json_string_is_accepted() -> None:
    assert validate_plan(json.dumps(SPEC_EXAMPLE)) == validate_plan(SPEC_EXAMPLE)
    assert validate_plan(json.dumps(SPEC_EXAMPLE).encode()) == validate_plan(SPEC_EXAMPLE)


def test_read_only_mappings_and_tuples_are_accepted() -> None:
    frozen = MappingProxyType(
        {
            "intent": "read",
            "tasks": (
                MappingProxyType({"id": "t1", "question": "q", "needs": ({"kind": "query"},)}),
            ),
        }
    )
    assert validate_plan(frozen).roots[0].requirements == (EvidenceRequirement("query"),)


def test_invalid_json() -> None:
    (problem,) = problems('{"intent": "read",')
    assert problem.startswith("plan: not valid JSON (")


def test_json_nested_past_the_recursion_limit() -> None:
    assert problems("[" * 100_000) == ("plan: not valid JSON (nested too deeply)",)


@pytest.mark.parametrize(
    ("payload", "kind"), [([], "list"), (None, "NoneType"), (3, "int"), ("[1]", "list")]
)
def test_anything_but_an_object_is_refused(payload: object, kind: str) -> None:
    assert problems(payload) == (f"plan: expected a JSON object, got {kind}",)


def test_mutation_plans() -> None:
    assert validate_plan({"intent": "mutation"}) == ValidatedPlan("mutation")
    assert validate_plan({"intent": "mutation", "tasks": []}) == ValidatedPlan("mutation")
    assert problems({"intent": "mutation", "tasks": [entry("t1")]}) == (
        "tasks: a mutation plan has no tasks",
    )
    assert problems({"intent": "mutation", "children": {"t1": [entry("c1")]}}) == (
        "tasks: a mutation plan has no tasks",
    )


def test_the_intent_is_required_and_closed() -> None:
    assert problems({"tasks": [entry("t1")]}) == ("intent: required",)
    assert problems({"intent": "write"}) == ("intent: input should be 'read' or 'mutation'",)


def test_unknown_keys_are_refused_everywhere() -> None:
    assert problems(read_plan(entry("t1"), notes="x")) == ("plan: unknown key 'notes'",)
    assert problems(read_plan(entry("t1", profile="fast"))) == ("tasks[0]: unknown key 'profile'",)
    bad_need = entry("t1", needs=[{"kind": "query", "tool": "mutate"}])
    assert problems(read_plan(bad_need)) == ("tasks[0].needs[0]: unknown key 'tool'",)


def test_a_read_plan_needs_one_to_six_roots() -> None:
    assert problems(read_plan()) == ("tasks: a read plan needs 1 to 6 tasks, got 0",)
    assert problems({"intent": "read"}) == ("tasks: a read plan needs 1 to 6 tasks, got 0",)
    six = [entry(f"t{i}") for i in range(6)]
    assert len(validate_plan(read_plan(*six)).roots) == 6
    assert problems(read_plan(*six, entry("t6"))) == ("tasks: at most 6 items, got 7",)


@pytest.mark.parametrize("task_id", ["t1", "T", "a" * 32, "step_2-b"])
def test_valid_task_ids(task_id: str) -> None:
    assert validate_plan(read_plan(entry(task_id))).roots[0].id == task_id


@pytest.mark.parametrize("task_id", ["", "1t", "_t", "t 1", "t.1", "a" * 33, "tâche"])
def test_invalid_task_ids(task_id: str) -> None:
    assert problems(read_plan(entry(task_id))) == (
        "tasks[0].id: must be 1 to 32 letters, digits, '_' or '-', starting with a letter",
    )


def test_a_task_id_must_be_a_string() -> None:
    assert problems(read_plan(entry(1))) == ("tasks[0].id: input should be a valid string",)


def test_required_task_fields() -> None:
    assert problems(read_plan({"id": "t1"})) == (
        "tasks[0].question: required",
        "tasks[0].needs: required",
    )


def test_the_question_is_not_blank_and_at_most_500_characters() -> None:
    assert problems(read_plan(entry("t1", question=" \n"))) == (
        "tasks[0].question: must not be blank",
    )
    assert problems(read_plan(entry("t1", question="q" * 501))) == (
        "tasks[0].question: at most 500 characters",
    )
    assert validate_plan(read_plan(entry("t1", question="q" * 500))).roots[0].question == "q" * 500


def test_the_manager_hint_is_optional_bounded_text() -> None:
    assert validate_plan(read_plan(entry("t1"))).roots[0].manager_hint is None
    assert validate_plan(read_plan(entry("t1", manager="PartManager"))).roots[0].manager_hint == (
        "PartManager"
    )
    assert problems(read_plan(entry("t1", manager="m" * 201))) == (
        "tasks[0].manager: at most 200 characters",
    )


def test_needs_has_one_to_four_items() -> None:
    assert problems(read_plan(entry("t1", needs=[]))) == (
        "tasks[0].needs: at least 1 items, got 0",
    )
    five = [{"kind": "query"}] * 5
    assert problems(read_plan(entry("t1", needs=five))) == (
        "tasks[0].needs: at most 4 items, got 5",
    )


def test_need_kinds_are_closed() -> None:
    assert problems(read_plan(entry("t1", needs=[{"kind": "mutation"}]))) == (
        "tasks[0].needs[0].kind: input should be 'schema', 'path', 'query' or 'calculation'",
    )


def test_a_need_description_is_at_most_500_characters() -> None:
    need = {"kind": "schema", "description": "d" * 501}
    assert problems(read_plan(entry("t1", needs=[need]))) == (
        "tasks[0].needs[0].description: at most 500 characters",
    )


def test_calculation_operations() -> None:
    needs = [{"kind": "query"}, {"kind": "calculation"}]
    assert problems(read_plan(entry("t1", needs=needs))) == (
        "tasks[0].needs[1].operation: a calculation needs one of count, sum, average, minimum, "
        "maximum, difference, ratio, percentage",
    )
    needs = [{"kind": "calculation", "operation": "averge"}]
    assert problems(read_plan(entry("t1", needs=needs))) == (
        "tasks[0].needs[0].operation: unknown operation 'averge'; did you mean 'average'? "
        "(one of count, sum, average, minimum, maximum, difference, ratio, percentage)",
    )
    needs = [{"kind": "path", "operation": "sum"}]
    assert problems(read_plan(entry("t1", needs=needs))) == (
        "tasks[0].needs[0].operation: only a calculation has an operation",
    )


def test_task_ids_are_unique() -> None:
    assert problems(read_plan(entry("t1"), entry("t2"), entry("t1"))) == (
        "tasks[2].id: duplicate task id 't1'",
    )


def test_dependencies_name_other_roots() -> None:
    assert problems(read_plan(entry("t1"), entry("t2", "t9"))) == (
        "tasks[1].depends_on: unknown task 't9'",
    )
    assert problems(read_plan(entry("steel_parts"), entry("t2", "steel_part"))) == (
        "tasks[1].depends_on: unknown task 'steel_part'; did you mean 'steel_parts'?",
    )
    assert problems(read_plan(entry("t1", "t1"))) == (
        "tasks[0].depends_on: a task cannot depend on itself",
    )


def test_a_dependency_is_listed_once() -> None:
    assert problems(read_plan(entry("t1"), entry("t2", "t1", "t1"))) == (
        "tasks[1].depends_on: 't1' is listed twice",
    )


def test_dependency_depth_is_one() -> None:
    plan = validate_plan(read_plan(entry("t1"), entry("t2"), entry("t3", "t1", "t2")))
    assert plan.task("t3").depends_on == ("t1", "t2")
    assert problems(read_plan(entry("t1"), entry("t2", "t1"), entry("t3", "t2"))) == (
        "tasks[2].depends_on: 't2' depends on other tasks itself (dependency depth is at most 1)",
    )


def test_cycles_are_refused() -> None:
    found = problems(read_plan(entry("t1", "t2"), entry("t2", "t1")))
    assert found == (
        "tasks[0].depends_on: 't2' depends on other tasks itself (dependency depth is at most 1)",
        "tasks[1].depends_on: 't1' depends on other tasks itself (dependency depth is at most 1)",
    )


def test_every_problem_is_reported_at_once() -> None:
    found = problems(read_plan(entry("t1", "t9"), entry("t1", needs=[{"kind": "calculation"}])))
    assert found[0] == "tasks[1].id: duplicate task id 't1'"
    assert found[1].startswith("tasks[1].needs[0].operation: a calculation needs one of")
    assert found[2] == "tasks[0].depends_on: unknown task 't9'"


def test_plan_children_are_validated_like_dynamic_ones() -> None:
    plan = validate_plan(
        read_plan(entry("t1"), entry("t2", "t1"), children={"t2": [entry("c1", "t1")]})
    )
    assert plan.task("c1").parent_id == "t2"
    assert problems(read_plan(entry("t1"), children={"t9": [entry("c1")]})) == (
        "children.t9: unknown task 't9'",
    )
    assert problems(read_plan(entry("t1"), children={"t1": [entry("t1")]})) == (
        "children.t1[0].id: duplicate task id 't1'",
    )
    assert problems(read_plan(entry("t1"), children={"t1": [{"id": "c1"}]}))[0] == (
        "children.t1[0].question: required"
    )


# --- dynamic children ---------------------------------------------------------------------

ROOTS = validate_plan(read_plan(entry("t1"), entry("t2"), entry("t3", "t1"))).tasks


def children(
    parent_id: str, payload: object, existing: tuple[PlannedTask, ...] = ROOTS
) -> tuple[PlannedTask, ...]:
    parent = next(task for task in existing if task.id == parent_id)
    return validate_dynamic_children(parent, payload, existing)


def child_problems(
    parent_id: str, payload: object, existing: tuple[PlannedTask, ...] = ROOTS
) -> tuple[str, ...]:
    with pytest.raises(PlanValidationError) as caught:
        children(parent_id, payload, existing)
    return caught.value.problems


def test_children_get_their_parent() -> None:
    added = children("t3", {"children": [entry("c1"), entry("c2", "t1")]})
    assert [(c.id, c.parent_id, c.depends_on) for c in added] == [
        ("c1", "t3", ()),
        ("c2", "t3", ("t1",)),
    ]
    assert not added[0].is_root


def test_children_payload_may_be_json_and_empty() -> None:
    assert children("t1", json.dumps({"children": [entry("c1")]}))[0].id == "c1"
    assert children("t1", {"children": []}) == ()


def test_children_payload_shape() -> None:
    assert child_problems("t1", [entry("c1")]) == ("children: expected a JSON object, got list",)
    assert child_problems("t1", "{")[0].startswith("children: not valid JSON (")
    assert child_problems("t1", {}) == ("children: required",)
    assert child_problems("t1", {"children": [], "more": 1}) == ("children: unknown key 'more'",)
    assert child_problems("t1", {"children": [entry("c1", x=1)]}) == (
        "children[0]: unknown key 'x'",
    )
    assert child_problems("t1", {"children": [entry("c 1")]}) == (
        "children[0].id: must be 1 to 32 letters, digits, '_' or '-', starting with a letter",
    )


def test_at_most_two_children_per_root() -> None:
    three = {"children": [entry("c1"), entry("c2"), entry("c3")]}
    assert child_problems("t1", three) == ("children: at most 2 items, got 3",)
    existing = (*ROOTS, *children("t1", {"children": [entry("c1")]}))
    assert child_problems("t1", {"children": [entry("c2"), entry("c3")]}, existing) == (
        "children: at most 2 children per root; 't1' has 1 and adds 2",
    )
    assert children("t1", {"children": [entry("c2")]}, existing)[0].id == "c2"
    # another root's children do not count
    assert len(children("t2", {"children": [entry("c2"), entry("c3")]}, existing)) == 2


def test_children_never_get_children() -> None:
    existing = (*ROOTS, *children("t1", {"children": [entry("c1")]}))
    assert child_problems("c1", {"children": [entry("g1")]}, existing) == (
        "parent: 'c1' is a dynamic child; children never get children",
    )


def test_child_ids_are_globally_unique() -> None:
    assert child_problems("t1", {"children": [entry("t2")]}) == (
        "children[0].id: duplicate task id 't2'",
    )
    assert child_problems("t1", {"children": [entry("t1")]}) == (
        "children[0].id: duplicate task id 't1'",
    )
    assert child_problems("t1", {"children": [entry("c1"), entry("c1")]}) == (
        "children[1].id: duplicate task id 'c1'",
    )


def test_the_parent_is_never_free_to_take_an_id_missing_from_existing_tasks() -> None:
    parent = ROOTS[0]
    with pytest.raises(PlanValidationError, match="duplicate task id 't1'"):
        validate_dynamic_children(parent, {"children": [entry("t1")]}, ())


def test_a_child_depends_only_on_its_parents_dependencies() -> None:
    assert child_problems("t1", {"children": [entry("c1", "t2")]}) == (
        "children[0].depends_on: 't2' is not a dependency of 't1' "
        "(a child may depend only on its parent's dependencies)",
    )
    assert child_problems("t3", {"children": [entry("c1", "t3")]}) == (
        "children[0].depends_on: 't3' is not a dependency of 't3' "
        "(a child may depend only on its parent's dependencies)",
    )
    assert children("t3", {"children": [entry("c1", "t1")]})[0].depends_on == ("t1",)


def test_child_needs_follow_the_plan_rules() -> None:
    payload = {"children": [entry("c1", needs=[{"kind": "calculation", "operation": "median"}])]}
    assert child_problems("t1", payload)[0].startswith(
        "children[0].needs[0].operation: unknown operation 'median'"
    )
