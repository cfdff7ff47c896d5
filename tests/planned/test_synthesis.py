import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from chatomon.errors import ProviderUnavailableError
from chatomon.planned.budget import RoundBudget, RoundBudgetExhausted
from chatomon.planned.config import get_planned_chat_settings
from chatomon.planned.evidence import EvidenceRecord
from chatomon.planned.synthesis import (
    SynthesisChunk,
    SynthesisFailedError,
    SynthesisResult,
    iter_synthesis,
    synthesize_answer,
)
from chatomon.providers.base import TokenUsage
from chatomon.providers.testing import Delay, ScriptedProvider, tool_call
from chatomon.schemas import PlannedCoverage

QUESTION = "Which parts use steel?"
SETTINGS = get_planned_chat_settings(
    {"provider": "chatomon.providers.testing.ScriptedProvider", "planned": {"enabled": True}}
)
COMPLETE = PlannedCoverage(status="complete", resolved=1, total=1)
ROWS = {"data": [{"id": 1, "name": "Bolt"}], "total_count": 1, "has_more": False}
SCHEMA = EvidenceRecord("e1", "t1", "schema", {"name": "PartManager", "secret_schema": True})
QUERY = EvidenceRecord("e2", "t1", "query", ROWS, {"tool": "query"}, '{"name":"query"}')
COUNT = EvidenceRecord("e3", "t1", "calculation", {"operation": "count", "value": "1"})
PATH = EvidenceRecord("e4", "t2", "path", {"relations": ["material"]})
EVIDENCE = [SCHEMA, QUERY, COUNT, QUERY, PATH]


def roles(
    synthesizer: ScriptedProvider, fallback: ScriptedProvider | None = None
) -> dict[str, Any]:
    return {"synthesizer": synthesizer, "fallback_executor": fallback or ScriptedProvider()}


async def collect(
    providers: Mapping[str, Any],
    budget: RoundBudget | None = None,
    evidence: Sequence[EvidenceRecord] = EVIDENCE,
    seen: list[Any] | None = None,
    timeout_seconds: float | None = 5.0,
) -> list[Any]:
    """Every item iter_synthesis yields (into `seen` as well, to keep them past an error)."""
    items = seen if seen is not None else []
    async for item in iter_synthesis(
        QUESTION,
        evidence,
        COMPLETE,
        SETTINGS,
        budget or RoundBudget(24, 8),
        providers=providers,
        timeout_seconds=timeout_seconds,
    ):
        items.append(item)  # the items before an error count too
    return items


async def test_the_answer_streams_as_written_then_comes_whole():
    synthesizer = ScriptedProvider([["Bolt ", "uses steel.", TokenUsage(input_tokens=90)]])
    budget = RoundBudget(24, 8)

    items = await collect(roles(synthesizer), budget)

    assert items[:2] == [SynthesisChunk("Bolt "), SynthesisChunk("uses steel.")]
    result = items[2]
    assert isinstance(result, SynthesisResult)
    assert len(items) == 3
    assert result.text == "Bolt uses steel."
    assert result.role == "synthesizer"
    assert result.usage == TokenUsage(input_tokens=90)
    assert result.prompt_chars == sum(len(m.content) for m in synthesizer.requests[0].messages)
    assert (budget.used, budget.roles_used) == (1, ("synthesizer",))


async def test_only_eligible_evidence_is_sent_each_record_once():
    synthesizer = ScriptedProvider(["Bolt."])

    items = await collect(roles(synthesizer))

    assert items[-1].evidence_ids == ("e2", "e3", "e4")
    request = synthesizer.requests[0]
    assert request.tools == ()
    system = request.messages[0].content
    sent = {"id": "e2", "kind": "query", "data": ROWS}
    assert json.dumps(sent, separators=(",", ":")) in system
    assert system.count('"id":"e2"') == 1
    assert "secret_schema" not in system
    assert "call_identity" not in system
    assert "provenance" not in system
    assert request.messages[-1].content == QUESTION


async def test_without_eligible_evidence_nothing_is_asked():
    synthesizer = ScriptedProvider()
    budget = RoundBudget(24, 8)

    with pytest.raises(SynthesisFailedError, match="no eligible evidence") as caught:
        await collect(roles(synthesizer), budget, evidence=[SCHEMA])

    assert caught.value.public_reason == "synthesis_failed"
    assert synthesizer.requests == []
    assert budget.used == 0


async def test_a_failure_before_any_text_falls_back_without_a_reset():
    synthesizer = ScriptedProvider([[ProviderUnavailableError("down", provider="s")]])
    fallback = ScriptedProvider([["Bolt", " uses steel.", TokenUsage(output_tokens=5)]])
    budget = RoundBudget(24, 8)

    items = await collect(roles(synthesizer, fallback), budget)

    assert items[:2] == [SynthesisChunk("Bolt"), SynthesisChunk(" uses steel.")]
    result = items[2]
    assert (result.role, result.text) == ("fallback_executor", "Bolt uses steel.")
    assert result.usage == TokenUsage(output_tokens=5)
    assert result.evidence_ids == ("e2", "e3", "e4")
    assert fallback.requests[0].messages == synthesizer.requests[0].messages
    assert result.prompt_chars == 2 * sum(len(m.content) for m in fallback.requests[0].messages)
    assert (budget.used, budget.roles_used) == (2, ("synthesizer", "fallback_executor"))


async def test_a_failure_after_shown_text_resets_on_the_fallbacks_first_chunk():
    synthesizer = ScriptedProvider([["Bolt uses", ProviderUnavailableError("lost", provider="s")]])
    fallback = ScriptedProvider([["Bolt", " uses steel."]])

    items = await collect(roles(synthesizer, fallback))

    assert items[:3] == [
        SynthesisChunk("Bolt uses"),
        SynthesisChunk("Bolt", reset=True),
        SynthesisChunk(" uses steel."),
    ]
    assert items[3].text == "Bolt uses steel."


@pytest.mark.parametrize(
    "steps",
    [[" "], [tool_call("query", {"manager": "PartManager"})], ["Bolt", Delay(1.0), " uses"]],
    ids=["no text", "a tool call", "too slow"],
)
async def test_an_unusable_synthesis_falls_back(steps):
    synthesizer = ScriptedProvider([steps])
    fallback = ScriptedProvider(["Bolt uses steel."])

    items = await collect(roles(synthesizer, fallback), timeout_seconds=0.1)

    assert items[-1].role == "fallback_executor"
    assert items[-1].text == "Bolt uses steel."


async def test_when_the_fallback_fails_too_the_synthesis_failed_once():
    synthesizer = ScriptedProvider([["Bolt", ProviderUnavailableError("lost", provider="s")]])
    fallback = ScriptedProvider([["Bolt uses", ProviderUnavailableError("lost", provider="f")]])
    seen: list[Any] = []
    budget = RoundBudget(24, 8)

    with pytest.raises(SynthesisFailedError) as caught:
        await collect(roles(synthesizer, fallback), budget, seen=seen)

    assert seen == [SynthesisChunk("Bolt"), SynthesisChunk("Bolt uses", reset=True)]
    assert isinstance(caught.value.__cause__, ProviderUnavailableError)
    assert caught.value.prompt_chars > 0
    assert (len(synthesizer.requests), len(fallback.requests), budget.used) == (1, 1, 2)


async def test_an_exhausted_budget_before_the_fallback_propagates():
    synthesizer = ScriptedProvider([[ProviderUnavailableError("down", provider="s")]])
    fallback = ScriptedProvider(["Bolt uses steel."])

    with pytest.raises(RoundBudgetExhausted):
        await collect(roles(synthesizer, fallback), RoundBudget(1, 8))

    assert fallback.requests == []


async def test_an_exhausted_budget_sends_no_synthesis():
    synthesizer = ScriptedProvider(["Bolt."])
    budget = RoundBudget(1, 8)
    budget.consume_global("planner")

    with pytest.raises(RoundBudgetExhausted):
        await collect(roles(synthesizer), budget)

    assert synthesizer.requests == []


async def test_any_exception_of_the_writers_provider_falls_back_and_is_logged(caplog):
    synthesizer = ScriptedProvider([[RuntimeError("connection reset by a custom client")]])
    fallback = ScriptedProvider(["Bolt uses steel."])

    with caplog.at_level(logging.WARNING, logger="chatomon.planned.synthesis"):
        items = await collect(roles(synthesizer, fallback))

    assert items[-1].role == "fallback_executor"
    (record,) = caplog.records
    assert record.getMessage() == "planned synthesis by the synthesizer failed: RuntimeError"
    assert record.exc_info is not None


async def test_synthesize_answer_returns_the_result():
    synthesizer = ScriptedProvider([["Bolt ", "uses steel."]])

    result = await synthesize_answer(
        QUESTION,
        EVIDENCE,
        COMPLETE,
        SETTINGS,
        RoundBudget(24, 8),
        providers=roles(synthesizer),
        timeout_seconds=None,
    )

    assert result.text == "Bolt uses steel."
    assert result.evidence_ids == ("e2", "e3", "e4")


async def test_synthesize_answer_raises_when_both_writers_fail():
    synthesizer = ScriptedProvider([[" "]])
    fallback = ScriptedProvider([[" "]])

    with pytest.raises(SynthesisFailedError):
        await synthesize_answer(
            QUESTION,
            EVIDENCE,
            COMPLETE,
            SETTINGS,
            RoundBudget(24, 8),
            providers=roles(synthesizer, fallback),
            timeout_seconds=None,
        )
