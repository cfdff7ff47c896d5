from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from chatomon.errors import ConfigurationError
from chatomon.evals.cases import (
    DATASET_NAMES,
    LEGACY_DATASETS,
    CaseTurn,
    DatasetError,
    EvalCase,
    PlannedExpectation,
    ScriptStep,
    TurnExpectation,
    load_dataset,
    load_dataset_file,
)
from chatomon.providers.base import ToolCallEvent
from chatomon.schemas import TokenUsage

CASE = {
    "name": "count_parts",
    "description": "Counts parts.",
    "fixture": "toy",
    "turns": [
        {
            "user": "How many parts?",
            "expect": {"tools": [{"name": "aggregate", "args": {"manager": "PartManager"}}]},
            "script": [
                [{"tool": "aggregate", "args": {"manager": "PartManager"}}],
                [{"text": "3 parts."}, {"usage": {"input_tokens": 5, "output_tokens": 2}}],
            ],
        }
    ],
}


def write(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestModels:
    def test_a_case_validates_with_defaults(self):
        case = EvalCase.model_validate(CASE)
        assert case.tier == 1
        assert case.tags == ()
        assert case.planned is None
        assert case.turns[0].expect.ordered is False
        assert case.scripted

    def test_completions_become_scripted_provider_steps(self):
        case = EvalCase.model_validate(CASE)
        first, second = case.completions()
        assert first == [ToolCallEvent(id="", name="aggregate", args={"manager": "PartManager"})]
        assert second == ["3 parts.", TokenUsage(input_tokens=5, output_tokens=2)]

    def test_the_case_plays_its_turns_in_order(self):
        two = {
            **CASE,
            "turns": [CASE["turns"][0], {"user": "Thanks", "script": [[{"text": "Bye"}]]}],
        }
        assert EvalCase.model_validate(two).completions()[-1] == ["Bye"]

    def test_a_turn_without_script_has_no_completions(self):
        turn = CaseTurn(user="hi")
        assert turn.completions() == []
        assert not EvalCase(name="x", description="d", turns=(turn,)).scripted

    @pytest.mark.parametrize(
        "step",
        [{}, {"text": "a", "tool": "query"}, {"text": "a", "args": {}}, {"usage": {"tokens": 1}}],
    )
    def test_a_script_step_holds_exactly_one_thing(self, step):
        with pytest.raises(ValidationError):
            ScriptStep.model_validate(step)

    def test_unknown_keys_are_rejected(self):
        with pytest.raises(ValidationError, match="answer_contain"):
            TurnExpectation.model_validate({"answer_contain": ["x"]})

    def test_no_tools_contradicts_expected_tools(self):
        with pytest.raises(ValidationError, match="no_tools"):
            TurnExpectation.model_validate({"no_tools": True, "tools": [{"name": "query"}]})

    def test_writes_are_cases_expecting_confirmations_or_mutate(self):
        assert not EvalCase.model_validate(CASE).writes
        confirmed = {"confirmations": [{"mutation": "renameProject", "decision": "approve"}]}
        turn = {"user": "Rename", "expect": confirmed}
        assert EvalCase.model_validate({**CASE, "turns": [turn]}).writes

    def test_planned_roles_are_checked(self):
        with pytest.raises(ValidationError, match="unknown role"):
            PlannedExpectation.model_validate({"role_scripts": {"boss": [[{"text": "x"}]]}})
        planned = PlannedExpectation.model_validate(
            {"role_scripts": {"planner": [[{"text": "{}"}]]}, "coverage": "partial"}
        )
        assert planned.completions("planner") == [["{}"]]
        assert planned.completions("synthesizer") == []

    def test_models_are_frozen(self):
        case = EvalCase.model_validate(CASE)
        with pytest.raises(ValidationError):
            case.name = "other"


class TestLoading:
    def test_dataset_names(self):
        assert DATASET_NAMES == (
            "basic_queries",
            "demo_readiness",
            "edge_cases",
            "follow_ups",
            "large_schema",
            "multi_hop",
            "planned_orchestration",
        )
        assert "planned_orchestration" not in LEGACY_DATASETS
        assert len(LEGACY_DATASETS) == 6

    def test_a_file_loads(self, tmp_path):
        path = write(
            tmp_path, yaml.safe_dump({"name": "mine", "description": "d", "cases": [CASE]})
        )
        dataset = load_dataset_file(path)
        assert dataset.name == "mine"
        assert dataset.path == path
        assert dataset.case("count_parts").fixture == "toy"
        with pytest.raises(KeyError):
            dataset.case("nope")

    def test_a_nested_script_error_names_file_case_and_field(self, tmp_path):
        text = """
name: follow_ups
description: d
cases:
  - name: two_turns
    description: Two turns.
    turns:
      - user: Hi
      - user: Count them.
        script:
          - [{text: "3", tool: aggregate}]
"""
        with pytest.raises(DatasetError) as error:
            load_dataset_file(write(tmp_path, text, "follow_ups.yaml"))
        assert str(error.value) == (
            "follow_ups.yaml: case 'two_turns': turns[1].script[0][0]: "
            "Value error, a script step holds exactly one of text, tool or usage"
        )
        assert error.value.field == "turns[1].script[0][0]"

    def test_a_wrong_value_names_the_field(self, tmp_path):
        case = "{name: a, description: d, tier: 0, turns: [{user: hi}]}"
        text = f"name: x\ndescription: d\ncases:\n  - {case}\n"
        with pytest.raises(DatasetError, match=r"^mine.yaml: case 'a': tier: Input should be"):
            load_dataset_file(write(tmp_path, text))

    def test_an_unnamed_case_is_named_by_position(self, tmp_path):
        text = "name: x\ndescription: d\ncases:\n  - {description: d, turns: [{user: hi}]}\n"
        with pytest.raises(DatasetError, match=r"case '#0': name: field required"):
            load_dataset_file(write(tmp_path, text))

    def test_errors_of_the_file_itself(self, tmp_path):
        with pytest.raises(DatasetError, match=r"^mine.yaml: cases: field required"):
            load_dataset_file(write(tmp_path, "name: x\ndescription: d\n"))
        with pytest.raises(DatasetError, match="not valid YAML"):
            load_dataset_file(write(tmp_path, "name: [x\n"))
        with pytest.raises(DatasetError, match="is a mapping"):
            load_dataset_file(write(tmp_path, "- a\n"))
        with pytest.raises(DatasetError, match="cannot be read"):
            load_dataset_file(tmp_path / "absent.yaml")

    def test_repeated_case_names(self, tmp_path):
        case = "{name: a, description: d, turns: [{user: hi}]}"
        text = f"name: x\ndescription: d\ncases: [{case}, {case}]\n"
        with pytest.raises(DatasetError, match="case 'a': name: used by more than one case"):
            load_dataset_file(write(tmp_path, text))

    def test_an_unknown_packaged_name(self):
        with pytest.raises(DatasetError, match="no packaged dataset 'basics'") as error:
            load_dataset("basics")
        assert isinstance(error.value, ConfigurationError)
        assert error.value.allowed == DATASET_NAMES
