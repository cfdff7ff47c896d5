import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest

from chatomon.errors import ProviderUnavailableError
from chatomon.planned.budget import RoundBudget, RoundBudgetExhausted
from chatomon.planned.config import get_planned_chat_settings
from chatomon.planned.planner import (
    InvalidPlanError,
    PlanningResult,
    parse_plan_reply,
    plan_request,
)
from chatomon.planned.prompts import MAX_REPLAYED_PLAN_CHARS
from chatomon.providers.base import Message, TokenUsage
from chatomon.providers.testing import Delay, ScriptedProvider

QUESTION = "How many parts use steel?"
PLAN: dict[str, Any] = {
    "intent": "read",
    "tasks": [
        {
            "id": "t1",
            "question": "Which parts use steel?",
            "manager": "PartManager",
            "needs": [{"kind": "query", "description": "parts made of steel"}],
        }
    ],
}
PLAN_TEXT = json.dumps(PLAN)
BAD_DEPENDENCY = json.dumps(
    {
        "intent": "read",
        "tasks": [{**PLAN["tasks"][0], "depends_on": ["t9"]}],
    }
)
SETTINGS = get_planned_chat_settings(
    {"provider": "chatomon.providers.testing.ScriptedProvider", "planned": {"enabled": True}}
)


def roles(
    planner: ScriptedProvider, fallback: ScriptedProvider | None = None
) -> dict[str, ScriptedProvider]:
    return {"planner": planner, "fallback_executor": fallback or ScriptedProvider()}


async def plan(
    providers: Mapping[str, Any], budget: RoundBudget | None = None, **options: Any
) -> PlanningResult:
    return await plan_request(
        QUESTION,
        [Message.user("Hello"), Message.assistant("Hi.")],
        SETTINGS,
        budget or RoundBudget(24, 8),
        ["PartManager (manufacturing); aliases: part"],
        providers=providers,
        manager_lines=["PartManager: Designed or purchased components."],
        **options,
    )


async def test_a_valid_first_plan_takes_one_request():
    planner = ScriptedProvider([[PLAN_TEXT, TokenUsage(input_tokens=300, output_tokens=40)]])
    budget = RoundBudget(24, 8)

    result = await plan(roles(planner), budget)

    assert [task.id for task in result.plan.tasks] == ["t1"]
    assert result.plan.tasks[0].manager_hint == "PartManager"
    assert result.attempts == 1
    assert result.usage == TokenUsage(input_tokens=300, output_tokens=40)
    assert result.prompt_chars == sum(len(m.content) for m in planner.requests[0].messages)
    assert (budget.used, budget.roles_used) == (1, ("planner",))
    request = planner.requests[0]
    assert request.tools == ()
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user"]
    assert request.messages[-1].content == QUESTION
    assert "PartManager: Designed or purchased components." in request.messages[0].content


async def test_a_plan_in_a_json_code_fence_is_accepted():
    planner = ScriptedProvider([f"```json\n{PLAN_TEXT}\n```"])

    result = await plan(roles(planner))

    assert result.plan.intent == "read"


async def test_a_mutation_plan_comes_back_without_tasks():
    planner = ScriptedProvider(['{"intent": "mutation"}'])

    result = await plan(roles(planner))

    assert result.plan.intent == "mutation"
    assert result.plan.tasks == ()


async def test_an_invalid_plan_gets_one_correction_with_the_private_detail():
    planner = ScriptedProvider(
        [
            [BAD_DEPENDENCY, TokenUsage(input_tokens=300)],
            [PLAN_TEXT, TokenUsage(input_tokens=400)],
        ]
    )
    fallback = ScriptedProvider()
    budget = RoundBudget(24, 8)

    result = await plan(roles(planner, fallback), budget)

    assert result.attempts == 2
    assert result.usage == TokenUsage(input_tokens=700)
    assert (budget.used, budget.roles_used) == (2, ("planner",))
    first, second = (request.messages for request in planner.requests)
    assert second[: len(first)] == first
    assert second[-2] == Message.assistant(BAD_DEPENDENCY)
    assert "'t9'" in second[-1].content
    assert second[-1].role == "user"
    assert result.prompt_chars == sum(
        len(m.content) for request in planner.requests for m in request.messages
    )
    assert fallback.requests == []


async def test_prose_is_corrected_as_well():
    planner = ScriptedProvider(["Sure! First I will look at parts.", PLAN_TEXT])

    result = await plan(roles(planner))

    assert result.attempts == 2
    assert "not JSON" in planner.requests[1].messages[-1].content


async def test_a_long_refused_reply_is_replayed_cut():
    planner = ScriptedProvider(["x" * 20_000, PLAN_TEXT])

    await plan(roles(planner))

    replayed = planner.requests[1].messages[-2]
    assert replayed.role == "assistant"
    assert len(replayed.content) == MAX_REPLAYED_PLAN_CHARS


async def test_an_empty_reply_is_corrected_without_replaying_it():
    planner = ScriptedProvider([[" "], PLAN_TEXT])

    result = await plan(roles(planner))

    assert result.attempts == 2
    second = planner.requests[1].messages
    assert second[-2].role == "user"
    assert second[-2].content == QUESTION
    assert "held no plan" in second[-1].content


async def test_a_second_invalid_plan_goes_to_the_fallback_once_afresh():
    planner = ScriptedProvider([BAD_DEPENDENCY, BAD_DEPENDENCY])
    fallback = ScriptedProvider([[PLAN_TEXT, TokenUsage(output_tokens=7)]])
    budget = RoundBudget(24, 8)

    result = await plan(roles(planner, fallback), budget)

    assert result.attempts == 3
    assert result.usage == TokenUsage(output_tokens=7)
    assert (budget.used, budget.roles_used) == (3, ("planner", "fallback_executor"))
    # The fallback gets the original request, not the failed attempts.
    assert fallback.requests[0].messages == planner.requests[0].messages
    fallback.assert_consumed()


async def test_three_invalid_plans_are_an_invalid_plan_error():
    planner = ScriptedProvider(
        [[BAD_DEPENDENCY, TokenUsage(input_tokens=1)], [BAD_DEPENDENCY, TokenUsage(input_tokens=2)]]
    )
    fallback = ScriptedProvider([["no plan today", TokenUsage(input_tokens=4)]])
    budget = RoundBudget(24, 8)

    with pytest.raises(InvalidPlanError, match="not JSON") as caught:
        await plan(roles(planner, fallback), budget)

    error = caught.value
    assert error.public_reason == "invalid_plan"
    assert isinstance(error, ValueError)
    assert (error.attempts, error.usage) == (3, TokenUsage(input_tokens=7))
    assert error.prompt_chars > 0
    assert budget.used == 3
    planner.assert_consumed()
    fallback.assert_consumed()


async def test_one_provider_can_serve_both_roles():
    shared = ScriptedProvider([BAD_DEPENDENCY, BAD_DEPENDENCY, PLAN_TEXT])

    result = await plan({"planner": shared, "fallback_executor": shared})

    assert result.attempts == 3
    shared.assert_consumed()


async def test_a_provider_failure_propagates_without_a_fallback():
    planner = ScriptedProvider([[ProviderUnavailableError("down", provider="scripted")]])
    fallback = ScriptedProvider([PLAN_TEXT])

    with pytest.raises(ProviderUnavailableError):
        await plan(roles(planner, fallback))

    assert fallback.requests == []


async def test_a_provider_failure_in_the_correction_propagates():
    planner = ScriptedProvider([BAD_DEPENDENCY, [ProviderUnavailableError("down", provider="s")]])
    fallback = ScriptedProvider([PLAN_TEXT])

    with pytest.raises(ProviderUnavailableError):
        await plan(roles(planner, fallback))

    assert fallback.requests == []


async def test_each_request_is_capped_by_the_timeout():
    planner = ScriptedProvider([["{", Delay(0.5), "}"]])

    with pytest.raises(TimeoutError):
        await plan(roles(planner), timeout_seconds=0.05)


async def test_without_a_timeout_the_settings_request_timeout_caps_each_request():
    planner = ScriptedProvider([["{", Delay(0.5), "}"]])
    settings = dataclasses.replace(SETTINGS, request_timeout_seconds=0.05)

    with pytest.raises(TimeoutError):
        await plan_request(QUESTION, [], settings, RoundBudget(24, 8), [], providers=roles(planner))


async def test_an_exhausted_budget_stops_planning_before_the_correction():
    planner = ScriptedProvider([BAD_DEPENDENCY, PLAN_TEXT])
    budget = RoundBudget(1, 8)

    with pytest.raises(RoundBudgetExhausted):
        await plan(roles(planner), budget)

    assert len(planner.requests) == 1


async def test_an_exhausted_budget_stops_planning_before_the_fallback():
    planner = ScriptedProvider([BAD_DEPENDENCY, BAD_DEPENDENCY])
    fallback = ScriptedProvider([PLAN_TEXT])

    with pytest.raises(RoundBudgetExhausted):
        await plan(roles(planner, fallback), RoundBudget(2, 8))

    assert fallback.requests == []


async def test_an_exhausted_budget_sends_no_request_at_all():
    planner = ScriptedProvider([PLAN_TEXT])
    budget = RoundBudget(1, 8)
    budget.consume_global("planner")

    with pytest.raises(RoundBudgetExhausted):
        await plan(roles(planner), budget)

    assert planner.requests == []


@pytest.mark.parametrize(
    "reply",
    [PLAN_TEXT, f"```json\n{PLAN_TEXT}\n```", f"```\n{PLAN_TEXT}\n```", f"\n  {PLAN_TEXT}  \n"],
    ids=["bare", "json fence", "plain fence", "blank lines"],
)
def test_parse_plan_reply_reads_the_plan(reply):
    parsed, detail = parse_plan_reply(reply)

    assert parsed is not None
    assert detail == ""


def test_parse_plan_reply_names_what_the_validator_refused():
    parsed, detail = parse_plan_reply(BAD_DEPENDENCY)

    assert parsed is None
    assert "depends_on" in detail
    assert "'t9'" in detail
