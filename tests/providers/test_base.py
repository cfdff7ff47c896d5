"""The provider-neutral types, the base class's configuration handling, the registry."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import ClassVar

import pytest

from chatomon import Atom, ConfigurationError, NucleusError, TokenUsage, Verdict, orbital
from chatomon.errors import ProviderProtocolError
from chatomon.providers import (
    BaseLLMProvider,
    Message,
    ProviderNucleus,
    ScriptedProvider,
    ToolCall,
    build_provider,
    resolve_provider,
)
from chatomon.providers.base import ClientsByLoop, decode_arguments
from chatomon.providers.testing import tool_call


class Configured(BaseLLMProvider):
    name = "configured"
    default_config: ClassVar[Mapping[str, object]] = {
        "model": "m-1",
        "timeout_seconds": 60,
        "api_key": None,
    }

    async def complete(self, messages, tools):  # pragma: no cover - not called
        yield


def test_messages_validate_tool_structure() -> None:
    call = ToolCall(id="c1", name="query", arguments={"m": 1})
    assert Message.assistant("", [call]).tool_calls == (call,)
    result = Message.tool(call, {"data": []})
    assert (result.role, result.tool_call_id, result.name, result.content) == (
        "tool",
        "c1",
        "query",
        '{"data": []}',
    )
    with pytest.raises(ValueError, match="tool_call_id"):
        Message(role="tool", content="x")
    with pytest.raises(ValueError, match="only assistant"):
        Message(role="user", content="x", tool_calls=(call,))


def test_configuration_is_copied_read_only_and_checked() -> None:
    given = {"model": "m-2"}
    provider = Configured.from_config(given)
    given["model"] = "changed"
    assert provider.provider_config == {"model": "m-2"}
    with pytest.raises(TypeError):
        provider.provider_config["model"] = "x"
    assert provider.settings["timeout_seconds"] == 60
    assert Configured(model="m-3").settings["model"] == "m-3"
    assert Configured().provider_config == {}
    with pytest.raises(ConfigurationError, match="did you mean 'timeout_seconds'") as caught:
        Configured(timeout_secs=5)
    assert caught.value.field == "timeout_secs"


def test_decode_arguments() -> None:
    assert decode_arguments('{"a": 1}', provider="p", tool="t") == {"a": 1}
    assert decode_arguments("", provider="p", tool="t") == {}
    with pytest.raises(ProviderProtocolError, match="malformed JSON"):
        decode_arguments('{"a": ', provider="p", tool="t")
    with pytest.raises(ProviderProtocolError, match="not a JSON object"):
        decode_arguments("[1]", provider="p", tool="t")


@pytest.mark.parametrize(
    ("path", "cls_name", "config"),
    [
        ("openai:gpt-4.1-mini", "OpenAIProvider", {"model": "gpt-4.1-mini"}),
        ("anthropic", "AnthropicProvider", {}),
        ("ollama:gemma4:e4b", "OllamaProvider", {"model": "gemma4:e4b"}),
        ("gemini:gemini-2.5-flash", "GeminiProvider", {"model": "gemini-2.5-flash"}),
        ("google", "GeminiProvider", {}),
        ("local", "LocalProvider", {}),
        ("chatomon.providers.testing.ScriptedProvider", "ScriptedProvider", {}),
    ],
)
def test_registry_resolves_short_forms_and_dotted_paths(path, cls_name, config) -> None:
    cls, implied = resolve_provider(path)
    assert cls.__name__ == cls_name
    assert implied == config


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("opnai:gpt-4", "did you mean 'openai'"),
        ("", "dotted class path"),
        ("no.such.module.Provider", "cannot be imported"),
        ("chatomon.providers.testing.Nope", "has no 'Nope'"),
    ],
)
def test_registry_names_bad_paths(path: str, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        resolve_provider(path)


def test_build_provider_merges_the_short_form_model() -> None:
    provider = build_provider("tests.providers.test_base.Configured", {"api_key": "k"})
    assert provider.provider_config == {"api_key": "k"}


async def test_provider_nucleus_sends_system_prompt_guidance_and_history() -> None:
    provider = ScriptedProvider([["Hi!", TokenUsage(input_tokens=9, output_tokens=1)]])
    atom = Atom("a", ProviderNucleus(provider, system_prompt="You are terse."))
    result = await atom.chat("Hello", history=[{"role": "user", "content": "before"}])
    (request,) = provider.requests
    assert [m.role for m in request.messages] == ["system", "user", "user"]
    assert request.messages[0].content == "You are terse."
    assert request.tools == ()
    assert result.reply == "Hi!"
    assert result.report.usage == TokenUsage(input_tokens=9, output_tokens=1)


async def test_provider_nucleus_passes_guidance_as_system_text() -> None:
    hint = orbital(side="input", name="hint")(lambda ctx: Verdict.allow("Be kind."))
    provider = ScriptedProvider([["ok"]])
    await Atom("a", ProviderNucleus(provider), input=[hint]).chat("Hi")
    assert provider.requests[0].messages[0].role == "system"
    assert "Be kind." in provider.requests[0].messages[0].content


async def test_a_tool_call_without_tools_offered_aborts_the_turn() -> None:
    provider = ScriptedProvider([[tool_call("query")]])
    with pytest.raises(NucleusError) as caught:
        await Atom("a", ProviderNucleus(provider)).chat("Hi")
    assert isinstance(caught.value.__cause__, ProviderProtocolError)
    assert caught.value.report.error_type == "ProviderProtocolError"


class Closable:
    """A stand-in SDK client that notes whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


def test_clients_by_loop_keep_one_client_per_event_loop() -> None:
    clients: ClientsByLoop[Closable] = ClientsByLoop(Closable)

    async def client() -> Closable:
        return clients.get()

    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        made = [loop.run_until_complete(client()) for loop in (first, second, first, second)]
        # Alternating loops (request threads, the server's) keep their own client each.
        assert made[0] is made[2] and made[1] is made[3] and made[0] is not made[1]
        # aclose closes only the running loop's client; the next use there makes a new one.
        second.run_until_complete(clients.aclose())
        assert (made[0].closed, made[1].closed) == (False, True)
        assert second.run_until_complete(client()) is not made[1]
        assert first.run_until_complete(client()) is made[0]
    finally:
        first.close()
        second.close()


def test_clients_by_loop_need_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        ClientsByLoop(Closable).get()
