"""ScriptedProvider and FunctionProvider: what users' own tests rely on."""

from __future__ import annotations

import time

import pytest

from chatomon.errors import ProviderRateLimitError
from chatomon.providers import (
    FunctionProvider,
    Message,
    ScriptedProvider,
    TextChunkEvent,
    ToolDefinition,
)
from chatomon.providers.testing import Completion, ScriptError, tool_call

TOOL = ToolDefinition(name="query", description="Query data.")


async def complete(provider, messages=None, tools=()) -> list[object]:
    return [e async for e in provider.complete(messages or [Message.user("Hi")], list(tools))]


async def test_scripted_completions_play_in_order_and_requests_are_recorded() -> None:
    provider = ScriptedProvider([[tool_call("query", {"m": "Part"})], ["Done."]])
    first = await complete(provider, tools=[TOOL])
    second = await complete(provider, [Message.user("again")])
    assert first[0].name == "query"
    assert first[0].id == "call-1"
    assert second[0] == TextChunkEvent("Done.")
    assert provider.requests[0].tool_names == ["query"]
    assert provider.requests[1].messages == (Message.user("again"),)
    provider.assert_consumed()


async def test_call_ids_are_numbered_per_provider() -> None:
    one = ScriptedProvider([[tool_call("a"), tool_call("b")]])
    two = ScriptedProvider([[tool_call("a"), tool_call("b", id="mine")]])
    assert [e.id for e in (await complete(one))[:2]] == ["call-1", "call-2"]
    assert [e.id for e in (await complete(two))[:2]] == ["call-1", "mine"]


async def test_unexpected_request_fails_loudly() -> None:
    provider = ScriptedProvider([["only one"]])
    await complete(provider)
    with pytest.raises(ScriptError, match="request #2 but only 1"):
        await complete(provider)


def test_unconsumed_script_fails_loudly() -> None:
    with pytest.raises(ScriptError, match="1 scripted completion"), ScriptedProvider([["unused"]]):
        pass


async def test_scripted_errors_are_raised() -> None:
    error = ProviderRateLimitError("slow down", provider="x", retry_after_seconds=3)
    provider = ScriptedProvider([error, Completion(["partial", error])])
    with pytest.raises(ProviderRateLimitError):
        await complete(provider)
    with pytest.raises(ProviderRateLimitError):
        await complete(provider)


async def test_simulated_latency() -> None:
    provider = ScriptedProvider([["a", "b", "c"]], first_event_delay=0.05, chunk_delay=0.02)
    started = time.perf_counter()
    await complete(provider)
    assert time.perf_counter() - started >= 0.09


async def test_function_provider_decides_each_completion() -> None:
    async def decide(messages, tools):
        return [f"{len(messages)} messages, {len(tools)} tools"]

    provider = FunctionProvider(decide)
    events = await complete(provider, tools=[TOOL])
    assert events[0] == TextChunkEvent("1 messages, 1 tools")
    assert len(provider.requests) == 1


async def test_unscriptable_steps_are_refused() -> None:
    with pytest.raises(ScriptError, match="int"):
        await complete(ScriptedProvider([[42]]))
