"""The provider protocol's names: the reference's field names, chatomon's as exact aliases.

Issue 18, item 4: "A provider written for the reference reads `ToolDefinition.input_schema`,
yields `ToolCallEvent(id=..., name=..., args=...)`, and receives tool results through the
`Message` tool fields (`tool_name`, a structured `tool_result`)." The reference
(chat-api-reference.txt) documents these as dataclasses: "ToolDefinition dataclass ¶
Provider-agnostic tool schema exposed to an LLM provider.", "ToolCallEvent dataclass ¶
Provider request to execute one configured chat tool.", "Message dataclass ¶
Provider-neutral chat history, including structured tool exchanges."
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from chatomon.providers.base import (
    TOOL_RESULT_MISSING,
    Message,
    ToolCall,
    ToolCallEvent,
    ToolDefinition,
)

SCHEMA = {"type": "object", "properties": {"manager": {"type": "string"}}}
ARGS = {"manager": "PartManager"}


# ToolDefinition.input_schema, alias parameters ---------------------------------------------


def test_a_tool_definition_is_built_with_either_name_and_reads_both() -> None:
    """Reference: the provider "reads `ToolDefinition.input_schema`" (issue 18, item 4)."""
    by_reference = ToolDefinition(name="query", description="Query.", input_schema=SCHEMA)
    by_alias = ToolDefinition(name="query", description="Query.", parameters=SCHEMA)
    positional = ToolDefinition("query", "Query.", SCHEMA)
    assert by_reference == by_alias == positional
    for tool in (by_reference, by_alias, positional):
        assert tool.input_schema is SCHEMA
        assert tool.parameters is SCHEMA
    assert ToolDefinition("ping", "Ping.").input_schema == {"type": "object", "properties": {}}


def test_a_tool_definition_refuses_both_names_at_once() -> None:
    with pytest.raises(TypeError, match="both 'input_schema' and its alias 'parameters'"):
        ToolDefinition("q", "d", SCHEMA, parameters=SCHEMA)


def test_a_tool_definition_serializes_under_the_reference_name() -> None:
    tool = ToolDefinition("query", "Query.", parameters=SCHEMA)
    assert [f.name for f in dataclasses.fields(ToolDefinition)] == [
        "name",
        "description",
        "input_schema",
    ]
    as_dict = dataclasses.asdict(tool)
    assert as_dict == {"name": "query", "description": "Query.", "input_schema": SCHEMA}
    assert json.loads(json.dumps(as_dict)) == as_dict
    assert dataclasses.replace(tool, input_schema={}).parameters == {}
    assert "input_schema=" in repr(tool)


@pytest.mark.parametrize("key", ["input_schema", "parameters"])
def test_pydantic_validates_a_tool_definition_under_either_name(key: str) -> None:
    adapter = TypeAdapter(ToolDefinition)
    data = {"name": "query", "description": "Query.", key: SCHEMA}
    tool = adapter.validate_python(data)
    assert tool == ToolDefinition("query", "Query.", SCHEMA)
    assert adapter.validate_json(json.dumps(data)) == tool
    assert adapter.dump_python(tool) == {
        "name": "query",
        "description": "Query.",
        "input_schema": SCHEMA,
    }


# ToolCallEvent.args, alias arguments; ToolCall is ToolCallEvent ----------------------------


def test_a_tool_call_is_built_with_either_name_and_reads_both() -> None:
    """Reference: "ToolCallEvent with a stable ID, tool name, and decoded argument mapping"."""
    by_reference = ToolCallEvent(id="c1", name="query", args=ARGS)
    by_alias = ToolCallEvent(id="c1", name="query", arguments=ARGS)
    positional = ToolCallEvent("c1", "query", ARGS)
    assert by_reference == by_alias == positional
    for call in (by_reference, by_alias, positional):
        assert call.args is ARGS
        assert call.arguments is ARGS
    assert ToolCallEvent("c2", "ping").args == {}


def test_the_history_tool_call_is_the_event_type_itself() -> None:
    """In the reference, `Message.tool_calls` holds ToolCallEvents: one type, equal values."""
    assert ToolCall is ToolCallEvent
    history_call = ToolCall(id="c1", name="query", arguments=ARGS)
    assert history_call == ToolCallEvent(id="c1", name="query", args=ARGS)
    message = Message(role="assistant", content="", tool_calls=(history_call,))
    assert message == Message.assistant("", [ToolCallEvent("c1", "query", ARGS)])
    assert message.tool_calls[0].args == ARGS


def test_a_tool_call_refuses_both_names_at_once() -> None:
    with pytest.raises(TypeError, match="both 'args' and its alias 'arguments'"):
        ToolCallEvent("c1", "query", ARGS, arguments=ARGS)


def test_a_tool_call_serializes_to_dict_and_json() -> None:
    call = ToolCallEvent("c1", "query", arguments=ARGS)
    assert dataclasses.asdict(call) == {"id": "c1", "name": "query", "args": ARGS}
    assert call.__match_args__ == ("id", "name", "args")
    # to_dict is the form stored rows already hold; from_dict reads it and the reference's.
    stored = call.to_dict()
    assert stored == {"id": "c1", "name": "query", "arguments": ARGS}
    assert ToolCallEvent.from_dict(json.loads(json.dumps(stored))) == call
    assert ToolCallEvent.from_dict({"id": "c1", "name": "query", "args": ARGS}) == call
    assert dataclasses.replace(call, args={}).arguments == {}


@pytest.mark.parametrize("key", ["args", "arguments"])
def test_pydantic_validates_a_tool_call_under_either_name(key: str) -> None:
    class Holder(BaseModel):
        call: ToolCallEvent

    data = {"id": "c1", "name": "query", key: ARGS}
    held = Holder.model_validate({"call": data})
    assert held.call == ToolCallEvent("c1", "query", ARGS)
    assert Holder.model_validate_json(json.dumps({"call": data})) == held
    assert held.model_dump() == {"call": {"id": "c1", "name": "query", "args": ARGS}}


# Message.tool_name (alias name) and the structured tool_result --------------------------


def test_a_tool_message_is_built_with_either_name_and_reads_both() -> None:
    """Reference: custom providers receive tool history "through the Message tool fields"."""
    by_reference = Message(
        role="tool", content="{}", tool_call_id="c1", tool_name="query", tool_result={}
    )
    by_alias = Message(role="tool", content="{}", tool_call_id="c1", name="query", tool_result={})
    positional = Message("tool", "{}", (), "c1", "query", {})
    assert by_reference == by_alias == positional
    for message in (by_reference, by_alias, positional):
        assert message.tool_name == message.name == "query"


def test_a_message_refuses_both_names_at_once() -> None:
    with pytest.raises(TypeError, match="both 'tool_name' and its alias 'name'"):
        Message(role="tool", tool_call_id="c1", tool_name="query", name="query")


def test_a_tool_result_message_carries_the_structured_result_and_its_text() -> None:
    """Reference: "Provider history keeps tool call IDs, names, arguments, and results as
    structured data."
    """
    call = ToolCallEvent("c1", "query", ARGS)
    result = {"data": [{"name": "Bolt"}], "total_count": 1}
    message = Message.tool(call, result)
    assert (message.role, message.tool_call_id, message.tool_name) == ("tool", "c1", "query")
    assert message.tool_result == result
    assert json.loads(message.content) == result
    assert Message.tool(call, "plain text").content == "plain text"
    # Given only the structured result, the text is written from it.
    only_result = Message(role="tool", tool_call_id="c1", tool_name="query", tool_result=result)
    assert only_result == message
    # A tool may return None: that is a result, not a missing one.
    assert Message.tool(call, None).tool_result is None
    assert Message.tool(call, None).content == "null"


def test_a_message_without_a_tool_result_holds_the_missing_marker() -> None:
    message = Message.user("Hi")
    assert message.tool_result is TOOL_RESULT_MISSING
    text_only = Message(role="tool", content="[]", tool_call_id="c1", name="query")
    assert text_only.tool_result is TOOL_RESULT_MISSING
    assert repr(TOOL_RESULT_MISSING) == "TOOL_RESULT_MISSING"
    # The marker stays itself through the copies that asdict, copy and pickle make.
    assert dataclasses.asdict(message)["tool_result"] is TOOL_RESULT_MISSING
    assert copy.deepcopy(message) == message
    assert pickle.loads(pickle.dumps(message)) == message


def test_only_tool_messages_carry_tool_fields() -> None:
    call = ToolCallEvent("c1", "query")
    with pytest.raises(ValueError, match="only tool messages carry a tool_result"):
        Message(role="assistant", content="x", tool_result={})
    with pytest.raises(ValueError, match="tool_call_id"):
        Message(role="tool", content="x", tool_name="query")
    with pytest.raises(ValueError, match="only assistant"):
        Message(role="user", content="x", tool_calls=(call,))


def test_a_message_serializes_under_the_reference_names() -> None:
    call = ToolCallEvent("c1", "query", ARGS)
    message = Message.tool(call, {"total_count": 3})
    assert [f.name for f in dataclasses.fields(Message)] == [
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "tool_name",
        "tool_result",
    ]
    as_dict = dataclasses.asdict(message)
    assert as_dict["tool_name"] == "query"
    assert as_dict["tool_result"] == {"total_count": 3}
    assert dataclasses.replace(message, tool_name="count").name == "count"


def test_a_message_round_trips_through_its_json_form() -> None:
    call = ToolCallEvent("c1", "query", ARGS)
    history = [Message.user("Hi"), Message.assistant("", [call]), Message.tool(call, [1, 2])]
    stored = json.loads(json.dumps([m.to_dict() for m in history]))
    assert [Message.from_dict(m) for m in stored] == history
    assert stored[2]["tool_name"] == "query" and stored[2]["tool_result"] == [1, 2]
    assert "tool_result" not in stored[0]  # JSON has no marker: absent means missing


def test_a_message_reads_the_earlier_json_form() -> None:
    """Suspended turns saved before the reference's names: `name`, and no `tool_result`."""
    earlier: dict[str, Any] = {
        "role": "tool",
        "content": "[]",
        "tool_calls": [],
        "tool_call_id": "c1",
        "name": "query",
    }
    message = Message.from_dict(earlier)
    assert message.tool_name == "query"
    assert message.tool_result is TOOL_RESULT_MISSING


@pytest.mark.parametrize("key", ["tool_name", "name"])
def test_pydantic_validates_a_message_under_either_name(key: str) -> None:
    adapter = TypeAdapter(Message)
    data = {
        "role": "tool",
        "tool_call_id": "c1",
        key: "query",
        "tool_result": {"total_count": 3},
        "content": '{"total_count": 3}',
    }
    message = adapter.validate_python(data)
    assert message == Message.tool(ToolCallEvent("c1", "query"), {"total_count": 3})
    assert adapter.validate_json(json.dumps(data)) == message
    dumped = adapter.dump_python(message)
    assert dumped["tool_name"] == "query" and "name" not in dumped


def test_pydantic_validation_runs_the_message_checks() -> None:
    adapter = TypeAdapter(Message)
    with pytest.raises(ValidationError, match="tool_call_id"):
        adapter.validate_python({"role": "tool", "content": "x", "name": "query"})
    calls = [{"id": "c1", "name": "query", "arguments": ARGS}]
    message = adapter.validate_python({"role": "assistant", "tool_calls": calls})
    assert message.tool_calls == (ToolCallEvent("c1", "query", ARGS),)
