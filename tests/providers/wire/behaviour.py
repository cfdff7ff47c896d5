"""The behavioural suite every vendor adapter passes against its wire-format server.

A vendor's test module subclasses `ProviderBehaviour` and provides a `vendor` fixture: an
object that builds the provider pointed at the loopback server, encodes neutral scripts
into the vendor's exact stream format, encodes the vendor's error responses, and checks
that a request carried the neutral history in the vendor's native format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import pytest

from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    run_completion,
)
from tests.providers.wire.script import Call, Stall, Step, Text, Usage
from tests.providers.wire.server import RecordedRequest, Reply, WireServer

ErrorKind = Literal["auth", "rate_limit", "context_length", "server", "bad_request"]

SECRET = "sk-test-secret-4f7c0d2b"

CALL_A = ToolCall(id="call_a", name="query", arguments={"manager": "PartManager", "limit": 5})
CALL_B = ToolCall(id="call_b", name="query", arguments={"manager": "MaterialManager"})
HISTORY = [
    Message.system("Answer from tool results only."),
    Message.user("Which parts are heavy?"),
    Message.assistant("Let me look.", [CALL_A, CALL_B]),
    Message.tool(CALL_A, {"data": [{"name": "Gear"}], "total_count": 1}),
    Message.tool(CALL_B, {"data": [{"name": "Cobalt"}], "total_count": 1}),
    Message.assistant("Gear, made of cobalt."),
    Message.user("And the light ones?"),
]
"""A neutral history with every kind of item: system, user, a multi-call tool exchange."""

TOOLS = [
    ToolDefinition(
        name="query",
        description="Query rows of one manager.",
        parameters={
            "type": "object",
            "properties": {
                "manager": {"type": "string", "description": "Manager name."},
                "limit": {"type": "integer"},
            },
            "required": ["manager"],
            "additionalProperties": False,
        },
    ),
    ToolDefinition(name="search_managers", description="Find managers by words."),
]


class Vendor(Protocol):
    """What a vendor's test module supplies to the suite."""

    name: str

    def provider(self, base_url: str, **config: Any) -> BaseLLMProvider:
        """The adapter pointed at `base_url`, with api_key=SECRET where it takes one."""
        ...

    def stream(self, steps: Sequence[Step], *, drop: bool = False) -> Reply:
        """The vendor's streaming response for `steps`, byte for byte."""
        ...

    def error(self, kind: ErrorKind, *, retry_after: int | None = None) -> Reply:
        """The vendor's error response of that kind."""
        ...

    def assert_history(self, request: RecordedRequest) -> None:
        """Assert that the request carried HISTORY and TOOLS in the vendor's native format."""
        ...


async def collect(provider: BaseLLMProvider, **timeouts: float) -> list[Any]:
    """All events of one completion of HISTORY with TOOLS, under the provider contract."""
    return [e async for e in run_completion(provider, HISTORY, TOOLS, **timeouts)]


class ProviderBehaviour:
    """Tests every adapter must pass; subclass it and provide the `vendor` fixture."""

    @pytest.fixture
    def server(self) -> Any:
        with WireServer() as server:
            yield server

    @pytest.fixture
    def provider(self, vendor: Vendor, server: WireServer) -> BaseLLMProvider:
        return vendor.provider(server.url, timeout_seconds=5, stream_timeout_seconds=5)

    async def test_text_streams_in_order_with_usage(self, vendor, server, provider) -> None:
        server.push(vendor.stream([Text("Hel"), Text("lo, "), Text("world."), Usage(21, 4)]))
        events = await collect(provider)
        texts = [e.content for e in events if isinstance(e, TextChunkEvent)]
        assert "".join(texts) == "Hello, world."
        assert len(texts) >= 3, "text is streamed as it arrives, not buffered"
        assert events[-1] == DoneEvent(usage=TokenUsage(input_tokens=21, output_tokens=4))
        assert sum(isinstance(e, DoneEvent) for e in events) == 1

    async def test_parallel_tool_calls_with_fragmented_arguments(
        self, vendor, server, provider
    ) -> None:
        server.push(
            vendor.stream(
                [
                    Call("call_1", "query", {"manager": "PartManager", "limit": 3}, fragments=4),
                    Call("call_2", "search_managers", {"query": "materials"}, fragments=3),
                    Usage(50, 12),
                ]
            )
        )
        events = await collect(provider)
        calls = [e for e in events if isinstance(e, ToolCallEvent)]
        assert [(c.name, dict(c.arguments)) for c in calls] == [
            ("query", {"manager": "PartManager", "limit": 3}),
            ("search_managers", {"query": "materials"}),
        ]
        assert len({c.id for c in calls}) == 2
        assert all(c.id for c in calls)
        assert isinstance(events[-1], DoneEvent)

    async def test_history_and_tools_are_sent_in_the_vendor_format(
        self, vendor, server, provider
    ) -> None:
        server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
        await collect(provider)
        (request,) = server.requests
        vendor.assert_history(request)

    @pytest.mark.parametrize(
        ("kind", "error_type"),
        [
            ("auth", ProviderAuthError),
            ("rate_limit", ProviderRateLimitError),
            ("context_length", ProviderContextLengthError),
            ("server", ProviderUnavailableError),
            ("bad_request", ProviderBadRequestError),
        ],
    )
    async def test_errors_map_to_typed_provider_errors(
        self, vendor, server, provider, kind: ErrorKind, error_type: type[ProviderError]
    ) -> None:
        server.push(vendor.error(kind))
        with pytest.raises(error_type) as caught:
            await collect(provider)
        assert caught.value.public_reason == error_type.public_reason
        assert caught.value.provider == vendor.name
        assert SECRET not in str(caught.value)

    async def test_rate_limit_carries_retry_after(self, vendor, server, provider) -> None:
        server.push(vendor.error("rate_limit", retry_after=17))
        with pytest.raises(ProviderRateLimitError) as caught:
            await collect(provider)
        assert caught.value.retry_after_seconds == 17

    async def test_slow_first_byte_times_out(self, vendor, server) -> None:
        provider = vendor.provider(server.url, timeout_seconds=0.3, stream_timeout_seconds=5)
        server.push(vendor.stream([Stall(1.5), Text("late"), Usage(1, 1)]))
        with pytest.raises(ProviderTimeoutError):
            await collect(provider)

    async def test_stall_between_events_times_out(self, vendor, server) -> None:
        provider = vendor.provider(server.url, timeout_seconds=5, stream_timeout_seconds=0.3)
        server.push(vendor.stream([Text("first"), Stall(1.5), Text("second"), Usage(1, 1)]))
        with pytest.raises(ProviderTimeoutError):
            await collect(provider)

    async def test_dropped_connection_is_unavailable(self, vendor, server, provider) -> None:
        server.push(vendor.stream([Text("partial")], drop=True))
        with pytest.raises((ProviderUnavailableError, ProviderProtocolError)):
            await collect(provider)

    async def test_malformed_tool_arguments_are_a_protocol_error(
        self, vendor, server, provider
    ) -> None:
        server.push(
            vendor.stream([Call("call_1", "query", raw_arguments='{"manager": '), Usage(1, 1)])
        )
        with pytest.raises(ProviderProtocolError):
            await collect(provider)

    async def test_aclose_releases_the_client_and_the_provider_still_works(
        self, vendor, server, provider
    ) -> None:
        for _ in range(2):
            server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
            events = await collect(provider)
            assert isinstance(events[-1], DoneEvent)
            await provider.aclose()
        await provider.aclose()  # closing twice is harmless

    async def test_secrets_never_appear_in_errors_or_repr(self, vendor, server, provider) -> None:
        assert SECRET not in repr(provider)
        server.push(vendor.error("auth"))
        with pytest.raises(ProviderError) as caught:
            await collect(provider)
        assert SECRET not in str(caught.value)
        assert SECRET not in repr(caught.value)
