"""Tool calls a model writes as text are recognised (local_repair.extract_text_calls).

Without the grammar, or in prose the grammar lets through, models write the call inside
their text: tagged as their own template teaches, in a fenced block, after a sentence.
"""

from __future__ import annotations

import pytest

from chatomon.providers.base import ToolCall, ToolDefinition
from chatomon.providers.local_repair import extract_text_calls
from chatomon.providers.local_template import ParsedOutput

TOOLS = [
    ToolDefinition("search_managers", "Find managers.", {"type": "object"}),
    ToolDefinition("query", "Read rows.", {"type": "object"}),
]
CALL = '{"name": "query", "arguments": {"manager": "A", "filters": {"name": "x"}}}'
ARGS = {"manager": "A", "filters": {"name": "x"}}


@pytest.mark.parametrize(
    ("output", "text"),
    [
        (f"<tool_call>\n{CALL}\n</tool_call>", ""),
        (f"I will look that up.\n<tool_call>{CALL}</tool_call>", "I will look that up."),
        (f"<tool_call>\n{CALL}", ""),  # the closing tag cut off
        (f"```json\n{CALL}\n```", ""),
        (f"Let me query the data:\n```\n{CALL}\n```", "Let me query the data"),
        (
            f"To answer this I call {CALL} and then answer.",
            "To answer this I call and then answer.",
        ),
        (f"{CALL} then I answer", "then I answer"),
        (f"<function_call>{CALL}</function_call>", ""),
    ],
)
def test_a_call_inside_text_is_found_with_the_text_around_it(output: str, text: str) -> None:
    found = extract_text_calls(output, TOOLS, id_prefix="call_4")
    assert found == ParsedOutput(text=text, calls=(ToolCall("call_4_0", "query", ARGS),))


@pytest.mark.parametrize(
    "call",
    [
        '{"name": "query", "parameters": {"manager": "A", "filters": {"name": "x"}}}',
        '{"tool": "query", "args": {"manager": "A", "filters": {"name": "x"}}}',
        '{"name": "query", "input": {"manager": "A", "filters": {"name": "x"}}}',
        '{"type": "function", "function": {"name": "query", "arguments": '
        '"{\\"manager\\": \\"A\\", \\"filters\\": {\\"name\\": \\"x\\"}}"}}',
    ],
)
def test_the_shapes_other_templates_teach_are_calls(call: str) -> None:
    found = extract_text_calls(f"<tool_call>{call}</tool_call>", TOOLS)
    assert found is not None
    assert [(c.name, c.args) for c in found.calls] == [("query", ARGS)]


def test_several_calls_keep_their_order_and_ids() -> None:
    output = (
        '<tool_call>{"name": "search_managers", "arguments": {"query": "parts"}}</tool_call>\n'
        f"<tool_call>{CALL}</tool_call>"
    )
    found = extract_text_calls(output, TOOLS)
    assert found is not None
    assert [(c.id, c.name) for c in found.calls] == [
        ("call_0", "search_managers"),
        ("call_1", "query"),
    ]
    assert found.text == ""


def test_a_call_without_arguments_has_empty_arguments() -> None:
    found = extract_text_calls('Calling {"name": "search_managers"} now', TOOLS)
    assert found is not None
    assert found.calls == (ToolCall("call_0", "search_managers", {}),)


@pytest.mark.parametrize(
    "output",
    [
        "Steel, Aluminum and Cobalt.",
        '{"name": "Bolt", "unit_cost": "0.25"} is the cheapest part.',  # data, not a call
        '<tool_call>{"name": "drop_tables", "arguments": {}}</tool_call>',  # not offered
        '<tool_call>{"name": "query", "arguments": [1, 2]}</tool_call>',
        '<tool_call>{"name": "query", "arguments": "not json"}</tool_call>',
        '<tool_call>{"name": "query", "arguments": {"manager": "A"',  # cut off
        "{ not json at all }",
    ],
)
def test_text_without_an_offered_call_is_none(output: str) -> None:
    assert extract_text_calls(output, TOOLS) is None


def test_no_tools_offered_means_no_call() -> None:
    assert extract_text_calls(f"<tool_call>{CALL}</tool_call>", []) is None
