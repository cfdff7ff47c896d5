"""The Ollama adapter against a loopback server speaking Ollama's NDJSON wire format."""

from __future__ import annotations

import email.utils
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from chatomon import Atom, ConfigurationError
from chatomon.errors import (
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderContextLengthError,
    ProviderDependencyError,
    ProviderProtocolError,
    ProviderRateLimitError,
    ProviderUnavailableError,
)
from chatomon.providers import (
    DoneEvent,
    Message,
    OllamaProvider,
    ProviderNucleus,
    TextChunkEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    build_provider,
    run_completion,
)
from chatomon.providers.ollama import OllamaBaseUrlError, OllamaDependencyImportError
from tests.providers.wire.behaviour import HISTORY, SECRET, TOOLS, ProviderBehaviour, collect
from tests.providers.wire.ollama_wire import (
    LLAMA_SERVER_OVERFLOW,
    MODEL,
    OllamaWire,
    go_json,
)
from tests.providers.wire.script import Call, Text, Usage
from tests.providers.wire.server import Reply, WireServer


@pytest.fixture
def vendor(monkeypatch: pytest.MonkeyPatch) -> OllamaWire:
    # With OLLAMA_API_KEY set the SDK sends it as a bearer token (as for ollama.com), so
    # the suite's secret checks cover the one credential this adapter can carry.
    monkeypatch.setenv("OLLAMA_API_KEY", SECRET)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return OllamaWire()


@pytest.fixture
def server():
    with WireServer() as server:
        yield server


@pytest.fixture
def provider(vendor: OllamaWire, server: WireServer) -> OllamaProvider:
    return vendor.provider(server.url, timeout_seconds=5, stream_timeout_seconds=5)


async def events_of(provider, messages, tools=()) -> list[object]:
    return [e async for e in run_completion(provider, messages, list(tools))]


async def read_into(seen: list[object], provider) -> None:
    """Append the events of one completion of HISTORY to `seen` until the stream fails."""
    stream = run_completion(provider, HISTORY, TOOLS)
    while True:
        seen.append(await anext(stream))


class TestOllamaBehaviour(ProviderBehaviour):
    """The shared suite. Ollama never fragments tool arguments: the encoder sends each call
    whole, so the fragments test checks whole calls; malformed arguments are a stream
    line that is not valid JSON."""


# --- the request -------------------------------------------------------------------------


async def test_a_simple_request_body_is_exactly_ollamas(vendor, server, provider) -> None:
    server.push(vendor.stream([Text("Hi"), Usage(3, 1)]))
    tool = ToolDefinition(
        name="lookup",
        description="Look a word up.",
        parameters={"type": "object", "properties": {"word": {"type": "string"}}},
    )
    await events_of(provider, [Message.system("Be brief."), Message.user("Hello")], [tool])
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/api/chat")
    assert request.json() == {
        "model": MODEL,
        "stream": True,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
                },
            }
        ],
    }
    assert request.headers["content-type"] == "application/json"
    assert request.headers["authorization"] == f"Bearer {SECRET}"


async def test_options_keep_alive_and_think_are_sent(vendor, server) -> None:
    provider = vendor.provider(
        server.url, options={"temperature": 0.2, "num_ctx": 8192}, keep_alive="5m", think=True
    )
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    await events_of(provider, [Message.user("Hi")])
    body = server.requests[0].json()
    assert body["options"] == {"temperature": 0.2, "num_ctx": 8192}
    assert (body["keep_alive"], body["think"]) == ("5m", True)
    assert body["model"] == MODEL


async def test_a_tool_result_without_a_name_takes_its_calls_name(vendor, server, provider) -> None:
    call = ToolCall(id="x1", name="query", arguments={})
    orphan = Message(role="tool", content='{"ok": true}', tool_call_id="x1")
    server.push(vendor.stream([Text("ok"), Usage(1, 1)]))
    await events_of(provider, [Message.user("Hi"), Message.assistant("", [call]), orphan])
    messages = server.requests[0].json()["messages"]
    assert messages[1] == {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "query", "arguments": {}}}],
    }
    assert messages[2] == {"role": "tool", "content": '{"ok": true}', "tool_name": "query"}


async def test_a_multi_round_tool_exchange_round_trips(vendor, server, provider) -> None:
    server.push(
        vendor.stream([Call("-", "query", {"manager": "PartManager"}), Usage(40, 9)]),
        vendor.stream([Text("Gear."), Call("-", "query", {"manager": "X"}), Usage(60, 5)]),
    )
    history = [Message.system("Use tools."), Message.user("Parts?")]
    first = await events_of(provider, history, TOOLS)
    (call,) = [e for e in first if isinstance(e, ToolCallEvent)]
    assert (call.id, call.name, dict(call.arguments)) == (
        "call_1",
        "query",
        {"manager": "PartManager"},
    )
    assert first[-1] == DoneEvent(usage=TokenUsage(input_tokens=40, output_tokens=9))

    asked = ToolCall(id=call.id, name=call.name, arguments=call.arguments)
    history += [Message.assistant("", [asked]), Message.tool(asked, {"data": ["Gear"]})]
    second = await events_of(provider, history, TOOLS)
    assert [e.content for e in second if isinstance(e, TextChunkEvent)] == ["Gear."]
    (again,) = [e for e in second if isinstance(e, ToolCallEvent)]
    assert again.id == "call_2", "ids already in the history are not reused"

    sent = server.requests[1].json()["messages"]
    assert sent[2:] == [
        {
            "role": "assistant",
            "tool_calls": [
                {"function": {"name": "query", "arguments": {"manager": "PartManager"}}}
            ],
        },
        {"role": "tool", "content": '{"data": ["Gear"]}', "tool_name": "query"},
    ]


async def test_generated_ids_are_deterministic(vendor, server, provider) -> None:
    script = [
        Call("-", "query", {"manager": "A"}),
        Call("-", "query", {"manager": "B"}),
        Usage(1, 1),
    ]
    server.push(vendor.stream(script), vendor.stream(script))
    ids = [[e.id for e in await collect(provider) if isinstance(e, ToolCallEvent)] for _ in "ab"]
    assert ids == [["call_1", "call_2"], ["call_1", "call_2"]]


async def test_text_with_html_characters_and_unicode_survives(vendor, server, provider) -> None:
    assert go_json({"c": "<b>&"}) == b'{"c":"\\u003cb\\u003e\\u0026"}'
    server.push(vendor.stream([Text("<b>Größe</b> & "), Text("\u2028 ✓"), Usage(1, 2)]))
    events = await collect(provider)
    text = "".join(e.content for e in events if isinstance(e, TextChunkEvent))
    assert text == "<b>Größe</b> & \u2028 ✓"


async def test_thinking_text_is_not_part_of_the_reply(vendor, server, provider) -> None:
    thinking = vendor.chunk({"role": "assistant", "content": "", "thinking": "Let me see"})
    reply = vendor.stream([Text("Four."), Usage(5, 2)])
    server.push(Reply(status=200, headers=reply.headers, body=[thinking, *reply.body]))
    events = await collect(provider)
    assert [e.content for e in events if isinstance(e, TextChunkEvent)] == ["Four."]


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "error_type", "words"),
    [
        (404, "model 'gemma4:e4b' not found", ProviderBadRequestError, "ollama pull gemma4:e4b"),
        (404, "404 page not found", ProviderBadRequestError, "no Ollama API at this base_url"),
        (403, "forbidden", ProviderAuthError, "OLLAMA_API_KEY"),
        (400, LLAMA_SERVER_OVERFLOW, ProviderContextLengthError, "num_ctx"),
        (413, "request entity too large", ProviderContextLengthError, "context window"),
        (
            503,
            "server busy, please try again.  maximum pending requests exceeded",
            ProviderUnavailableError,
            "HTTP 503",
        ),
        (422, "unprocessable", ProviderBadRequestError, "HTTP 422"),
    ],
)
async def test_status_errors(vendor, server, provider, status, message, error_type, words) -> None:
    server.push(vendor.error_reply(status, message))
    with pytest.raises(error_type, match=words) as caught:
        await collect(provider)
    assert caught.value.status_code == status
    assert caught.value.provider == "ollama"


async def test_vendor_error_text_is_not_copied(vendor, server, provider) -> None:
    server.push(vendor.error("rate_limit"))
    with pytest.raises(ProviderRateLimitError) as caught:
        await collect(provider)
    assert "someone" not in str(caught.value)
    assert caught.value.retry_after_seconds is None
    assert caught.value.status_code == 429


async def test_retry_after_as_an_http_date(vendor, server, provider) -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    reply = vendor.error("rate_limit")
    reply.headers["retry-after"] = when
    server.push(reply)
    with pytest.raises(ProviderRateLimitError) as caught:
        await collect(provider)
    retry_after = caught.value.retry_after_seconds
    assert retry_after is not None
    assert 20 <= retry_after <= 31


@pytest.mark.parametrize(
    ("message", "error_type"),
    [
        ("model runner has unexpectedly stopped", ProviderUnavailableError),
        (LLAMA_SERVER_OVERFLOW, ProviderContextLengthError),
    ],
)
async def test_an_error_line_mid_stream(vendor, server, provider, message, error_type) -> None:
    head = vendor.stream([Text("Par"), Text("tial")])
    body = [*head.body[:-1], vendor.error_line(message)]
    server.push(Reply(status=200, headers=head.headers, body=body))
    seen: list[object] = []
    with pytest.raises(error_type) as caught:
        await read_into(seen, provider)
    assert seen == [TextChunkEvent("Par"), TextChunkEvent("tial")]
    assert caught.value.status_code is None
    assert "mid-stream" in str(caught.value)


@pytest.mark.parametrize("raw", ["[1, 2]", '"manager=PartManager"', "null"])
async def test_arguments_that_are_not_an_object(vendor, server, provider, raw) -> None:
    server.push(vendor.stream([Call("-", "query", raw_arguments=raw), Usage(1, 1)]))
    with pytest.raises(ProviderProtocolError, match="not a valid chat chunk"):
        await collect(provider)


async def test_a_line_that_is_not_json(vendor, server, provider) -> None:
    server.push(Reply(status=200, headers={"content-type": "application/x-ndjson"}, body=[b"{\n"]))
    with pytest.raises(ProviderProtocolError, match="not valid JSON"):
        await collect(provider)


async def test_a_stream_without_its_done_line(vendor, server, provider) -> None:
    head = vendor.stream([Text("Hello")])
    server.push(Reply(status=200, headers=head.headers, body=head.body[:-1]))
    with pytest.raises(ProviderProtocolError, match="without its final done line"):
        await collect(provider)


async def test_connection_refused_is_unavailable(vendor) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = vendor.provider(f"http://127.0.0.1:{port}", timeout_seconds=5)
    with pytest.raises(ProviderUnavailableError, match="could not connect to Ollama"):
        await collect(provider)


# --- configuration -----------------------------------------------------------------------


def test_defaults_and_config_keys() -> None:
    assert OllamaProvider.name == "ollama"
    assert OllamaProvider.required_extra == "ollama"
    assert dict(OllamaProvider.default_config) == {
        "model": "gemma4:e4b",
        "base_url": "http://127.0.0.1:11434",
        "timeout_seconds": 60,
        "stream_timeout_seconds": 30,
        "options": None,
        "keep_alive": None,
        "think": None,
    }
    provider = OllamaProvider.from_config({"model": "llama3.2"})
    assert provider.provider_config == {"model": "llama3.2"}
    assert provider.settings["base_url"] == "http://127.0.0.1:11434"
    assert OllamaProvider(model="qwen3").settings["model"] == "qwen3"
    assert repr(provider) == "<OllamaProvider model='llama3.2'>"
    with pytest.raises(ConfigurationError, match="did you mean 'base_url'"):
        OllamaProvider(base_ur="http://x:1")


def test_the_registry_builds_it_from_a_short_name() -> None:
    provider = build_provider("ollama:qwen3:8b", {"keep_alive": 0})
    assert isinstance(provider, OllamaProvider)
    assert provider.settings["model"] == "qwen3:8b"
    assert provider.settings["keep_alive"] == 0


def test_check_configuration_accepts_good_settings() -> None:
    OllamaProvider.check_configuration()
    OllamaProvider.check_configuration(
        {
            "model": "llama3.2",
            "base_url": "https://ollama.example.com",
            "timeout_seconds": 2.5,
            "stream_timeout_seconds": 10,
            "options": {"temperature": 0},
            "keep_alive": -1,
            "think": "high",
        }
    )


@pytest.mark.parametrize(
    ("config", "field", "words"),
    [
        ({"timeout_seconds": 0}, "timeout_seconds", "positive number of seconds"),
        ({"stream_timeout_seconds": -1}, "stream_timeout_seconds", "positive number"),
        ({"timeout_seconds": "60"}, "timeout_seconds", "got '60'"),
        ({"timeout_seconds": True}, "timeout_seconds", "positive number"),
        ({"timeout_seconds": float("inf")}, "timeout_seconds", "positive number"),
        ({"model": ""}, "model", "non-empty model name"),
        ({"model": None}, "model", "non-empty model name"),
        ({"options": [("temperature", 0)]}, "options", "mapping of Ollama option names"),
        ({"options": {1: 0}}, "options", "mapping"),
        ({"keep_alive": True}, "keep_alive", "duration such as '5m'"),
        ({"think": "extreme"}, "think", "'low', 'medium' or 'high'"),
        ({"modle": "x"}, "modle", "did you mean 'model'"),
    ],
)
def test_bad_settings_are_refused(config, field, words) -> None:
    with pytest.raises(ConfigurationError, match=words) as caught:
        OllamaProvider.check_configuration(config)
    assert caught.value.field == field
    with pytest.raises(ConfigurationError, match=words):
        OllamaProvider(config)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434",
        "https://ollama.example.com",
        "http://localhost:11434/",
        "https://proxy.example.com:8443/ollama",
        "http://[::1]:11434",
        "http://ollama_server:11434",
    ],
)
def test_good_base_urls(url: str) -> None:
    OllamaProvider.check_configuration({"base_url": url})
    assert OllamaProvider(base_url=url).settings["base_url"] == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x", "base_url 'ftp://x' uses scheme 'ftp'; allowed: http://host:port or https://"),
        ("http://", "base_url 'http://' has no host; e.g. 'http://127.0.0.1:11434'"),
        (
            "localhost:11434",
            "base_url 'localhost:11434' has no scheme; write it as 'http://localhost:11434'",
        ),
        ("http://user:pass@host", "base_url 'http://***@host' embeds credentials; remove them"),
        (
            "http://h:99999",
            "base_url 'http://h:99999' has port '99999'; a port is a number from 1 to 65535",
        ),
        ("http://h:0", "has port '0'"),
        ("http://h:abc", "has port 'abc'"),
        ("http://h:", "has port ''"),
        ("http://h/?q=1", "base_url 'http://h/?q=1' has a query string; allowed:"),
        ("http://h/#top", "base_url 'http://h/#top' has a fragment"),
        ("http://h ost", "contains whitespace"),
        ("http://h!st:1", "has an invalid host 'h!st'"),
        ("http://[::zz]:1", "has an invalid host '[::zz]'"),
        ("", "base_url '' is empty"),
        ("http://a:b@c@h:1/x", "base_url 'http://***@h:1/x' embeds credentials"),
        (11434, "must be a URL string such as 'http://127.0.0.1:11434', got 11434"),
    ],
)
def test_bad_base_urls_raise_a_precise_error(url: object, message: str) -> None:
    with pytest.raises(OllamaBaseUrlError) as caught:
        OllamaProvider(base_url=url)
    assert message in str(caught.value)
    assert isinstance(caught.value, ConfigurationError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.field == "base_url"
    assert "pass" not in str(caught.value) and "pass" not in repr(caught.value.value)
    with pytest.raises(OllamaBaseUrlError):
        OllamaProvider.check_configuration({"base_url": url})


# --- the optional dependency -------------------------------------------------------------


async def test_a_missing_sdk_raises_the_dependency_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ollama", None)
    with pytest.raises(OllamaDependencyImportError, match=r'pip install "chatomon\[ollama\]"'):
        OllamaProvider.check_configuration()
    provider = OllamaProvider()  # construction needs no SDK
    with pytest.raises(OllamaDependencyImportError) as caught:
        await anext(provider.complete([Message.user("Hi")], []))
    assert isinstance(caught.value, ProviderDependencyError | ImportError)
    assert (caught.value.package, caught.value.extra) == ("ollama", "ollama")


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = "import sys, chatomon.providers.ollama; print('ollama' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# --- as an atom's nucleus ----------------------------------------------------------------


async def test_as_an_atom_nucleus(vendor, server, provider) -> None:
    server.push(vendor.stream([Text("Hello"), Text(" there."), Usage(12, 3)]))
    atom = Atom("a", ProviderNucleus(provider, system_prompt="Be kind."))
    result = await atom.chat("Hi")
    assert result.reply == "Hello there."
    assert result.report.usage == TokenUsage(input_tokens=12, output_tokens=3)
    messages = server.requests[0].json()["messages"]
    assert messages == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Hi"},
    ]


def test_chat_sync_twice_gets_a_client_per_event_loop(vendor, server, provider) -> None:
    server.push(
        vendor.stream([Text("one"), Usage(1, 1)]), vendor.stream([Text("two"), Usage(1, 1)])
    )
    atom = Atom("a", ProviderNucleus(provider))
    assert atom.chat_sync("1").reply == "one"
    assert atom.chat_sync("2").reply == "two"
