"""The Anthropic adapter against a loopback server speaking the Messages API wire format."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest

from chatomon import Atom, ConfigurationError
from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderDependencyError,
    ProviderError,
    ProviderRateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)
from chatomon.providers import (
    DoneEvent,
    Message,
    ProviderNucleus,
    TextChunkEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    build_provider,
    run_completion,
)
from chatomon.providers.anthropic import AnthropicDependencyImportError, AnthropicProvider
from tests.providers.wire.anthropic_wire import (
    STREAM_HEADERS,
    AnthropicVendor,
    error_body,
    message_start,
    sse,
)
from tests.providers.wire.behaviour import SECRET, TOOLS, ProviderBehaviour
from tests.providers.wire.script import Call, Stall, Text, Usage
from tests.providers.wire.server import Reply, WireServer


class TestAnthropicBehaviour(ProviderBehaviour):
    """The shared behavioural suite, unchanged."""

    @pytest.fixture
    def vendor(self) -> AnthropicVendor:
        return AnthropicVendor()


@pytest.fixture
def vendor() -> AnthropicVendor:
    return AnthropicVendor()


@pytest.fixture
def server() -> Any:
    with WireServer() as server:
        yield server


@pytest.fixture
def provider(vendor: AnthropicVendor, server: WireServer) -> AnthropicProvider:
    return vendor.provider(server.url, timeout_seconds=5, stream_timeout_seconds=5)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No Anthropic credential anywhere: environment cleared, an empty home directory."""
    for variable in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
        "ANTHROPIC_IDENTITY_TOKEN",
        "ANTHROPIC_IDENTITY_TOKEN_FILE",
        "ANTHROPIC_FEDERATION_RULE_ID",
        "ANTHROPIC_ORGANIZATION_ID",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


async def events_of(provider, messages, tools=()) -> list[Any]:
    return [e async for e in run_completion(provider, messages, list(tools))]


# --- the request ------------------------------------------------------------------------


async def test_simple_request_body(vendor, server, provider) -> None:
    server.push(vendor.stream([Text("Hi there."), Usage(9, 3)]))
    await events_of(provider, [Message.system("Be brief."), Message.user("Hi")])
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.json() == {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 1024,
        "stream": True,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["x-stainless-read-timeout"] == "5.0", "timeout_seconds reaches the SDK"
    assert request.headers["x-stainless-retry-count"] == "0"


async def test_tools_temperature_and_several_system_messages(vendor, server) -> None:
    provider = vendor.provider(server.url, model="claude-sonnet-4-5", max_tokens=77, temperature=0)
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    messages = [Message.system("One."), Message.user("Hi"), Message.system("Two.")]
    await events_of(provider, messages, TOOLS)
    body = server.requests[0].json()
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("claude-sonnet-4-5", 77, 0)
    assert body["system"] == "One.\n\nTwo."
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert body["tools"][1] == {
        "name": "search_managers",
        "description": "Find managers by words.",
        "input_schema": {"type": "object", "properties": {}},
    }


async def test_multi_round_tool_history_round_trip(vendor, server, provider) -> None:
    server.push(
        vendor.stream(
            [
                Text("Checking."),
                Call("toolu_01A", "query", {"manager": "PartManager"}, fragments=3),
                Call("toolu_01B", "search_managers", {}),
                Usage(40, 20),
            ]
        ),
        vendor.stream([Text("Two parts."), Usage(80, 4)]),
        vendor.stream([Text("Done."), Usage(90, 2)]),
    )
    history = [Message.user("Parts?")]
    first = await events_of(provider, history, TOOLS)
    calls = [ToolCall(e.id, e.name, e.arguments) for e in first if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, dict(c.arguments)) for c in calls] == [
        ("toolu_01A", "query", {"manager": "PartManager"}),
        ("toolu_01B", "search_managers", {}),
    ]
    assert first[-1] == DoneEvent(usage=TokenUsage(input_tokens=40, output_tokens=20))
    history += [
        Message.assistant("Checking.", calls),
        Message.tool(calls[0], {"data": ["Gear", "Axle"]}),
        Message.tool(calls[1], {"managers": []}),
    ]
    second = await events_of(provider, history, TOOLS)
    assert "".join(e.content for e in second if isinstance(e, TextChunkEvent)) == "Two parts."
    # A user message right after tool results joins their user message (roles alternate).
    history += [Message.user("Thanks")]
    await events_of(provider, history, TOOLS)
    second_body, third_body = (r.json() for r in server.requests[1:])
    assert second_body["messages"] == [
        {"role": "user", "content": "Parts?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_01A",
                    "name": "query",
                    "input": {"manager": "PartManager"},
                },
                {"type": "tool_use", "id": "toolu_01B", "name": "search_managers", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01A",
                    "content": '{"data": ["Gear", "Axle"]}',
                },
                {"type": "tool_result", "tool_use_id": "toolu_01B", "content": '{"managers": []}'},
            ],
        },
    ]
    assert third_body["messages"][2]["content"][-1] == {"type": "text", "text": "Thanks"}
    assert len(third_body["messages"]) == 3


async def test_assistant_turn_with_only_tool_calls_has_no_empty_text(vendor, server, provider):
    call = ToolCall("toolu_9", "query", {"manager": "X"})
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    await events_of(
        provider,
        [Message.user("Q"), Message.assistant("", [call]), Message.tool(call, "[]")],
    )
    assistant = server.requests[0].json()["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_9", "name": "query", "input": {"manager": "X"}}
        ],
    }


# --- the stream ---------------------------------------------------------------------------


async def test_usage_counts_cached_prompt_tokens_and_takes_cumulative_output(server, provider):
    body = [
        sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-3-5-haiku-20241022",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 10,
                        "cache_creation_input_tokens": 5,
                        "cache_read_input_tokens": 100,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "A"},
            },
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 6},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    server.push(Reply(headers=dict(STREAM_HEADERS), body=body))
    events = await events_of(provider, [Message.user("Hi")])
    assert events == [
        TextChunkEvent("A"),
        DoneEvent(usage=TokenUsage(input_tokens=115, output_tokens=6)),
    ]


@pytest.mark.parametrize(
    ("error_type", "expected"),
    [
        ("overloaded_error", ProviderUnavailableError),
        ("api_error", ProviderUnavailableError),
        ("rate_limit_error", ProviderRateLimitError),
        ("invalid_request_error", ProviderBadRequestError),
    ],
)
async def test_error_events_inside_the_stream(vendor, server, provider, error_type, expected):
    server.push(vendor.stream_error(error_type, "secret user text", after=[Text("Hal")]))
    seen: list[Any] = []

    async def consume() -> None:
        async for event in run_completion(provider, [Message.user("Hi")], []):
            seen.append(event)  # noqa: PERF401 - the events before the error are checked

    with pytest.raises(expected) as caught:
        await consume()
    assert seen == [TextChunkEvent("Hal")], "text before the error was already streamed"
    assert caught.value.provider == "anthropic"
    assert caught.value.status_code is None
    assert error_type in str(caught.value)
    assert "secret user text" not in str(caught.value)


async def test_a_stream_that_ends_without_message_stop_is_unavailable(server, provider) -> None:
    server.push(Reply(headers=dict(STREAM_HEADERS), body=[message_start(3)]))
    with pytest.raises(ProviderUnavailableError, match="message_stop"):
        await events_of(provider, [Message.user("Hi")])


async def test_tool_ids_are_kept_and_argumentless_calls_decode_to_empty(vendor, server, provider):
    server.push(vendor.stream([Call("toolu_X", "search_managers", {}), Usage(2, 2)]))
    events = await events_of(provider, [Message.user("Hi")], TOOLS)
    assert events[0] == ToolCallEvent(id="toolu_X", name="search_managers", arguments={})


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "message", "expected"),
    [
        (403, "permission_error", "Your API key does not have permission", ProviderAuthError),
        (404, "not_found_error", "model: claude-nope", ProviderBadRequestError),
        (413, "request_too_large", "Request exceeds the maximum size", ProviderContextLengthError),
        (
            400,
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again",
            ProviderContextLengthError,
        ),
        (500, "api_error", "Internal server error", ProviderUnavailableError),
        (503, "api_error", "Service unavailable", ProviderUnavailableError),
    ],
)
async def test_http_errors(server, provider, status, error_type, message, expected) -> None:
    server.push(Reply.json(status, error_body(error_type, message)))
    with pytest.raises(expected) as caught:
        await events_of(provider, [Message.user("Hi")])
    assert caught.value.status_code == status
    assert error_type in str(caught.value)
    assert message not in str(caught.value), "the vendor's message may quote the request"


async def test_rate_limit_without_retry_after(vendor, server, provider) -> None:
    server.push(vendor.error("rate_limit"))
    with pytest.raises(ProviderRateLimitError) as caught:
        await events_of(provider, [Message.user("Hi")])
    assert caught.value.retry_after_seconds is None


async def test_connection_refused_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = AnthropicVendor().provider(f"http://127.0.0.1:{port}", timeout_seconds=5)
    with pytest.raises(ProviderUnavailableError):
        await events_of(provider, [Message.user("Hi")])


async def test_missing_credentials_are_an_auth_error(server, no_credentials) -> None:
    provider = AnthropicProvider(base_url=server.url, max_retries=0)
    with pytest.raises(ProviderAuthError, match="ANTHROPIC_API_KEY"):
        await events_of(provider, [Message.user("Hi")])
    assert server.requests == []


async def test_an_unusable_credentials_profile_is_an_auth_error(
    server, no_credentials, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "missing"))
    provider = AnthropicProvider(base_url=server.url, max_retries=0)
    with pytest.raises(ProviderAuthError, match="credentials"):
        await events_of(provider, [Message.user("Hi")])
    assert server.requests == []


async def test_the_key_can_come_from_the_environment(
    vendor, server, no_credentials, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    provider = AnthropicProvider(base_url=server.url, max_retries=0)
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    await events_of(provider, [Message.user("Hi")])
    assert SECRET in server.requests[0].headers["authorization"]
    assert SECRET not in repr(provider)


# --- configuration ------------------------------------------------------------------------


def test_defaults_and_config_keys() -> None:
    assert dict(AnthropicProvider.default_config) == {
        "model": "claude-3-5-haiku-latest",
        "api_key": None,
        "base_url": None,
        "max_tokens": 1024,
        "timeout_seconds": 60,
        "stream_timeout_seconds": 30,
        "max_retries": 2,
        "temperature": None,
    }
    assert (AnthropicProvider.name, AnthropicProvider.required_extra) == ("anthropic", "anthropic")
    provider = AnthropicProvider.from_config({"model": "claude-opus-4-1", "api_key": SECRET})
    assert provider.settings["max_tokens"] == 1024
    assert provider.provider_config == {"model": "claude-opus-4-1", "api_key": SECRET}
    assert AnthropicProvider(model="m").settings == AnthropicProvider({"model": "m"}).settings
    assert repr(provider) == "<AnthropicProvider model='claude-opus-4-1'>"
    with pytest.raises(ConfigurationError, match="did you mean 'max_tokens'"):
        AnthropicProvider(max_token=5)


def test_registry_short_name() -> None:
    provider = build_provider("anthropic:claude-sonnet-4-5", {"max_tokens": 9})
    assert isinstance(provider, AnthropicProvider)
    assert (provider.settings["model"], provider.settings["max_tokens"]) == ("claude-sonnet-4-5", 9)


def test_check_configuration_accepts_valid_settings() -> None:
    AnthropicProvider.check_configuration()
    AnthropicProvider.check_configuration(
        {
            "model": "claude-sonnet-4-5",
            "api_key": SECRET,
            "base_url": "https://api.anthropic.com",
            "max_tokens": 4096,
            "timeout_seconds": 12.5,
            "stream_timeout_seconds": 3,
            "max_retries": 0,
            "temperature": 0.7,
        }
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", ""),
        ("model", 3),
        ("api_key", ""),
        ("base_url", "api.anthropic.com"),
        ("max_tokens", 0),
        ("max_tokens", True),
        ("max_tokens", 1.5),
        ("timeout_seconds", 0),
        ("stream_timeout_seconds", -1),
        ("timeout_seconds", "60"),
        ("max_retries", -1),
        ("temperature", 1.5),
        ("temperature", "hot"),
    ],
)
def test_check_configuration_rejects_invalid_values(field: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        AnthropicProvider.check_configuration({field: value})
    assert caught.value.field == field


def test_invalid_api_key_is_never_echoed() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AnthropicProvider.check_configuration({"api_key": "   "})
    assert caught.value.value == "<redacted>"


async def test_invalid_settings_fail_the_completion_before_any_request(server) -> None:
    provider = AnthropicProvider(base_url=server.url, api_key=SECRET, max_tokens=-1)
    with pytest.raises(ConfigurationError):
        await events_of(provider, [Message.user("Hi")])
    assert server.requests == []


def test_check_configuration_rejects_unknown_keys() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'temperature'"):
        AnthropicProvider.check_configuration({"temprature": 0.1})


async def test_one_sdk_client_per_provider(vendor, server, provider, monkeypatch) -> None:
    anthropic = pytest.importorskip("anthropic")
    made: list[dict[str, Any]] = []
    real = anthropic.AsyncAnthropic

    def counting(**kwargs: Any) -> Any:
        made.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(anthropic, "AsyncAnthropic", counting)
    server.push(vendor.stream([Text("a"), Usage(1, 1)]), vendor.stream([Text("b"), Usage(1, 1)]))
    await events_of(provider, [Message.user("Hi")])
    await events_of(provider, [Message.user("Hi")])
    assert made == [{"api_key": SECRET, "base_url": server.url, "timeout": 5.0, "max_retries": 0}]


def test_a_new_event_loop_gets_a_new_sdk_client(vendor, server, monkeypatch) -> None:
    """`chat_sync` runs each turn on a fresh loop; pooled connections must not cross over."""
    anthropic = pytest.importorskip("anthropic")
    made: list[object] = []
    real = anthropic.AsyncAnthropic

    def counting(**kwargs: Any) -> Any:
        made.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(anthropic, "AsyncAnthropic", counting)
    provider = vendor.provider(server.url, timeout_seconds=5)
    atom = Atom("a", ProviderNucleus(provider))
    server.push(
        vendor.stream([Text("one"), Usage(1, 1)]), vendor.stream([Text("two"), Usage(1, 1)])
    )
    assert atom.chat_sync("Hi").reply == "one"
    assert atom.chat_sync("Again").reply == "two"
    assert len(made) == 2


# --- the optional dependency ------------------------------------------------------------


async def test_missing_sdk_raises_the_dependency_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(AnthropicDependencyImportError) as caught:
        AnthropicProvider.check_configuration()
    assert isinstance(caught.value, ProviderDependencyError)
    assert isinstance(caught.value, ImportError)
    assert (caught.value.package, caught.value.extra) == ("anthropic", "anthropic")
    assert 'pip install "chatomon[anthropic]"' in str(caught.value)
    provider = AnthropicProvider(api_key=SECRET)
    with pytest.raises(AnthropicDependencyImportError, match=r"chatomon\[anthropic\]"):
        await events_of(provider, [Message.user("Hi")])


def test_the_module_imports_without_the_sdk() -> None:
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "from chatomon.providers.anthropic import AnthropicProvider\n"
        "print(AnthropicProvider().name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "anthropic"


# --- as an atom's nucleus -----------------------------------------------------------------


async def test_as_an_atom_nucleus(vendor, server, provider) -> None:
    server.push(vendor.stream([Text("Hello"), Text(" from Claude."), Usage(12, 5)]))
    atom = Atom("a", ProviderNucleus(provider, system_prompt="Be kind."))
    result = await atom.chat("Hi")
    assert result.reply == "Hello from Claude."
    assert result.report.usage == TokenUsage(input_tokens=12, output_tokens=5)
    body = server.requests[0].json()
    assert body["system"] == "Be kind."
    assert body["messages"] == [{"role": "user", "content": "Hi"}]


async def test_errors_never_carry_the_key(vendor, server, provider) -> None:
    for kind in ("auth", "rate_limit", "context_length", "server", "bad_request"):
        server.push(vendor.error(kind))
        with pytest.raises(ProviderError) as caught:
            await events_of(provider, [Message.user("Hi")])
        assert SECRET not in str(caught.value)
        assert SECRET not in repr(caught.value)
        assert caught.value.__cause__ is None


async def test_sdk_read_timeout_is_a_timeout(vendor, server) -> None:
    """The SDK's own HTTP timeout (timeout_seconds) also ends a stalled stream as a timeout."""
    provider = vendor.provider(server.url, timeout_seconds=0.3, stream_timeout_seconds=5)
    server.push(vendor.stream([Text("first"), Stall(1.5), Text("late"), Usage(1, 1)]))
    with pytest.raises(ProviderTimeoutError):
        await events_of(provider, [Message.user("Hi")])
