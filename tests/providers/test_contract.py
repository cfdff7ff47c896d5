"""run_completion enforces the provider contract for built-in and custom providers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from chatomon.errors import ProviderProtocolError, ProviderTimeoutError
from chatomon.providers import (
    DoneEvent,
    Message,
    ScriptedProvider,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    run_completion,
)
from chatomon.providers.testing import Completion, Delay, tool_call


async def events_of(provider, **timeouts) -> list[object]:
    return [e async for e in run_completion(provider, [Message.user("Hi")], [], **timeouts)]


async def test_a_normal_completion_passes_unchanged() -> None:
    provider = ScriptedProvider(
        [["Hel", "lo", tool_call("query", {"a": 1}), TokenUsage(input_tokens=7)]]
    )
    events = await events_of(provider)
    assert events == [
        TextChunkEvent("Hel"),
        TextChunkEvent("lo"),
        ToolCallEvent(id="call-1", name="query", arguments={"a": 1}),
        DoneEvent(usage=TokenUsage(input_tokens=7)),
    ]


async def test_a_stream_without_done_is_a_protocol_error() -> None:
    provider = ScriptedProvider([Completion(["partial"], done=False)])
    with pytest.raises(ProviderProtocolError, match="without a done event") as caught:
        await events_of(provider)
    assert caught.value.public_reason == "provider_protocol"
    assert caught.value.provider == "scripted"


async def test_events_after_done_are_a_protocol_error() -> None:
    class Chatty:
        name = "chatty"

        async def complete(self, messages, tools) -> AsyncIterator[object]:
            yield DoneEvent()
            yield TextChunkEvent("more")

    with pytest.raises(ProviderProtocolError, match="after its done event"):
        await events_of(Chatty())


@pytest.mark.parametrize(
    "bad",
    [ToolCallEvent(id="1", name="t", arguments="{}"), {"type": "text_chunk"}],
)
async def test_malformed_events_are_protocol_errors(bad: object) -> None:
    class Broken:
        async def complete(self, messages, tools) -> AsyncIterator[object]:
            yield bad
            yield DoneEvent()

    with pytest.raises(ProviderProtocolError):
        await events_of(Broken())


async def test_first_event_timeout() -> None:
    provider = ScriptedProvider([["late"]], first_event_delay=5)
    with pytest.raises(ProviderTimeoutError, match=r"no first event within 0\.05 s") as caught:
        await events_of(provider, timeout_seconds=0.05)
    assert caught.value.public_reason == "provider_timeout"
    assert isinstance(caught.value, TimeoutError)


async def test_stall_between_events_times_out() -> None:
    provider = ScriptedProvider([["first", Delay(5), "second"]])
    with pytest.raises(ProviderTimeoutError, match=r"no next event within 0\.05 s"):
        await events_of(provider, timeout_seconds=1, stream_timeout_seconds=0.05)


async def test_the_provider_stream_is_closed_when_the_caller_stops() -> None:
    closed = asyncio.Event()

    class Endless:
        async def complete(self, messages, tools) -> AsyncIterator[object]:
            try:
                while True:
                    yield TextChunkEvent("x")
            finally:
                closed.set()

    stream = run_completion(Endless(), [], [])
    await anext(stream)
    await stream.aclose()
    assert closed.is_set()


async def test_a_timeout_error_raised_by_the_provider_keeps_its_details() -> None:
    error = ProviderTimeoutError("gateway timed out", provider="vendor", status_code=504)
    provider = ScriptedProvider([[error]])
    with pytest.raises(ProviderTimeoutError) as caught:
        await events_of(provider, timeout_seconds=5)
    assert caught.value is error


async def test_a_provider_slow_to_close_after_done_is_not_a_timeout() -> None:
    class Lingering:
        name = "lingering"

        async def complete(self, messages, tools) -> AsyncIterator[object]:
            yield TextChunkEvent("hi")
            yield DoneEvent()
            await asyncio.sleep(5)

    events = await events_of(Lingering(), stream_timeout_seconds=0.1)
    assert events == [TextChunkEvent("hi"), DoneEvent()]
