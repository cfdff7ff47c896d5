"""Which reads LocalProvider offers its model: a count asked for is the database's to make."""

from __future__ import annotations

import json

import pytest

from chatomon.providers import Message, ToolCallEvent
from chatomon.providers.base import ToolDefinition
from chatomon.providers.local import LocalProvider
from chatomon.providers.local_reads import asks_for_count, without_query_for_count
from tests.providers.fake_llama import FakeLlamaCpp, events, grammar_names


def tool(name: str) -> ToolDefinition:
    schema = {"type": "object", "properties": {"manager": {"type": "string"}}}
    return ToolDefinition(name, f"The {name} tool.", schema)


QUERY, AGGREGATE, SCHEMA = tool("query"), tool("aggregate"), tool("get_manager_schema")
TOOLS = [SCHEMA, QUERY, AGGREGATE]


@pytest.mark.parametrize(
    ("message", "asks"),
    [
        ("How many parts are made of materials denser than 5?", True),
        ("HOW  MANY projects?", True),
        ("What is the number of projects?", True),
        ("Count the parts of Apollo", True),
        ("Which parts are there?", False),
        ("How dense is the Bearing?", False),
        ("Which countries are listed?", False),  # "count" as a whole word only
        ("What is the part number of the Bolt?", False),
        ("Which materials have a stock count above 5?", False),
        ("List the projects and tell me how many materials there are.", False),  # rows too
    ],
)
def test_a_count_is_asked_for_in_so_many_words(message: str, asks: bool) -> None:
    assert asks_for_count([Message.user("How many parts?"), Message.user(message)]) is asks


def test_a_count_is_offered_aggregate_and_no_query() -> None:
    asked = [Message.user("How many parts?")]
    assert [t.name for t in without_query_for_count(asked, TOOLS)] == [
        "get_manager_schema",
        "aggregate",
    ]
    # Without aggregate, query stays: a count read from rows beats none.
    assert [t.name for t in without_query_for_count(asked, [SCHEMA, QUERY])] == [
        "get_manager_schema",
        "query",
    ]
    # Any other question keeps every tool.
    assert without_query_for_count([Message.user("Which parts?")], TOOLS) == TOOLS


async def test_the_model_asked_how_many_may_call_aggregate_but_not_query(
    fake: FakeLlamaCpp,
) -> None:
    count = {"manager": "PartManager", "metrics": [{"op": "count"}]}
    fake.script = [[json.dumps({"name": "aggregate", "arguments": count})]]
    got = await events(LocalProvider(), [Message.user("How many parts are there?")], TOOLS)
    assert [grammar_names(c, TOOLS) for c in fake.calls] == [{"get_manager_schema", "aggregate"}]
    assert [(e.name, e.args) for e in got if isinstance(e, ToolCallEvent)] == [("aggregate", count)]
