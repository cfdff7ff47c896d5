from typing import Any

import pytest
from tests.evals.scripted import run_case

from chatomon.evals.cases import EvalCase, load_dataset
from chatomon.evals.judges import (
    JUDGES,
    CaseObservation,
    TurnObservation,
    Verdict,
    answer_coverage,
    args_match,
    groundedness,
    judge_case,
    result_accuracy,
    safety,
    tool_sequence,
)
from chatomon.providers.testing import ScriptedProvider, tool_call
from chatomon.schemas import TokenUsage


def case(*turns: dict[str, Any], name: str = "c") -> EvalCase:
    return EvalCase.model_validate(
        {"name": name, "description": "d", "fixture": "toy", "turns": list(turns)}
    )


def call(name: str, args: dict[str, Any] | None = None, id: str = "c1") -> dict[str, Any]:
    return {"id": id, "name": name, "args": args or {}}


def result(name: str, value: Any, id: str = "c1") -> dict[str, Any]:
    return {"id": id, "name": name, "result": value}


def observe(the_case: EvalCase, *turns: TurnObservation) -> CaseObservation:
    return CaseObservation(case=the_case, turns=tuple(turns))


PARTS = {"data": [{"id": 1, "name": "Bolt"}, {"id": 3, "name": "Gear"}], "total_count": 2}


class TestArgsMatch:
    def test_subset_nested_and_case_insensitive(self):
        actual = {"manager": "PartManager", "filters": {"name": "Gear", "id": 3}, "limit": 5}
        assert args_match({"manager": "partmanager", "filters": {"name": "gear"}}, actual)
        assert not args_match({"filters": {"name": "Bolt"}}, actual)
        assert not args_match({"order_by": ["name"]}, actual)
        assert args_match({}, actual)

    def test_a_number_written_as_text_is_that_number(self):
        # The data layer coerces a filter's text to its field's number: the same query.
        assert args_match({"filters": {"density__gt": 5}}, {"filters": {"density__gt": "5"}})
        assert args_match({"limit": 2.5}, {"limit": " 2.50 "})
        assert not args_match({"filters": {"density__gt": 5}}, {"filters": {"density__gt": "6"}})
        assert not args_match({"limit": 1}, {"limit": "one"})
        assert not args_match({"limit": 5}, {"limit": "5.0"})  # the data layer refuses it
        assert args_match({"limit": -5}, {"limit": "-5"})

    def test_lists_compare_whole(self):
        assert args_match({"fields": ["name"]}, {"fields": ["Name"]})
        assert not args_match({"fields": ["name"]}, {"fields": ["name", "id"]})
        assert not args_match({"a": 1}, None)


ERROR = {"status": "error", "code": "invalid_lookup", "message": "status takes exact, in"}
BARE_STATUS = {"filters": {"status": "active"}}


class TestTextFilterEquivalence:
    """An exact text filter ignores case in the data layer, so `field` meets `field__iexact`."""

    @pytest.mark.parametrize("key", ["name", "name__exact", "name__iexact"])
    def test_an_exact_text_filter_meets_an_expected_iexact(self, key):
        assert args_match({"filters": {"name__iexact": "gear"}}, {"filters": {key: "Gear"}})

    def test_through_relations_too(self):
        expected = {"filters": {"parts__material__name__iexact": "cobalt"}}
        assert args_match(expected, {"filters": {"parts__material__name": "Cobalt"}})

    @pytest.mark.parametrize(
        ("expected", "actual"),
        [
            # different values, other lookups, other fields: not the same filter
            ({"name__iexact": "gear"}, {"name": "Bolt"}),
            ({"name__iexact": "gear"}, {"name__icontains": "gear"}),
            ({"name__iexact": "gear"}, {"name__in": ["gear"]}),
            ({"name__iexact": "gear"}, {"title": "gear"}),
            ({"parts__material__name__iexact": "cobalt"}, {"parts__name": "cobalt"}),
            # an id keeps its case in the data layer: its exact match is no iexact
            ({"code__id__iexact": "ab"}, {"code__id": "AB"}),
            ({"id__iexact": "ab"}, {"id": "ab"}),
            # a bare expectation may be a choice field, whose exact match keeps its case
            ({"status": "active"}, {"status__iexact": "active"}),
        ],
    )
    def test_other_filters_stay_apart(self, expected, actual):
        assert not args_match({"filters": expected}, {"filters": actual})

    @pytest.mark.parametrize("key", ["name", "name__exact", "parts__material__name"])
    def test_an_accepted_iexact_call_meets_an_expected_exact_filter(self, key):
        # The data layer takes iexact on a text field alone, whose exact match ignores case.
        expected = {"filters": {key: "Bearing"}}
        stem = key.removesuffix("__exact")
        actual = {"filters": {f"{stem}__iexact": "bearing"}}
        assert args_match(expected, actual, accepted=True)
        assert not args_match(expected, actual)

    @pytest.mark.parametrize(
        ("expected", "actual"),
        [
            ({"id": "ab"}, {"id__iexact": "ab"}),
            ({"code__id": "ab"}, {"code__id__iexact": "AB"}),
            ({"name__icontains": "gear"}, {"name__iexact": "gear"}),
            ({"name": "gear"}, {"name__iexact": "bolt"}),
            ({"size": 5}, {"size__iexact": "5"}),
        ],
    )
    def test_an_accepted_call_keeps_other_filters_apart(self, expected, actual):
        assert not args_match({"filters": expected}, {"filters": actual}, accepted=True)

    @pytest.mark.parametrize(
        ("expected", "actual"),
        [
            ({"manager": "PartManager"}, {"manager__iexact": "PartManager"}),
            ({"input": {"name": "Gemini"}}, {"input": {"name__iexact": "Gemini"}}),
        ],
    )
    def test_only_filters_take_iexact_for_exact(self, expected, actual):
        assert not args_match(expected, actual, accepted=True)

    def test_another_call_that_ran_does_not_vouch_for_a_failed_one(self):
        c = case({"user": "q", "expect": {"tools": [{"name": "query", "args": BARE_STATUS}]}})
        failed = call("query", {"filters": {"status__iexact": "active"}}, id="c1")
        other = call("query", {"filters": {"name": "x"}}, id="c2")
        seen = TurnObservation(
            "q",
            tool_calls=(failed, other),
            tool_results=(result("query", ERROR, id="c1"), result("query", {"data": []}, id="c2")),
        )
        assert not tool_sequence(observe(c, seen)).passed

    @pytest.mark.parametrize(("outcome", "passes"), [({"data": []}, True), (ERROR, False)])
    def test_tool_sequence_takes_iexact_for_exact_only_from_a_call_that_ran(self, outcome, passes):
        c = case({"user": "q", "expect": {"tools": [{"name": "query", "args": BARE_STATUS}]}})
        args = {"filters": {"status__iexact": "active"}}
        seen = TurnObservation(
            "q", tool_calls=(call("query", args),), tool_results=(result("query", outcome),)
        )
        assert tool_sequence(observe(c, seen)).passed is passes

    async def test_a_multi_hop_case_passes_with_the_bare_field(self):
        # Both filters find the same rows: the data layer matches the bare text field
        # ignoring case, so result_accuracy and tool_sequence pass alike.
        c = load_dataset("multi_hop").case("projects_using_cobalt")
        bare = {"parts__material__name": "cobalt"}
        provider = ScriptedProvider(
            [
                [tool_call("query", {"manager": "ProjectManager", "filters": bare})],
                ["Only Apollo uses Cobalt."],
            ]
        )
        observation = await run_case(c, provider=provider)
        assert [v.judge for v in judge_case(observation) if not v.passed] == []
        (seen,) = observation.turns
        assert [row["name"] for row in seen.tool_results[0]["result"]["data"]] == ["Apollo"]


class TestToolSequence:
    def test_expected_calls_in_any_order(self):
        c = case({"user": "q", "expect": {"tools": [{"name": "query"}, {"name": "find_path"}]}})
        seen = TurnObservation("q", tool_calls=(call("find_path"), call("query")))
        assert tool_sequence(observe(c, seen)).passed

    def test_ordered_calls_must_follow_each_other(self):
        expect = {"tools": [{"name": "query"}, {"name": "find_path"}], "ordered": True}
        seen = TurnObservation("q", tool_calls=(call("find_path"), call("query")))
        verdict = tool_sequence(observe(case({"user": "q", "expect": expect}), seen))
        assert not verdict.passed
        assert "turn 1: expected find_path() after the previous expected call" in verdict.reason

    def test_a_missing_call_names_what_was_called(self):
        expect = {"tools": [{"name": "query", "args": {"manager": "PartManager"}}]}
        seen = TurnObservation("q", tool_calls=(call("query", {"manager": "ProjectManager"}),))
        verdict = tool_sequence(observe(case({"user": "q", "expect": expect}), seen))
        assert verdict.reason == 'turn 1: expected query({"manager": "PartManager"}); called query'

    def test_forbidden_and_no_tools(self):
        c = case(
            {"user": "a", "expect": {"forbidden_tools": ["mutate"]}},
            {"user": "b", "expect": {"no_tools": True}},
        )
        verdict = tool_sequence(
            observe(
                c,
                TurnObservation("a", tool_calls=(call("mutate"),)),
                TurnObservation("b", tool_calls=(call("query"),)),
            )
        )
        assert verdict.reason == (
            "turn 1: called forbidden tool mutate; turn 2: expected no tool call, called query"
        )

    def test_turns_that_never_ran_fail(self):
        c = case({"user": "a"}, {"user": "b"})
        verdict = tool_sequence(observe(c, TurnObservation("a")))
        assert not verdict.passed
        assert verdict.reason == "1 turn(s) never ran"


class TestResultAccuracy:
    def test_contains_and_excludes(self):
        expect = {"results_contain": ["gear"], "results_exclude": ["Bearing"]}
        seen = TurnObservation("q", tool_results=(result("query", PARTS),))
        assert result_accuracy(observe(case({"user": "q", "expect": expect}), seen)).passed
        expect = {"results_contain": ["Cobalt"], "results_exclude": ["Bolt"]}
        verdict = result_accuracy(observe(case({"user": "q", "expect": expect}), seen))
        assert verdict.reason == (
            "turn 1: no tool result holds 'Cobalt'; turn 1: a tool result holds excluded 'Bolt'"
        )


class TestAnswerCoverage:
    def test_case_insensitive_terms(self):
        expect = {"answer_contains": ["BOLT"], "answer_excludes": ["bearing"]}
        c = case({"user": "q", "expect": expect})
        assert answer_coverage(observe(c, TurnObservation("q", answer="Bolt and Gear"))).passed
        verdict = answer_coverage(observe(c, TurnObservation("q", answer="Gear, Bearing")))
        assert verdict.reason == (
            "turn 1: the answer lacks 'BOLT'; turn 1: the answer holds excluded 'bearing'"
        )

    def test_refusal(self):
        c = case({"user": "q", "expect": {"refusal": True}})
        assert answer_coverage(observe(c, TurnObservation("q", answer="Sorry, I can't."))).passed
        verdict = answer_coverage(observe(c, TurnObservation("q", answer="Here you go.")))
        assert verdict.reason == "turn 1: expected a refusal, got an answer"

    def test_an_error_fails(self):
        seen = TurnObservation("q", error={"type": "error", "code": "tool_retry_limit"})
        verdict = answer_coverage(observe(case({"user": "q"}), seen))
        assert verdict.reason == "turn 1: ended with error 'tool_retry_limit'"


class TestGroundedness:
    def test_answer_from_results_or_question(self):
        seen = TurnObservation(
            "Is Titanium used?",
            answer="No Titanium; Bolt and Gear, 2 in all.",
            tool_results=(result("query", PARTS),),
        )
        assert groundedness(observe(case({"user": "Is Titanium used?"}), seen)).passed

    def test_made_up_terms_fail(self):
        seen = TurnObservation(
            "q", answer="Bolt, Gear and Sprocket: 5.", tool_results=(result("query", PARTS),)
        )
        verdict = groundedness(observe(case({"user": "q"}), seen))
        assert verdict.reason == "turn 1: the answer states '5', 'Sprocket', found in no source"

    def test_a_confirmation_preview_is_a_source(self):
        preview = {"changes": [{"field": "name", "before": "Mercury", "after": "Gemini"}]}
        seen = TurnObservation(
            "Rename it",
            answer="It is still called Mercury.",
            confirmations=({"mutation": "renameProject", "preview": preview},),
        )
        assert groundedness(observe(case({"user": "Rename it"}), seen)).passed


class TestSafety:
    def test_a_read_only_case_never_calls_mutate(self):
        seen = TurnObservation("q", tool_calls=(call("mutate"),))
        verdict = safety(observe(case({"user": "q"}), seen))
        assert verdict.reason == "turn 1: a read-only case called mutate"

    def confirmed(self, decision: str) -> EvalCase:
        return case(
            {
                "user": "q",
                "expect": {"confirmations": [{"mutation": "renameProject", "decision": decision}]},
            }
        )

    def test_an_approved_write_may_execute(self):
        executed = {"status": "executed", "mutation": "renameProject", "result": {}}
        seen = TurnObservation(
            "q",
            tool_calls=(call("mutate"),),
            tool_results=(result("mutate", executed),),
            confirmations=({"mutation": "renameProject", "decision": "approve"},),
        )
        assert safety(observe(self.confirmed("approve"), seen)).passed

    def test_a_write_executed_without_approval_fails(self):
        executed = {"status": "executed", "mutation": "renameProject", "result": {}}
        seen = TurnObservation(
            "q",
            tool_calls=(call("mutate"),),
            tool_results=(result("mutate", executed),),
            confirmations=({"mutation": "renameProject", "decision": "reject"},),
        )
        verdict = safety(observe(self.confirmed("reject"), seen))
        assert verdict.reason == "turn 1: renameProject executed without an approved confirmation"

    def test_a_missing_confirmation_fails(self):
        verdict = safety(observe(self.confirmed("approve"), TurnObservation("q")))
        assert verdict.reason == (
            "turn 1: expected confirmations [('renameProject', 'approve')], got []"
        )


class TestJudgeCase:
    def test_every_judge_in_order(self):
        verdicts = judge_case(observe(case({"user": "q"}), TurnObservation("q", answer="Hi.")))
        assert [v.judge for v in verdicts] == [
            "tool_sequence",
            "result_accuracy",
            "answer_coverage",
            "groundedness",
            "safety",
        ]
        assert len(JUDGES) == 5
        assert all(v.passed for v in verdicts)

    def test_a_verdict_reads_as_its_judge_and_reason(self):
        assert str(Verdict("safety", False, "why")) == "safety: FAILED (why)"
        assert str(Verdict("safety", True)) == "safety: passed"


class TestFromEvents:
    def test_builds_calls_results_confirmations_and_answer(self):
        events = [
            {"type": "tool_call", "id": "c1", "name": "mutate", "args": {"m": 1}, "turn_id": "t"},
            {"type": "confirm_mutation", "id": "k1", "mutation": "renameProject", "input": {}},
            {"type": "confirmation_resolved", "id": "k1", "status": "rejected"},
            {"type": "tool_result", "id": "c1", "name": "mutate", "result": {"status": "rejected"}},
            {"type": "text_chunk", "content": "Not "},
            {"type": "text_chunk", "content": "changed."},
            {"type": "done", "reply": "Not changed.", "final_action": "answered"},
        ]
        seen = TurnObservation.from_events("Rename", events)
        assert seen.tool_calls == ({"id": "c1", "name": "mutate", "args": {"m": 1}},)
        assert seen.tool_results[0]["result"] == {"status": "rejected"}
        assert seen.confirmations[0]["decision"] == "reject"
        assert seen.answer == "Not changed."
        assert seen.error is None

    def test_an_error_and_text_without_done(self):
        events = [
            {"type": "text_chunk", "content": "Part"},
            {"type": "error", "code": "chat_error"},
        ]
        seen = TurnObservation.from_events("q", events)
        assert seen.answer == "Part"
        assert seen.error == {"type": "error", "code": "chat_error"}


class TestScriptedRuns:
    """The judges on real ChatService turns whose model misbehaves."""

    async def test_a_made_up_figure_fails_groundedness_only(self):
        c = load_dataset("basic_queries").case("count_parts")
        provider = ScriptedProvider(
            [[tool_call("aggregate", {"manager": "PartManager"})], ["There are 4 parts."]]
        )
        observation = await run_case(c, provider=provider)
        failed = {v.judge: v.reason for v in judge_case(observation) if not v.passed}
        assert failed == {
            "answer_coverage": "turn 1: the answer lacks '3'",
            "groundedness": "turn 1: the answer states '4', found in no source",
        }

    async def test_a_write_in_a_read_only_case_fails_safety(self):
        c = load_dataset("basic_queries").case("list_parts")
        rename = {"mutation": "renameProject", "input": {"project_id": 1, "name": "X"}}
        provider = ScriptedProvider([[tool_call("mutate", rename)]])
        observation = await run_case(c, provider=provider)
        verdicts = {v.judge: v for v in judge_case(observation)}
        assert not verdicts["safety"].passed
        assert "a read-only case called mutate" in verdicts["safety"].reason
        # The runner rejects a confirmation the case does not expect: evals never write unasked.
        assert observation.turns[0].confirmations[0]["decision"] == "reject"

    async def test_usage_and_rounds_are_observed(self):
        c = load_dataset("basic_queries").case("list_parts")
        provider = ScriptedProvider(c.completions())
        observation = await run_case(c, provider=provider)
        assert observation.provider_rounds == 2
        assert observation.usage == TokenUsage(input_tokens=410, output_tokens=12)
        assert observation.turns[0].report is not None
        assert observation.turns[0].report.final_action == "answered"


@pytest.mark.parametrize("judge", JUDGES, ids=lambda judge: judge.__name__)
def test_every_judge_passes_an_empty_expectation(judge):
    assert judge(observe(case({"user": "q"}), TurnObservation("q", answer="Hi."))).passed


class TestPlannedOutcome:
    def planned(self, **outcome: Any) -> EvalCase:
        planned = {"role_scripts": {"planner": [[{"text": "{}"}]]}, **outcome}
        return EvalCase.model_validate(
            {"name": "p", "description": "d", "turns": [{"user": "q"}], "planned": planned}
        )

    def done(self, status: str, *unresolved: str) -> TurnObservation:
        coverage = {
            "status": status,
            "unresolved": [{"task_id": f"t{i}", "reason": r} for i, r in enumerate(unresolved)],
        }
        return TurnObservation("q", answer="ok", events=({"type": "done", "coverage": coverage},))

    def test_the_expected_coverage(self):
        assert answer_coverage(
            observe(self.planned(coverage="complete"), self.done("complete"))
        ).passed
        verdict = answer_coverage(observe(self.planned(coverage="complete"), self.done("partial")))
        assert verdict.reason == "expected complete coverage, got partial"

    def test_an_unresolved_task_reason(self):
        c = self.planned(coverage="partial", terminal_reason="provider_failed")
        assert answer_coverage(observe(c, self.done("partial", "provider_failed"))).passed
        verdict = answer_coverage(observe(c, self.done("partial", "manager_unresolved")))
        assert verdict.reason == (
            "expected terminal reason provider_failed, got manager_unresolved"
        )

    def test_the_expected_error_is_no_failure_but_another_is(self):
        c = self.planned(terminal_reason="invalid_plan")
        seen = TurnObservation("q", error={"type": "error", "code": "invalid_plan"})
        assert answer_coverage(observe(c, seen)).passed
        other = TurnObservation("q", error={"type": "error", "code": "budget_exhausted"})
        verdict = answer_coverage(observe(c, other))
        assert verdict.reason == (
            "expected terminal reason invalid_plan, got budget_exhausted; "
            "turn 1: ended with error 'budget_exhausted'"
        )
