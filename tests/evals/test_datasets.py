"""The packaged datasets: they load, they cover what the issue asks, and every legacy case's
own script passes every judge through a real ChatService turn (the deterministic CI gate)."""

from collections import Counter
from importlib import resources

import pytest
from tests.evals.scripted import failures, judge_scripted

from chatomon.evals.cases import (
    DATASET_NAMES,
    LEGACY_DATASETS,
    PLANNED_ROLES,
    DatasetError,
    EvalCase,
    load_dataset,
    load_dataset_file,
)
from chatomon.evals.fixtures import FIXTURES
from chatomon.planned.validation import validate_plan

DATASETS = {name: load_dataset(name) for name in DATASET_NAMES}
LEGACY_CASES = [
    pytest.param(case, id=f"{name}:{case.name}")
    for name in LEGACY_DATASETS
    for case in DATASETS[name].cases
]
CATEGORIES = ("read", "aggregate", "multi_hop", "follow_up", "no_tool", "refusal", "write")


def legacy_tags() -> Counter[str]:
    return Counter(tag for name in LEGACY_DATASETS for c in DATASETS[name].cases for tag in c.tags)


def test_every_packaged_file_is_a_known_dataset():
    files = resources.files("chatomon.evals").joinpath("datasets").iterdir()
    assert sorted(f.name for f in files if f.name.endswith(".yaml")) == sorted(
        f"{name}.yaml" for name in DATASET_NAMES
    )
    for name, dataset in DATASETS.items():
        assert dataset.name == name


def test_at_least_sixty_cases_over_both_fixtures():
    counts = {name: len(dataset.cases) for name, dataset in DATASETS.items()}
    assert sum(counts.values()) >= 60
    assert sum(counts[name] for name in LEGACY_DATASETS) >= 60
    assert all(count >= 5 for count in counts.values())
    fixtures = {case.fixture for dataset in DATASETS.values() for case in dataset.cases}
    assert fixtures == {"toy", "large"}


def test_the_legacy_cases_cover_every_category():
    tags = legacy_tags()
    assert {category: tags[category] >= 3 for category in CATEGORIES} == dict.fromkeys(
        CATEGORIES, True
    )


def test_follow_ups_have_several_turns_and_writes_ask_for_confirmation():
    for name in LEGACY_DATASETS:
        for case in DATASETS[name].cases:
            if "follow_up" in case.tags:
                assert len(case.turns) >= 2, case.name
            if "write" in case.tags:
                assert case.writes, case.name
            if "no_tool" in case.tags or "refusal" in case.tags:
                assert any(t.expect.no_tools or t.expect.refusal for t in case.turns), case.name
    decisions = {
        c.decision
        for name in LEGACY_DATASETS
        for case in DATASETS[name].cases
        for turn in case.turns
        for c in turn.expect.confirmations
    }
    assert decisions == {"approve", "reject"}


def test_a_legacy_case_runs_on_a_built_in_fixture_with_a_script():
    for name in LEGACY_DATASETS:
        for case in DATASETS[name].cases:
            assert case.fixture in FIXTURES, case.name
            assert case.scripted, case.name
            assert case.planned is None, case.name


def planned_cases() -> list[EvalCase]:
    return [c for c in DATASETS["planned_orchestration"].cases if c.planned is not None]


def test_planned_cases_script_roles_and_expect_an_outcome():
    assert len(planned_cases()) == len(DATASETS["planned_orchestration"].cases)
    for case in DATASETS["planned_orchestration"].cases:
        assert case.planned is not None, case.name
        assert set(case.planned.role_scripts) <= set(PLANNED_ROLES)
        assert "planner" in case.planned.role_scripts
        outcome = (case.planned.coverage, case.planned.terminal_reason)
        assert outcome != (None, None), case.name
        plans = case.planned.completions("planner")
        if case.planned.coverage is not None:  # the turn got as far as a plan
            assert validate_plan(plans[0][0]).intent == "read"
    outcomes = {(c.planned.coverage, c.planned.terminal_reason) for c in planned_cases()}
    assert {"complete", "partial"} <= {coverage for coverage, _ in outcomes}
    assert (None, "invalid_plan") in outcomes


def test_the_large_fixture_cases_name_its_managers():
    registry = FIXTURES["large"]()
    for case in DATASETS["large_schema"].cases:
        assert case.fixture == "large"
        for turn in case.turns:
            for expectation in turn.expect.tools:
                manager = expectation.args.get("manager")
                if manager is not None and not manager.endswith("sManager"):
                    assert manager in registry.managers, (case.name, manager)


@pytest.mark.parametrize("case", LEGACY_CASES)
async def test_the_scripted_case_passes_every_judge(case):
    observation, verdicts = await judge_scripted(case)
    assert failures(verdicts) == []
    assert len(observation.turns) == len(case.turns)
    assert all(turn.error is None for turn in observation.turns)


def test_a_malformed_copy_names_the_file_case_and_field(tmp_path):
    source = resources.files("chatomon.evals").joinpath("datasets", "basic_queries.yaml")
    text = source.read_text(encoding="utf-8")
    expectation = "tools: [{name: aggregate, args: {manager: PartManager}}]"
    assert text.count(expectation) == 1
    broken = tmp_path / "basic_queries.yaml"
    broken.write_text(text.replace(expectation, "tools: [{args: {manager: PartManager}}]"))
    with pytest.raises(DatasetError) as error:
        load_dataset_file(broken)
    assert str(error.value) == (
        "basic_queries.yaml: case 'count_parts': turns[0].expect.tools[0].name: field required"
    )


@pytest.mark.parametrize(
    "case",
    DATASETS["planned_orchestration"].cases,
    ids=lambda case: case.name,
)
async def test_the_planned_case_passes_every_judge_with_its_role_scripts(case):
    observation, verdicts = await judge_scripted(case)  # every role's script played whole
    assert failures(verdicts) == []
    assert len(observation.turns) == len(case.turns)
