"""The Gemini adapter against a loopback server speaking the Gemini API's wire format."""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterator

import pytest

import chatomon.providers
from chatomon import Atom
from chatomon.errors import (
    ConfigurationError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderDependencyError,
    ProviderError,
    ProviderProtocolError,
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
    ToolDefinition,
    build_provider,
    run_completion,
)
from chatomon.providers.google import GeminiProvider, GoogleDependencyImportError, GoogleProvider
from chatomon.providers.google_format import api_error, build_request, call_id_prefix
from tests.providers.wire.behaviour import SECRET, TOOLS, ProviderBehaviour
from tests.providers.wire.google_wire import (
    MODEL,
    STREAM_HEADERS,
    STREAM_PATH,
    GeminiVendor,
    chunk,
    error_reply,
    sse,
)
from tests.providers.wire.script import Call, Text, Usage
from tests.providers.wire.server import Reply, WireServer

_SDK_ENV = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_GENAI_API_VERSION",
    "GOOGLE_GENAI_HTTP_CLIENT",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
)


@pytest.fixture(autouse=True)
def _clean_sdk_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads keys, backends and API versions from the environment: start clean."""
    for name in _SDK_ENV:
        monkeypatch.delenv(name, raising=False)


class TestGeminiBehaviour(ProviderBehaviour):
    @pytest.fixture
    def vendor(self) -> GeminiVendor:
        return GeminiVendor()


# --- the request -------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture
def vendor() -> GeminiVendor:
    return GeminiVendor()


async def events_of(provider, messages, tools=()) -> list[object]:
    return [e async for e in run_completion(provider, messages, list(tools))]


async def test_a_simple_request_body(vendor, server) -> None:
    provider = vendor.provider(
        server.url, temperature=0.3, max_output_tokens=100, timeout_seconds=5
    )
    server.push(vendor.stream([Text("Hi."), Usage(3, 1)]))
    await events_of(provider, [Message.system("Be brief."), Message.user("Hello")])
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", STREAM_PATH)
    assert request.headers["x-goog-api-key"] == SECRET
    # HttpOptions.timeout is in milliseconds; the SDK tells the server the deadline too.
    assert request.headers["x-server-timeout"] == "5"
    assert request.json() == {
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
        "generationConfig": {"temperature": 0.3, "maxOutputTokens": 100},
    }


async def test_the_model_setting_names_the_endpoint(vendor, server) -> None:
    provider = vendor.provider(server.url, model="gemini-2.5-pro")
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    await events_of(provider, [Message.user("Hi")])
    assert server.requests[0].path == "/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


def test_tool_schemas_are_sent_as_json_schema() -> None:
    nested = {
        "type": "object",
        "properties": {"filter": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["filter"],
        "additionalProperties": False,
    }
    request = build_request(
        [Message.user("Hi")],
        [ToolDefinition("find", "Find rows.", nested), ToolDefinition("ping", "Ping.")],
    )
    assert request.function_declarations == [
        {"name": "find", "description": "Find rows.", "parameters_json_schema": nested},
        {"name": "ping", "description": "Ping."},
    ]


def test_tool_results_become_function_responses() -> None:
    call_a = ToolCall("a", "query", {"n": 1})
    call_b = ToolCall("b", "count", {})
    request = build_request(
        [
            Message.user("Go"),
            Message.assistant("", [call_a, call_b]),
            Message.tool(call_a, [1, 2]),
            Message(role="tool", content="plain words", tool_call_id="b"),  # no name given
            Message.assistant("", [call_a]),
            Message.tool(call_a, {"ok": True}),
            Message.user("Thanks"),
        ],
        [],
    )
    assert request.system_instruction is None
    assert request.contents == [
        {"role": "user", "parts": [{"text": "Go"}]},
        {
            "role": "model",
            "parts": [
                {"function_call": {"id": "a", "name": "query", "args": {"n": 1}}},
                {"function_call": {"id": "b", "name": "count", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"id": "a", "name": "query", "response": {"result": [1, 2]}}},
                {
                    "function_response": {
                        "id": "b",
                        "name": "count",
                        "response": {"result": "plain words"},
                    }
                },
            ],
        },
        {
            "role": "model",
            "parts": [{"function_call": {"id": "a", "name": "query", "args": {"n": 1}}}],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"id": "a", "name": "query", "response": {"ok": True}}}
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


def test_system_messages_join_into_one_instruction() -> None:
    request = build_request(
        [Message.system("One."), Message.user("Hi"), Message.system("Two.")], []
    )
    assert request.system_instruction == "One.\n\nTwo."
    assert [c["role"] for c in request.contents] == ["user"]


# --- the stream --------------------------------------------------------------------------


async def test_a_multi_round_tool_exchange_round_trips(vendor, server) -> None:
    provider = vendor.provider(server.url)
    server.push(
        vendor.stream(
            [Text("Checking."), Call("x", "query", {"manager": "PartManager"}), Usage(9, 3)]
        ),
        vendor.stream([Call("y", "query", {"manager": "MaterialManager"}), Usage(20, 2)]),
        vendor.stream([Text("Done."), Usage(30, 1)]),
    )
    history = [Message.system("Use tools."), Message.user("Parts?")]
    for _ in range(3):
        events = await events_of(provider, history, TOOLS)
        text = "".join(e.content for e in events if isinstance(e, TextChunkEvent))
        calls = [
            ToolCall(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallEvent)
        ]
        history.append(Message.assistant(text, calls))
        history.extend(Message.tool(c, {"rows": c.arguments["manager"]}) for c in calls)
    first, second = history[2].tool_calls[0], history[4].tool_calls[0]
    # Gemini sent no ids: they are generated from the history, so unique across rounds
    # (and conversations) and the same for the same history.
    assert re.fullmatch(r"call_[0-9a-f]{16}_0", first.id)
    assert first.id != second.id
    assert first.id == f"{call_id_prefix(history[:2])}_0"
    assert history[-1] == Message.assistant("Done.")
    last = server.requests[2].json()["contents"]
    assert last[1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {
                    "functionCall": {
                        "id": first.id,
                        "name": "query",
                        "args": {"manager": "PartManager"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": first.id,
                        "name": "query",
                        "response": {"rows": "PartManager"},
                    }
                }
            ],
        },
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": second.id,
                        "name": "query",
                        "args": {"manager": "MaterialManager"},
                    }
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": second.id,
                        "name": "query",
                        "response": {"rows": "MaterialManager"},
                    }
                }
            ],
        },
    ]


async def test_thought_signatures_go_back_with_their_calls(vendor, server) -> None:
    provider = vendor.provider(server.url, model="gemini-3-flash-preview")
    signature = b"\x12\x9f opaque \xfe"
    first_call = {"functionCall": {"name": "query", "args": {"manager": "PartManager"}}}
    server.push(
        Reply(
            200,
            STREAM_HEADERS,
            [
                sse(
                    json.dumps(
                        chunk(
                            [
                                {
                                    **first_call,
                                    "thoughtSignature": base64.b64encode(signature).decode(),
                                },
                                {"functionCall": {"name": "query", "args": {"manager": "Other"}}},
                            ],
                            {"promptTokenCount": 5, "candidatesTokenCount": 9},
                            "STOP",
                        )
                    )
                )
            ],
        ),
        vendor.stream([Text("Done."), Usage(1, 1)]),
    )
    history = [Message.user("Parts?")]
    events = await events_of(provider, history, TOOLS)
    calls = [ToolCall(e.id, e.name, e.arguments) for e in events if isinstance(e, ToolCallEvent)]
    history += [Message.assistant("", calls), *(Message.tool(c, {"ok": 1}) for c in calls)]
    await events_of(provider, history, TOOLS)
    parts = server.requests[1].json()["contents"][1]["parts"]
    assert base64.urlsafe_b64decode(parts[0]["thoughtSignature"]) == signature
    assert "thoughtSignature" not in parts[1]  # Gemini signs the first call of a turn only


@pytest.mark.parametrize(
    ("model", "signed"),
    [
        ("gemini-3-flash-preview", True),
        ("gemini-2.5-flash", False),
        ("models/gemini-2.0-flash", False),
    ],
)
async def test_calls_from_another_history_get_the_documented_placeholder(
    vendor, server, model: str, signed: bool
) -> None:
    provider = vendor.provider(server.url, model=model)
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    call_a, call_b = ToolCall("a", "query", {}), ToolCall("b", "query", {})
    history = [
        Message.user("Parts?"),
        Message.assistant("", [call_a, call_b]),
        Message.tool(call_a, {}),
        Message.tool(call_b, {}),
    ]
    await events_of(provider, history, TOOLS)
    parts = server.requests[0].json()["contents"][1]["parts"]
    signatures = [p.get("thoughtSignature") for p in parts]
    placeholder = base64.urlsafe_b64encode(b"skip_thought_signature_validator").decode()
    assert signatures == ([placeholder, None] if signed else [None, None])


async def test_ids_sent_by_the_api_are_kept(vendor, server) -> None:
    provider = vendor.provider(server.url)
    server.push(
        vendor.stream([Call("fc_1", "query", {}), Call("fc_2", "query", {}), Usage(1, 1)], ids=True)
    )
    events = await events_of(provider, [Message.user("Hi")], TOOLS)
    assert [e.id for e in events if isinstance(e, ToolCallEvent)] == ["fc_1", "fc_2"]


async def test_usage_is_the_last_metadata_and_counts_thinking(vendor, server) -> None:
    provider = vendor.provider(server.url)
    usage = {"promptTokenCount": 12, "candidatesTokenCount": 5, "thoughtsTokenCount": 40}
    server.push(
        Reply(
            200,
            STREAM_HEADERS,
            [
                sse(
                    json.dumps(chunk([{"text": "plan", "thought": True}], {"promptTokenCount": 12}))
                ),
                sse(json.dumps(chunk([{"text": "Answer"}], {"promptTokenCount": 12}))),
                sse(json.dumps(chunk([{"text": "."}], {**usage, "totalTokenCount": 57}, "STOP"))),
            ],
        )
    )
    events = await events_of(provider, [Message.user("Hi")])
    assert events == [
        TextChunkEvent("Answer"),
        TextChunkEvent("."),
        DoneEvent(usage=TokenUsage(input_tokens=12, output_tokens=45)),
    ]


async def test_a_stream_without_usage_reports_zero(vendor, server) -> None:
    provider = vendor.provider(server.url)
    server.push(vendor.stream([Text("Hi")]))
    events = await events_of(provider, [Message.user("Hi")])
    assert events[-1] == DoneEvent(usage=TokenUsage())


@pytest.mark.parametrize(
    "payload",
    [
        '{"candidates": [{"content": {"parts": [{"text": "Hel',  # cut JSON
        json.dumps(chunk([{"functionCall": {"name": "query", "args": ["PartManager"]}}])),
        json.dumps(chunk([{"functionCall": {"name": "query", "args": "{}"}}])),
    ],
    ids=["invalid-json", "args-list", "args-string"],
)
async def test_malformed_events_are_protocol_errors(vendor, server, payload: str) -> None:
    provider = vendor.provider(server.url)
    server.push(
        Reply(
            200, STREAM_HEADERS, [sse(json.dumps(chunk([{"text": "secret words"}]))), sse(payload)]
        )
    )
    with pytest.raises(ProviderProtocolError) as caught:
        await events_of(provider, [Message.user("Hi")], TOOLS)
    assert caught.value.provider == "gemini"
    assert "Hel" not in str(caught.value)
    assert "PartManager" not in str(caught.value)


async def test_an_error_event_mid_stream_is_typed(vendor, server) -> None:
    provider = vendor.provider(server.url)
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    server.push(
        Reply(
            200, STREAM_HEADERS, [sse(json.dumps(chunk([{"text": "Par"}]))), sse(json.dumps(error))]
        )
    )
    stream = run_completion(provider, [Message.user("Hi")], [])
    assert await anext(stream) == TextChunkEvent("Par")
    with pytest.raises(ProviderUnavailableError) as caught:
        await anext(stream)
    assert caught.value.status_code == 503


async def test_a_blocked_prompt_is_a_bad_request(vendor, server) -> None:
    provider = vendor.provider(server.url)
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "modelVersion": MODEL}
    server.push(Reply(200, STREAM_HEADERS, [sse(json.dumps(blocked))]))
    with pytest.raises(ProviderBadRequestError, match="PROHIBITED_CONTENT"):
        await events_of(provider, [Message.user("Hi")])


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "error_type"),
    [
        (401, "UNAUTHENTICATED", ProviderAuthError),
        (403, "PERMISSION_DENIED", ProviderAuthError),
        (404, "NOT_FOUND", ProviderBadRequestError),
        (400, "FAILED_PRECONDITION", ProviderBadRequestError),
        (500, "INTERNAL", ProviderUnavailableError),
        (504, "DEADLINE_EXCEEDED", ProviderTimeoutError),
    ],
)
async def test_more_google_statuses_map_to_typed_errors(
    vendor, server, code: int, status: str, error_type: type[ProviderError]
) -> None:
    provider = vendor.provider(server.url)
    server.push(error_reply(code, status, "Something about Which parts are heavy?"))
    with pytest.raises(error_type) as caught:
        # Straight from complete(): run_completion re-labels any TimeoutError it sees as
        # its own first-event timeout, without the status code.
        [e async for e in provider.complete([Message.user("Which parts are heavy?")], [])]
    assert caught.value.status_code == code
    assert status in str(caught.value)
    assert "heavy" not in str(caught.value)


async def test_rate_limit_reads_the_retry_after_header(vendor, server) -> None:
    provider = vendor.provider(server.url)
    reply = vendor.error("rate_limit", retry_after=30)
    reply.headers["retry-after"] = "5"
    server.push(reply)
    with pytest.raises(ProviderRateLimitError) as caught:
        await events_of(provider, [Message.user("Hi")])
    assert caught.value.retry_after_seconds == 5
    assert caught.value.status_code == 429


def test_retry_delays_in_error_details_are_parsed() -> None:
    def delay(value: object) -> float | None:
        body = {
            "error": {
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": value}
                ]
            }
        }
        error = api_error(
            "gemini", 429, status="RESOURCE_EXHAUSTED", message=None, body=body, headers={}
        )
        return error.retry_after_seconds

    assert delay("17s") == 17
    assert delay("0.5s") == 0.5
    assert delay({"seconds": 2, "nanos": 500_000_000}) == 2.5
    assert delay("soon") is None


async def test_the_sdk_does_not_retry_unless_asked(vendor, server) -> None:
    server.push(vendor.error("server"))
    with pytest.raises(ProviderUnavailableError):
        await events_of(vendor.provider(server.url), [Message.user("Hi")])
    assert len(server.requests) == 1
    retrying = GeminiProvider(api_key=SECRET, base_url=server.url, max_retries=1)
    server.push(vendor.error("server"), vendor.stream([Text("ok"), Usage(1, 1)]))
    events = await events_of(retrying, [Message.user("Hi")])  # the SDK waits ~1 s between
    assert events[0] == TextChunkEvent("ok")
    assert len(server.requests) == 3


async def test_a_refused_connection_is_unavailable() -> None:
    with WireServer() as gone:
        url = gone.url
    provider = GeminiProvider(api_key=SECRET, base_url=url, max_retries=0)
    with pytest.raises(ProviderUnavailableError):
        await events_of(provider, [Message.user("Hi")])


async def test_a_missing_api_key_is_an_auth_error() -> None:
    provider = GeminiProvider(base_url="http://127.0.0.1:9")
    with pytest.raises(ProviderAuthError, match="GEMINI_API_KEY"):
        await events_of(provider, [Message.user("Hi")])


async def test_the_sdk_reads_the_key_from_the_environment(vendor, server, monkeypatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "env-key-123")
    provider = GeminiProvider(base_url=server.url)
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    await events_of(provider, [Message.user("Hi")])
    assert server.requests[0].headers["x-goog-api-key"] == "env-key-123"


# --- configuration -----------------------------------------------------------------------


def test_defaults_and_names() -> None:
    assert GoogleProvider is GeminiProvider
    assert GeminiProvider.name == "gemini"
    assert GeminiProvider.required_extra == "google"
    assert dict(GeminiProvider.default_config) == {
        "model": "gemini-2.5-flash",
        "api_key": None,
        "base_url": None,
        "timeout_seconds": 60,
        "stream_timeout_seconds": 30,
        "temperature": None,
        "max_output_tokens": None,
        "max_retries": 0,
    }
    provider = GeminiProvider(api_key=SECRET)
    assert provider.settings["model"] == "gemini-2.5-flash"
    assert provider.provider_config == {"api_key": SECRET}
    assert repr(provider) == "<GeminiProvider model='gemini-2.5-flash'>"
    assert SECRET not in repr(provider)


def test_the_registry_resolves_both_short_names() -> None:
    for short in ("gemini", "google"):
        provider = build_provider(f"{short}:gemini-2.5-pro", {"temperature": 0})
        assert isinstance(provider, GeminiProvider)
        assert provider.settings["model"] == "gemini-2.5-pro"
    assert chatomon.providers.GoogleProvider is GeminiProvider


def test_check_configuration_accepts_valid_settings() -> None:
    GeminiProvider.check_configuration()
    GeminiProvider.check_configuration(
        {
            "model": "gemini-2.5-pro",
            "api_key": SECRET,
            "base_url": "https://proxy.example.com/gemini",
            "timeout_seconds": 2.5,
            "stream_timeout_seconds": 10,
            "temperature": 1.5,
            "max_output_tokens": 2048,
            "max_retries": 3,
        }
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("model", ""),
        ("model", 3),
        ("api_key", ""),
        ("base_url", "generativelanguage.googleapis.com"),
        ("base_url", "ftp://example.com"),
        ("timeout_seconds", 0),
        ("timeout_seconds", "60"),
        ("stream_timeout_seconds", -1),
        ("temperature", 2.5),
        ("temperature", True),
        ("max_output_tokens", 0),
        ("max_output_tokens", 10.0),
        ("max_retries", -1),
        ("max_retries", None),
    ],
)
def test_check_configuration_rejects_bad_values(key: str, value: object) -> None:
    with pytest.raises(ConfigurationError) as caught:
        GeminiProvider.check_configuration({key: value})
    assert caught.value.field == key
    with pytest.raises(ConfigurationError):
        GeminiProvider({key: value})


def test_check_configuration_rejects_unknown_keys() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'max_output_tokens'") as caught:
        GeminiProvider.check_configuration({"max_tokens": 5})
    assert caught.value.field == "max_tokens"


def test_a_bad_api_key_value_is_not_echoed() -> None:
    with pytest.raises(ConfigurationError) as caught:
        GeminiProvider.check_configuration({"api_key": "   "})
    assert caught.value.value == "<redacted>"


async def test_a_missing_sdk_raises_the_dependency_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(GoogleDependencyImportError) as caught:
        GeminiProvider.check_configuration()
    assert isinstance(caught.value, ProviderDependencyError)
    assert isinstance(caught.value, ImportError)
    assert (caught.value.package, caught.value.extra) == ("google.genai", "google")
    assert 'pip install "chatomon[google]"' in str(caught.value)
    provider = GeminiProvider(api_key=SECRET)  # building needs no SDK
    with pytest.raises(GoogleDependencyImportError):
        await events_of(provider, [Message.user("Hi")])


# --- as a nucleus ------------------------------------------------------------------------


async def test_the_provider_as_an_atom_nucleus(vendor, server) -> None:
    provider = vendor.provider(server.url)
    server.push(vendor.stream([Text("Hello"), Text(" there."), Usage(14, 3)]))
    atom = Atom("a", ProviderNucleus(provider, system_prompt="Be kind."))
    result = await atom.chat("Hi")
    assert result.reply == "Hello there."
    assert result.report.usage == TokenUsage(input_tokens=14, output_tokens=3)
    body = server.requests[0].json()
    assert body["systemInstruction"]["parts"] == [{"text": "Be kind."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
