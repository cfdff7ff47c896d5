import json
from collections.abc import AsyncIterator

import pytest

from chatomon.errors import ConfigurationError, ProviderProtocolError, ProviderUnavailableError
from chatomon.planned.provider_calls import (
    InvalidProviderRoundError,
    ProviderRoundResult,
    complete_provider_round,
    prompt_chars,
    role_provider,
    stream_provider_round,
)
from chatomon.providers.base import Message, TokenUsage, ToolCallEvent, ToolDefinition
from chatomon.providers.testing import Completion, Delay, ScriptedProvider, tool_call

QUESTION = [Message.system("Answer briefly."), Message.user("Which parts use steel?")]
QUERY = ToolDefinition("query", "Read rows.", {"type": "object", "properties": {}})


async def drain(stream: AsyncIterator[object], seen: list[object]) -> None:
    """Collect a stream's items into `seen`, keeping those before an error."""
    async for item in stream:
        seen.append(item)  # noqa: PERF401 - the items before an error are the point


async def test_a_text_round_gives_its_text_usage_and_prompt_size():
    provider = ScriptedProvider(
        [["Bolt", " uses steel.", TokenUsage(input_tokens=9, output_tokens=3)]]
    )

    result = await complete_provider_round(provider, QUESTION, [], 5.0)

    assert result.text == "Bolt uses steel."
    assert result.tool_call is None
    assert result.usage == TokenUsage(input_tokens=9, output_tokens=3)
    assert result.prompt_chars == len("Answer briefly.") + len("Which parts use steel?")
    assert result.duration_ms >= 0
    provider.assert_consumed()


async def test_a_tool_call_round_gives_the_one_call_and_sends_the_tools():
    provider = ScriptedProvider([[tool_call("query", {"manager": "PartManager"})]])

    result = await complete_provider_round(provider, QUESTION, [QUERY], None)

    assert result.text is None
    assert result.tool_call == ToolCallEvent("call-1", "query", {"manager": "PartManager"})
    assert provider.requests[0].tool_names == ["query"]


async def test_whitespace_before_a_tool_call_is_no_text():
    provider = ScriptedProvider([["\n", tool_call("query", {})]])

    result = await complete_provider_round(provider, QUESTION, [QUERY], None)

    assert result.text is None
    assert result.tool_call is not None


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (["Let me look.", tool_call("query", {})], "wrote text and requested a tool call"),
        ([tool_call("query", {}), tool_call("aggregate", {})], "requested 2 tool calls"),
        ([], "wrote no text and requested no tool call"),
        (["  ", "\n"], "wrote no text and requested no tool call"),
    ],
    ids=["text and call", "two calls", "nothing", "blanks only"],
)
async def test_a_round_that_is_not_exactly_text_or_one_call_is_refused(steps, message):
    provider = ScriptedProvider([steps])

    with pytest.raises(InvalidProviderRoundError, match=message) as caught:
        await complete_provider_round(provider, QUESTION, [QUERY], None)

    assert caught.value.public_reason == "provider_failed"
    assert isinstance(caught.value, ValueError)


async def test_the_cap_bounds_the_whole_request_with_a_plain_timeout_error():
    # Each event arrives well within the provider's own stream timeout; the cap still ends it.
    provider = ScriptedProvider([["Bolt", Delay(0.2), " uses", Delay(0.2), " steel."]])

    with pytest.raises(TimeoutError, match="did not finish a planned round") as caught:
        await complete_provider_round(provider, QUESTION, [], 0.05)

    assert type(caught.value) is TimeoutError


async def test_provider_failures_propagate_unchanged():
    provider = ScriptedProvider([[ProviderUnavailableError("down", provider="scripted")]])

    with pytest.raises(ProviderUnavailableError):
        await complete_provider_round(provider, QUESTION, [], None)


async def test_a_stream_without_its_done_event_breaks_the_contract():
    provider = ScriptedProvider([Completion(["Bolt."], done=False)])

    with pytest.raises(ProviderProtocolError, match="without a done event"):
        await complete_provider_round(provider, QUESTION, [], None)


def test_prompt_chars_counts_texts_replayed_calls_and_tool_definitions():
    call = ToolCallEvent("c1", "query", {"manager": "PartManager"})
    messages = [
        Message.system("Be brief."),
        Message.assistant("", [call]),
        Message.tool(call, {"data": []}),
    ]
    tool_json = json.dumps(
        {"name": "query", "description": "Read rows.", "input_schema": dict(QUERY.input_schema)},
        separators=(",", ":"),
    )
    call_json = json.dumps(call.to_dict(), separators=(",", ":"))

    expected = len("Be brief.") + len(call_json) + len('{"data": []}') + len(tool_json)
    assert prompt_chars(messages, [QUERY]) == expected


async def test_a_streamed_round_yields_fragments_as_they_arrive_then_the_result():
    provider = ScriptedProvider([["Bolt", "", " uses steel.", TokenUsage(output_tokens=4)]])

    items = [item async for item in stream_provider_round(provider, QUESTION, [], None)]

    assert items[:2] == ["Bolt", " uses steel."]
    result = items[2]
    assert isinstance(result, ProviderRoundResult)
    assert result.text == "Bolt uses steel."
    assert result.usage == TokenUsage(output_tokens=4)
    assert len(items) == 3


async def test_a_streamed_round_refuses_a_tool_call_after_its_text():
    provider = ScriptedProvider([["Bolt", tool_call("query", {})]])
    seen: list[object] = []

    with pytest.raises(InvalidProviderRoundError, match="tool call in a text-only round"):
        await drain(stream_provider_round(provider, QUESTION, [], None), seen)

    assert seen == ["Bolt"]


async def test_a_streamed_round_without_text_is_refused():
    provider = ScriptedProvider([[" "]])

    with pytest.raises(InvalidProviderRoundError, match="wrote no text"):
        await drain(stream_provider_round(provider, QUESTION, [], None), [])


async def test_a_streamed_round_is_capped_as_a_whole():
    provider = ScriptedProvider([["Bolt", Delay(0.2), " uses", Delay(0.2), " steel."]])
    seen: list[object] = []

    with pytest.raises(TimeoutError):
        await drain(stream_provider_round(provider, QUESTION, [], 0.05), seen)

    assert seen == ["Bolt"]


def test_role_provider_names_a_role_without_a_provider():
    provider = ScriptedProvider()
    assert role_provider({"planner": provider}, "planner") is provider

    with pytest.raises(ConfigurationError, match="'synthesizer'") as caught:
        role_provider({"planner": provider}, "synthesizer")

    assert caught.value.allowed == ("planner",)
