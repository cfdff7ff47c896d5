"""The local model's bounded tool-call grammar and the closing of a cut-off call.

The grammar is checked as text: `longest` below reads the GBNF subset `local_grammar`
writes and computes the longest output it admits, so "every call is short" is a number.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest

from chatomon.chat.tools import definitions
from chatomon.providers import ToolDefinition
from chatomon.providers import local_grammar as grammar
from chatomon.providers.local_repair import close_cut_json

_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:\\.|[^"\\])*")|(?P<cls>\[(?:\\.|[^\]\\])*\])|(?P<rep>\{\d+,\d+\})'
    r"|(?P<name>[a-zA-Z0-9-]+)|(?P<op>[()|?*+]))"
)


def _rules(text: str) -> dict[str, str]:
    rules = {}
    for line in text.strip().splitlines():
        name, _, body = line.partition(" ::= ")
        rules[name] = body
    return rules


def longest(text: str, start: str = "tool-call") -> int:
    """The most characters the rule `start` admits (fails on unbounded `*` or `+`)."""
    rules = _rules(text)

    @cache
    def rule(name: str) -> int:
        return sequence(tokens(rules[name]))[0]

    def tokens(body: str) -> list[tuple[str, str]]:
        found, position = [], 0
        while position < len(body.rstrip()):
            match = _TOKEN.match(body, position)
            assert match, body[position:]
            kind = match.lastgroup or ""
            found.append((kind, match.group(kind)))
            position = match.end()
        return found

    def sequence(items: list[tuple[str, str]], index: int = 0) -> tuple[int, int]:
        # Returns (longest, index after the sequence), stopping at ")" or the end.
        best, total = 0, 0
        while index < len(items):
            kind, value = items[index]
            if value == ")":
                break
            if value == "|":
                best, total, index = max(best, total), 0, index + 1
                continue
            if value == "(":
                size, index = sequence(items, index + 1)
                index += 1
            elif kind == "lit":
                size, index = len(json.loads(value)), index + 1
            elif kind == "cls":
                size, index = 1, index + 1
            else:
                assert kind == "name", f"unbounded {value!r} in {items}"
                size, index = rule(value), index + 1
            if index < len(items) and items[index][0] == "rep":
                size *= int(items[index][1].strip("{}").split(",")[1])
                index += 1
            elif index < len(items) and items[index][1] == "?":
                index += 1
            assert index >= len(items) or items[index][1] not in "*+", "unbounded repetition"
            total += size
        return max(best, total), index

    return rule(start)


def demo_tools() -> list[ToolDefinition]:
    """The demo's six chat tools: discovery, then mutate with its free-form input."""
    return [*definitions.discovery_definitions(50), definitions.mutate_definition(())]


def test_every_call_of_the_chat_tools_is_bounded() -> None:
    rules = grammar.tool_call_rules(demo_tools())
    assert "*" not in re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', "", rules)
    # A free-form `input` once let the model write until max_tokens; now every call has
    # a length limit: query, the longest, with every optional key, a few thousand
    # characters of 1-character escapes; what the model writes is far shorter.
    assert longest(rules) < 3000
    assert longest(rules, "t5-call") < 1200  # mutate: a name and three short pairs


def test_strings_arrays_and_free_objects_have_limits() -> None:
    tool = ToolDefinition(
        "t",
        "t",
        {
            "type": "object",
            "properties": {
                "code": {"type": "string", "maxLength": 5},
                "words": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "tags": {"type": "array", "items": {"type": "string"}},
                "extra": {"type": "object"},
            },
            "required": ["code"],
        },
    )
    rules = grammar.tool_call_rules([tool])
    word = 2 + grammar.STRING_CHARACTERS * 2  # quotes, each character maybe an escape
    assert longest(rules, "t0-args-code") == 2 + 5 * 2
    more = 2  # ", " before each item after the first
    assert longest(rules, "t0-args-words") == 2 + word + (more + word) + 1  # [ a, b]
    tags = 2 + word + (grammar.ARRAY_ITEMS - 1) * (more + word) + 1
    assert longest(rules, "t0-args-tags") == tags
    pair = 2 + 2 * grammar.KEY_CHARACTERS + 3 + longest(rules, "free-value")  # "k" : v
    extra = 2 + pair + (grammar.FREE_PROPERTIES - 1) * (more + pair) + 1
    assert longest(rules, "t0-args-extra") == extra


def test_names_enums_and_consts_are_literals() -> None:
    tool = ToolDefinition(
        "count_rows",
        "Count.",
        {
            "type": "object",
            "properties": {"op": {"enum": ["count", "sum"]}, "v": {"const": 2}},
            "required": ["op"],
        },
    )
    rules = _rules(grammar.tool_call_rules([tool]))
    assert rules["t0-args-op"] == '"\\"count\\"" | "\\"sum\\""'
    assert rules["t0-args-v"] == '"2"'
    assert '"\\"count_rows\\""' in rules["t0-call"]


def test_an_object_without_required_keys_may_start_with_any_of_them() -> None:
    tool = ToolDefinition(
        "t",
        "t",
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}},
    )
    body = _rules(grammar.tool_call_rules([tool]))["t0-args"]
    assert body == '"{" ws ( ( t0-args-a-kv ( "," ws t0-args-b-kv )? ) | ( t0-args-b-kv ) )? "}"'


def test_a_tool_without_parameters_takes_an_empty_object() -> None:
    rules = _rules(grammar.tool_call_rules([ToolDefinition("ping", "Ping.")]))
    assert rules["t0-args"] == '"{" ws "}"'


@pytest.mark.parametrize("keyword", ["$ref", "allOf", "pattern", "format"])
def test_keywords_it_cannot_honour_are_unsupported(keyword: str) -> None:
    schema: dict[str, Any] = {"type": "string", keyword: "x"}
    tool = ToolDefinition("t", "t", {"type": "object", "properties": {"a": schema}})
    with pytest.raises(grammar.UnsupportedSchemaError, match=re.escape(keyword)):
        grammar.tool_call_rules([tool])


# --- closing a cut-off call -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cut", "closed"),
    [
        ('{"name": "q", "arguments": {"f": [1, 2', '{"name": "q", "arguments": {"f": [1]}}'),
        ('{"name": "q", "arguments": {"m": "say \\"hi', '{"name": "q", "arguments": {}}'),
        ('{"name": "q", "arguments": {"m": "a,b", ', '{"name": "q", "arguments": {"m": "a,b"}}'),
        ('{"name": "q", "argu', '{"name": "q"}'),
        ('{"name": "q", "arguments": {}}', '{"name": "q", "arguments": {}}'),
    ],
)  # fmt: skip
def test_a_cut_call_is_closed_after_its_last_whole_value(cut: str, closed: str) -> None:
    assert close_cut_json(cut) == closed
    json.loads(closed)


@pytest.mark.parametrize("cut", ["", "Hello", "[1, 2", "{", '{"name', '{"name": "q'])
def test_nothing_worth_keeping_is_none(cut: str) -> None:
    assert close_cut_json(cut) is None
