"""The eval runner: cases through ChatService, confirmations answered, judged, summed up."""

from __future__ import annotations

import pytest
from tests.evals.helpers import case, dataset

from chatomon.chat.store import MemoryStore
from chatomon.chat.store.records import Owner
from chatomon.evals.cases import Dataset
from chatomon.evals.runner import EVAL_ACTOR_ID, Environment, run_case, run_cases
from chatomon.evals.selection import (
    SCRIPTED,
    ProviderChoice,
    Selected,
    scripted_provider,
    select_cases,
)
from chatomon.providers.testing import ScriptedProvider
from chatomon.redaction import Redaction


async def run_one(name: str, file: str = "toy_pass", environment: Environment | None = None):
    chosen = dataset(file)
    return await run_case(
        Selected(chosen.name, chosen.case(name)),
        ProviderChoice.scripted(),
        environment or Environment(),
    )


async def test_a_scripted_read_passes_every_judge_with_its_counts() -> None:
    result = await run_one("list_parts")
    assert result.passed, result.failures
    assert {v.judge for v in result.verdicts} == {
        "tool_sequence", "result_accuracy", "answer_coverage", "groundedness", "safety",
    }  # fmt: skip
    assert (result.tool_calls, result.provider_rounds) == (1, 2)
    # The script's two usage steps, summed from the turn's TurnReport.
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 7)
    turn = result.observation.turns[0]
    assert turn.report is not None
    assert turn.report.final_action == "answered"
    assert turn.tool_results[0]["name"] == "query"
    assert "Bolt" in str(turn.tool_results[0]["result"])


async def test_a_wrong_answer_fails_naming_the_judge() -> None:
    result = await run_one("wrong_answer", "toy_fail")
    assert not result.passed
    assert [(v.judge, v.reason) for v in result.failures] == [
        ("answer_coverage", "turn 1: the answer lacks 'Bolt'")
    ]


async def test_confirmations_are_answered_as_the_case_expects() -> None:
    approved = await run_one("approved_write", "toy_write")
    rejected = await run_one("rejected_write", "toy_write")
    assert approved.passed and rejected.passed
    [asked] = approved.observation.turns[0].confirmations
    assert (asked["mutation"], asked["decision"]) == ("setPartMaterial", "approve")
    assert approved.observation.turns[0].tool_results[-1]["result"]["status"] == "executed"
    [refused] = rejected.observation.turns[0].confirmations
    assert refused["decision"] == "reject"
    assert rejected.observation.turns[0].tool_results[-1]["result"]["status"] != "executed"


async def test_an_unexpected_confirmation_is_rejected_and_the_write_never_runs() -> None:
    written = dataset("toy_write").case("approved_write")
    turn = written.turns[0].model_copy(
        update={"expect": written.turns[0].expect.model_copy(update={"confirmations": ()})}
    )
    unasked = written.model_copy(update={"turns": (turn,)})
    result = await run_case(Selected("x", unasked), ProviderChoice.scripted(), Environment())
    [asked] = result.observation.turns[0].confirmations
    assert asked["decision"] == "reject"
    assert all(
        r["result"].get("status") != "executed" for r in result.observation.turns[0].tool_results
    )
    assert not result.passed  # the case expected a write it did not get approved


async def test_a_case_without_a_script_fails_with_its_error_and_the_run_goes_on() -> None:
    unscripted = case("unscripted")
    scripted = dataset("toy_pass").case("greeting")
    results = await run_cases(
        [Selected("d", unscripted), Selected("d", scripted)],
        ProviderChoice.scripted(),
        Environment(),
    )
    assert [r.passed for r in results] == [False, True]
    assert results[0].error == "ValueError: case 'unscripted': turn 0 has no script to play"
    assert results[0].verdicts == ()


async def test_a_case_without_fixture_needs_a_registry_or_a_forced_fixture() -> None:
    greeting = dataset("toy_pass").case("greeting").model_copy(update={"fixture": None})
    missing = await run_case(Selected("d", greeting), ProviderChoice.scripted(), Environment())
    assert missing.error is not None and "names no fixture" in missing.error
    forced = await run_case(
        Selected("d", greeting), ProviderChoice.scripted(), Environment(fixture="toy")
    )
    assert forced.passed


async def test_turns_run_as_the_eval_actor_in_the_given_store() -> None:
    stores: list[MemoryStore] = []

    def store() -> MemoryStore:
        stores.append(MemoryStore())
        return stores[-1]

    result = await run_one("list_parts", environment=Environment(store=store))
    assert result.passed
    [used] = stores
    conversation_id = result.observation.turns[0].events[0]["conversation_id"]
    turn = await used.get_turn(result.observation.turns[0].report.turn_id)
    assert str(turn.conversation_id) == conversation_id
    assert [str(c.id) for c in await used.list_conversations(Owner.user(EVAL_ACTOR_ID))] == [
        conversation_id
    ]


async def test_on_result_sees_each_result_in_order() -> None:
    seen: list[str] = []
    selected = select_cases([dataset("toy_pass")])
    results = await run_cases(
        selected,
        ProviderChoice.scripted(),
        Environment(),
        on_result=lambda r: seen.append(r.case.name),
    )
    assert seen == [r.case.name for r in results] == ["list_parts", "greeting"]


def test_select_cases_filters_by_tier_and_every_tag() -> None:
    toy = dataset("toy_pass")
    both = Dataset(name="more", description="d", cases=(case("a", tier=2, tags=["read", "x"]),))
    assert [s.case.name for s in select_cases([toy, both])] == ["list_parts", "greeting", "a"]
    assert [s.case.name for s in select_cases([toy, both], tier=2)] == ["greeting", "a"]
    assert [s.case.name for s in select_cases([toy, both], tags=["read"])] == ["list_parts", "a"]
    assert [s.case.name for s in select_cases([toy, both], tags=["read", "x"])] == ["a"]
    assert [s.dataset for s in select_cases([toy, both], tags=["x"])] == ["more"]


def test_provider_choices() -> None:
    assert ProviderChoice.named(SCRIPTED).label == SCRIPTED
    shared = ProviderChoice.named("chatomon.providers.testing.ScriptedProvider")
    greeting = dataset("toy_pass").case("greeting")
    assert shared.build(greeting) is shared.build(greeting)
    fresh = ProviderChoice.scripted()
    assert fresh.build(greeting) is not fresh.build(greeting)
    mine = ScriptedProvider()
    assert ProviderChoice.of(mine).label == "ScriptedProvider"
    assert ProviderChoice.of(mine, "mine").build(greeting) is mine


def test_scripted_provider_plays_every_turn_in_order() -> None:
    provider = scripted_provider(dataset("toy_pass").case("list_parts"))
    assert provider.remaining == 2
    with pytest.raises(ValueError, match="turn 0 has no script"):
        scripted_provider(case("bare"))


async def test_a_shared_provider_is_closed_when_the_run_ends() -> None:
    class Closing(ScriptedProvider):
        closed = 0

        async def aclose(self) -> None:
            Closing.closed += 1

    provider = Closing([["hello, ask me about parts or materials."]])
    selected = [Selected("d", dataset("toy_pass").case("greeting"))]
    [result] = await run_cases(selected, ProviderChoice.of(provider), Environment())
    assert result.passed and result.provider == "Closing"
    assert Closing.closed == 1


async def test_service_options_reach_the_service() -> None:
    hide_names = Redaction(keys=("name",))
    result = await run_one(
        "list_parts", environment=Environment(service_options={"redaction": hide_names})
    )
    rows = result.observation.turns[0].tool_results[0]["result"]["data"]
    assert rows and all(row["name"] != "Bolt" for row in rows)


async def test_a_scripted_case_that_leaves_part_of_its_script_unplayed_fails() -> None:
    greeting = dataset("toy_pass").case("greeting")
    turn = greeting.turns[0]
    longer = turn.model_copy(update={"script": (*turn.script, turn.script[0])})
    padded = greeting.model_copy(update={"turns": (longer,)})
    result = await run_case(Selected("d", padded), ProviderChoice.scripted(), Environment())
    assert all(v.passed for v in result.verdicts)  # the judges alone would pass it
    assert not result.passed
    assert result.error == "the script has 1 completion(s) the turns never asked for"
