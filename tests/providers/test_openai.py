"""The OpenAI adapter against OpenAI's wire formats: Chat Completions and the Responses API."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from email.utils import formatdate
from typing import Any

import pytest

from chatomon import Atom, ConfigurationError, NucleusError, TokenUsage
from chatomon.errors import (
    ProviderAuthError,
    ProviderContextLengthError,
    ProviderDependencyError,
    ProviderError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderUnavailableError,
)
from chatomon.providers import (
    DoneEvent,
    Message,
    ProviderNucleus,
    TextChunkEvent,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    build_provider,
    run_completion,
)
from chatomon.providers.openai import OpenAIDependencyImportError, OpenAIProvider
from chatomon.providers.openai_format import chat_request, responses_request
from tests.providers.wire.behaviour import SECRET, ProviderBehaviour
from tests.providers.wire.openai_wire import (
    SSE_HEADERS,
    OpenAIChatVendor,
    OpenAIResponsesVendor,
    error_body,
)
from tests.providers.wire.script import Call, Text, Usage
from tests.providers.wire.server import Reply, WireServer

TOOL = ToolDefinition(
    name="query",
    description="Query rows.",
    parameters={"type": "object", "properties": {"manager": {"type": "string"}}},
)
VENDORS = [OpenAIChatVendor(), OpenAIResponsesVendor()]
VENDOR_IDS = ["chat", "responses"]


class TestOpenAIChatBehaviour(ProviderBehaviour):
    @pytest.fixture
    def vendor(self) -> OpenAIChatVendor:
        return OpenAIChatVendor()


class TestOpenAIResponsesBehaviour(ProviderBehaviour):
    @pytest.fixture
    def vendor(self) -> OpenAIResponsesVendor:
        return OpenAIResponsesVendor()


@pytest.fixture
def server():
    with WireServer() as server:
        yield server


async def events_of(provider, messages, tools=()) -> list[object]:
    return [e async for e in run_completion(provider, messages, list(tools))]


# --- the request ---------------------------------------------------------------------------


async def test_chat_request_body(server) -> None:
    vendor = OpenAIChatVendor()
    server.push(vendor.stream([Text("Hi!"), Usage(9, 2)]))
    provider = vendor.provider(server.url, model="gpt-4.1")
    await events_of(provider, [Message.system("Be brief."), Message.user("Hello")])
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json() == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_chat_request_with_tools_and_sampling(server) -> None:
    vendor = OpenAIChatVendor()
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    provider = vendor.provider(server.url, temperature=0.2, max_tokens=256)
    await events_of(provider, [Message.user("Hello")], [TOOL])
    body = server.requests[0].json()
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "query",
                "description": "Query rows.",
                "parameters": {"type": "object", "properties": {"manager": {"type": "string"}}},
            },
        }
    ]
    assert body["temperature"] == 0.2
    # A compatible server (base_url set) gets the classic max_tokens.
    assert body["max_tokens"] == 256
    assert "max_completion_tokens" not in body


def test_max_tokens_is_max_completion_tokens_on_openai_itself() -> None:
    provider = OpenAIProvider(max_tokens=100)
    request = chat_request(provider.settings, [Message.user("Hi")], [])
    assert request["max_completion_tokens"] == 100
    assert "max_tokens" not in request
    responses = OpenAIProvider(api="responses", max_tokens=100)
    assert (
        responses_request(responses.settings, [Message.user("Hi")], [])["max_output_tokens"] == 100
    )


async def test_responses_request_body(server) -> None:
    vendor = OpenAIResponsesVendor()
    server.push(vendor.stream([Text("Hi!"), Usage(9, 2)]))
    provider = vendor.provider(server.url, model="gpt-4.1")
    await events_of(provider, [Message.system("Be brief."), Message.user("Hello")], [TOOL])
    (request,) = server.requests
    assert request.path == "/v1/responses"
    assert request.json() == {
        "model": "gpt-4.1",
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": "Hello"}],
        "tools": [
            {
                "type": "function",
                "name": "query",
                "description": "Query rows.",
                "parameters": {"type": "object", "properties": {"manager": {"type": "string"}}},
                "strict": False,
            }
        ],
        "stream": True,
        "store": False,
    }


async def test_responses_without_system_or_tools_sends_neither(server) -> None:
    vendor = OpenAIResponsesVendor()
    server.push(vendor.stream([Text("Hi!"), Usage(9, 2)]))
    later = Message.system("Now answer in French.")
    await events_of(vendor.provider(server.url), [Message.user("Hello"), later])
    body = server.requests[0].json()
    assert "instructions" not in body
    assert "tools" not in body
    # A system message after the conversation began keeps its place.
    assert body["input"][-1] == {"role": "system", "content": "Now answer in French."}


@pytest.mark.parametrize("vendor", VENDORS, ids=VENDOR_IDS)
async def test_multi_round_tool_exchange_round_trips(vendor, server) -> None:
    provider = vendor.provider(server.url)
    server.push(
        vendor.stream(
            [
                Text("Checking."),
                Call("call_x", "query", {"manager": "PartManager"}, fragments=3),
                Call("call_y", "query", {"manager": "ToolManager"}),
                Usage(30, 9),
            ]
        ),
        vendor.stream([Text("Two managers answered."), Usage(60, 5)]),
    )
    history = [Message.system("Use tools."), Message.user("Compare parts and tools.")]
    first = await events_of(provider, history, [TOOL])
    calls = [e for e in first if isinstance(e, ToolCallEvent)]
    assert [(c.id, dict(c.arguments)) for c in calls] == [
        ("call_x", {"manager": "PartManager"}),
        ("call_y", {"manager": "ToolManager"}),
    ]
    asked = [ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in calls]
    history += [
        Message.assistant("Checking.", asked),
        Message.tool(asked[0], {"rows": 3}),
        Message.tool(asked[1], {"rows": 1}),
    ]
    second = await events_of(provider, history, [TOOL])
    assert "".join(e.content for e in second if isinstance(e, TextChunkEvent)) == (
        "Two managers answered."
    )
    body = server.requests[1].json()
    if isinstance(vendor, OpenAIChatVendor):
        assistant, result_x, result_y = body["messages"][2:]
        assert [c["id"] for c in assistant["tool_calls"]] == ["call_x", "call_y"]
        assert json.loads(assistant["tool_calls"][1]["function"]["arguments"]) == {
            "manager": "ToolManager"
        }
        assert (result_x["tool_call_id"], result_x["content"]) == ("call_x", '{"rows": 3}')
        assert (result_y["tool_call_id"], result_y["content"]) == ("call_y", '{"rows": 1}')
    else:
        items = body["input"][1:]
        assert [item.get("type", item.get("role")) for item in items] == [
            "assistant",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ]
        assert [item["call_id"] for item in items[1:]] == ["call_x", "call_y"] * 2
        assert items[4]["output"] == '{"rows": 1}'


async def test_assistant_tool_calls_without_text_send_null_content(server) -> None:
    vendor = OpenAIChatVendor()
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    call = ToolCall(id="c1", name="query", arguments={})
    history = [Message.user("Hi"), Message.assistant("", [call]), Message.tool(call, "[]")]
    await events_of(vendor.provider(server.url), history, [TOOL])
    assistant = server.requests[0].json()["messages"][1]
    assert assistant["content"] is None
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"


# --- the stream ----------------------------------------------------------------------------


async def test_chat_tool_calls_without_ids_get_stable_distinct_ids(server) -> None:
    # Some OpenAI-compatible servers send no id (and repeat the name in every fragment).
    vendor = OpenAIChatVendor()

    def fragment(index: int, name: str, arguments: str) -> bytes:
        call = {"index": index, "function": {"name": name, "arguments": arguments}}
        return vendor.chunk({"tool_calls": [call]})

    body = [
        fragment(0, "query", '{"manager": '),
        fragment(0, "query", '"Part"}'),
        fragment(1, "search_managers", "{}"),
        vendor.chunk({}, finish="tool_calls"),
        vendor.usage_chunk(Usage(3, 4)),
        b"data: [DONE]\n\n",
    ]
    server.push(Reply(headers=dict(SSE_HEADERS), body=body))
    provider = vendor.provider(server.url)
    events = await events_of(provider, [Message.user("Hi")], [TOOL])
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, dict(c.arguments)) for c in calls] == [
        ("query", {"manager": "Part"}),
        ("search_managers", {}),
    ]
    assert [c.id for c in calls] == ["call_chatomon_1", "call_chatomon_2"]
    assert events[-1] == DoneEvent(usage=TokenUsage(input_tokens=3, output_tokens=4))


async def test_chat_tool_calls_are_emitted_at_finish_reason_before_usage(server) -> None:
    vendor = OpenAIChatVendor()
    server.push(vendor.stream([Call("c1", "query", {"manager": "A"}), Usage(2, 2)]))
    events = await events_of(vendor.provider(server.url), [Message.user("Hi")], [TOOL])
    assert events == [
        ToolCallEvent(id="c1", name="query", arguments={"manager": "A"}),
        DoneEvent(usage=TokenUsage(input_tokens=2, output_tokens=2)),
    ]


async def test_chat_error_object_mid_stream_is_typed(server) -> None:
    vendor = OpenAIChatVendor()
    failure = error_body("The server had an error processing your request.", "server_error", None)
    body = [vendor.chunk({"content": "Par"}), b"data: " + json.dumps(failure).encode() + b"\n\n"]
    server.push(Reply(headers=dict(SSE_HEADERS), body=body))
    with pytest.raises(ProviderUnavailableError) as caught:
        await events_of(vendor.provider(server.url), [Message.user("Hi")])
    assert caught.value.provider == "openai"
    assert "processing your request" not in str(caught.value)


def responses_body(*events: tuple[str, dict[str, Any]]) -> Reply:
    pieces = []
    for number, (kind, fields) in enumerate(events):
        payload = {"type": kind, "sequence_number": number, **fields}
        pieces.append(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())
    return Reply(headers=dict(SSE_HEADERS), body=pieces)


@pytest.mark.parametrize(
    ("code", "error_type"),
    [("server_error", ProviderUnavailableError), ("rate_limit_exceeded", ProviderRateLimitError)],
)
async def test_responses_failed_event_is_typed(server, code, error_type) -> None:
    failed: dict[str, Any] = {"id": "resp_1", "object": "response", "status": "failed"}
    failed["error"] = {"code": code, "message": f"Echoing {SECRET} and the prompt"}
    server.push(responses_body(("response.failed", {"response": failed})))
    with pytest.raises(error_type) as caught:
        await events_of(OpenAIResponsesVendor().provider(server.url), [Message.user("Hi")])
    assert code in str(caught.value)
    assert SECRET not in str(caught.value)


async def test_responses_error_event_is_typed(server) -> None:
    error = {"code": "context_length_exceeded", "message": "Too long.", "param": "input"}
    server.push(responses_body(("error", error)))
    with pytest.raises(ProviderContextLengthError):
        await events_of(OpenAIResponsesVendor().provider(server.url), [Message.user("Hi")])


async def test_responses_stream_without_completed_is_a_protocol_error(server) -> None:
    delta = {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi"}
    server.push(responses_body(("response.output_text.delta", {**delta, "logprobs": []})))
    with pytest.raises(ProviderProtocolError, match=r"before response\.completed"):
        await events_of(OpenAIResponsesVendor().provider(server.url), [Message.user("Hi")])


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS, ids=VENDOR_IDS)
async def test_a_key_echoed_by_the_vendor_never_reaches_the_error(vendor, server) -> None:
    body = error_body(f"Incorrect API key provided: {SECRET}.", "invalid_request_error", None)
    server.push(Reply.json(401, body))
    with pytest.raises(ProviderAuthError) as caught:
        await events_of(vendor.provider(server.url), [Message.user("my secret question")])
    error = caught.value
    assert error.status_code == 401
    for text in (str(error), repr(error)):
        assert SECRET not in text
        assert "my secret question" not in text
    # The SDK's exception (which quotes the vendor's message) is not chained either.
    assert error.__cause__ is None
    assert error.__context__ is None


@pytest.mark.parametrize(
    ("status", "body", "error_type"),
    [
        (
            403,
            error_body("Project lacks access.", "invalid_request_error", None),
            ProviderAuthError,
        ),
        (503, error_body("Overloaded.", "server_error", None), ProviderUnavailableError),
        (502, {"raw": "<html>Bad gateway</html>"}, ProviderUnavailableError),
        # llama.cpp's llama-server reports an overlong prompt with its own error type.
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": "request (4476 tokens) exceeds the available context size",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 4476,
                    "n_ctx": 4096,
                }
            },
            ProviderContextLengthError,
        ),
    ],
)
async def test_more_statuses_map_to_typed_errors(server, status, body, error_type) -> None:
    server.push(Reply.json(status, body))
    with pytest.raises(error_type) as caught:
        await events_of(OpenAIChatVendor().provider(server.url), [Message.user("Hi")])
    assert caught.value.status_code == status


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "2.5"}, 2.5),
        ({}, None),
    ],
)
async def test_rate_limit_retry_after_forms(server, headers, expected) -> None:
    body = error_body("Rate limit reached.", "requests", "rate_limit_exceeded")
    server.push(Reply.json(429, body, headers))
    with pytest.raises(ProviderRateLimitError) as caught:
        await events_of(OpenAIChatVendor().provider(server.url), [Message.user("Hi")])
    assert caught.value.retry_after_seconds == expected


async def test_rate_limit_retry_after_as_http_date(server) -> None:
    headers = {"retry-after": formatdate(time.time() + 30, usegmt=True)}
    server.push(Reply.json(429, error_body("Slow down.", "requests", None), headers))
    with pytest.raises(ProviderRateLimitError) as caught:
        await events_of(OpenAIChatVendor().provider(server.url), [Message.user("Hi")])
    waited = caught.value.retry_after_seconds
    assert waited is not None
    assert 20 <= waited <= 31


async def test_missing_api_key_is_an_auth_error(monkeypatch, server) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAIProvider(base_url=f"{server.url}/v1", max_retries=0)
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        await events_of(provider, [Message.user("Hi")])
    assert server.requests == []


async def test_the_api_key_can_come_from_the_environment(monkeypatch, server) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    vendor = OpenAIChatVendor()
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    provider = OpenAIProvider(base_url=f"{server.url}/v1", max_retries=0)
    await events_of(provider, [Message.user("Hi")])
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_unreachable_server_is_unavailable() -> None:
    with WireServer() as closed:
        url = closed.url
    provider = OpenAIChatVendor().provider(url)
    with pytest.raises(ProviderUnavailableError):
        await events_of(provider, [Message.user("Hi")])


# --- configuration -------------------------------------------------------------------------


def test_defaults_and_config_keys() -> None:
    assert OpenAIProvider.name == "openai"
    assert OpenAIProvider.required_extra == "openai"
    assert dict(OpenAIProvider.default_config) == {
        "model": "gpt-4.1-mini",
        "api_key": None,
        "base_url": None,
        "organization": None,
        "timeout_seconds": 60,
        "stream_timeout_seconds": 30,
        "max_retries": 2,
        "api": "chat",
        "temperature": None,
        "max_tokens": None,
    }
    provider = OpenAIProvider()
    assert provider.settings == OpenAIProvider.default_config
    assert provider.provider_config == {}
    same = [
        OpenAIProvider({"model": "gpt-4.1"}),
        OpenAIProvider(model="gpt-4.1"),
        OpenAIProvider.from_config({"model": "gpt-4.1"}),
        build_provider("openai:gpt-4.1"),
    ]
    assert all(isinstance(p, OpenAIProvider) for p in same)
    assert {p.settings["model"] for p in same} == {"gpt-4.1"}
    assert repr(OpenAIProvider(api_key=SECRET)) == "<OpenAIProvider model='gpt-4.1-mini'>"


def test_check_configuration_accepts_good_configs() -> None:
    OpenAIProvider.check_configuration()
    OpenAIProvider.check_configuration(
        {
            "model": "local",
            "api_key": "none",
            "base_url": "http://127.0.0.1:8080/v1",
            "timeout_seconds": 2.5,
            "max_retries": 0,
            "api": "responses",
            "temperature": 0,
            "max_tokens": 512,
        }
    )


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"modle": "gpt-4.1"}, "modle"),
        ({"model": ""}, "model"),
        ({"api_key": 42}, "api_key"),
        ({"base_url": "localhost:8080"}, "base_url"),
        ({"base_url": "ftp://example.com"}, "base_url"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"stream_timeout_seconds": True}, "stream_timeout_seconds"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"api": "assistants"}, "api"),
        ({"temperature": 3}, "temperature"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_check_configuration_rejects_bad_values(config, field) -> None:
    with pytest.raises(ConfigurationError) as caught:
        OpenAIProvider.check_configuration(config)
    assert caught.value.field == field
    with pytest.raises(ConfigurationError):
        OpenAIProvider(config)


def test_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'model'"):
        OpenAIProvider(modle="x")


def test_a_bad_api_key_is_not_echoed() -> None:
    with pytest.raises(ConfigurationError) as caught:
        OpenAIProvider(api_key=["sk-leaked-in-a-list"])
    assert "sk-leaked" not in str(caught.value)
    assert "sk-leaked" not in repr(caught.value.value)


async def test_missing_sdk_raises_the_dependency_error(monkeypatch) -> None:
    provider = OpenAIProvider(api_key=SECRET)
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(OpenAIDependencyImportError) as caught:
        OpenAIProvider.check_configuration()
    error = caught.value
    assert isinstance(error, ProviderDependencyError)
    assert isinstance(error, ImportError)
    assert (error.package, error.extra) == ("openai", "openai")
    assert 'pip install "chatomon[openai]"' in str(error)
    with pytest.raises(OpenAIDependencyImportError):
        await events_of(provider, [Message.user("Hi")])


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = "import sys, chatomon.providers.openai; print('openai' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# --- as an atom's nucleus ------------------------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS, ids=VENDOR_IDS)
async def test_provider_nucleus_streams_the_reply_and_usage(vendor, server) -> None:
    server.push(vendor.stream([Text("Hello "), Text("there."), Usage(12, 3)]))
    atom = Atom("a", ProviderNucleus(vendor.provider(server.url), system_prompt="Be kind."))
    result = await atom.chat("Hi")
    assert result.reply == "Hello there."
    assert result.report.usage == TokenUsage(input_tokens=12, output_tokens=3)
    body = server.requests[0].json()
    if isinstance(vendor, OpenAIChatVendor):
        assert body["messages"][0] == {"role": "system", "content": "Be kind."}
    else:
        assert body["instructions"] == "Be kind."


async def test_provider_nucleus_reports_provider_errors(server) -> None:
    vendor = OpenAIChatVendor()
    server.push(vendor.error("server"))
    with pytest.raises(NucleusError) as caught:
        await Atom("a", ProviderNucleus(vendor.provider(server.url))).chat("Hi")
    assert isinstance(caught.value.__cause__, ProviderError)


def test_chat_sync_works_across_event_loops(server) -> None:
    # Each chat_sync runs in its own event loop; the SDK client must not leak between them.
    vendor = OpenAIChatVendor()
    server.push(
        vendor.stream([Text("one"), Usage(1, 1)]), vendor.stream([Text("two"), Usage(1, 1)])
    )
    atom = Atom("a", ProviderNucleus(vendor.provider(server.url)))
    assert atom.chat_sync("first").reply == "one"
    assert atom.chat_sync("second").reply == "two"
