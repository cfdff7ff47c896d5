"""The local model's prompt, tool grammar and output parsing (private to `local`).

SmolLM2's own chat template is plain ChatML with no notion of tools, so this module
renders the neutral history itself: a ChatML prompt whose system turn lists the offered
tools, followed by synthetic exchanges, one example call per tool built from its JSON
schema (a 135M model copies an example far better than it follows a description: on
SmolLM2-135M, structured calls went from 0 of 20 simple requests with the tools only
described to 20 of 20 with the examples and the grammar). The model answers either in
plain text or with exactly one JSON object `{"name": ..., "arguments": {...}}`; a GBNF
grammar (llama.cpp's constrained sampling) admits only those two shapes, the name being
one of the offered tools and the arguments following that tool's schema.

Everything here is pure text work, testable without llama.cpp or the model file; the
GBNF rules for the tool-call object are produced from `tool_call_schema` by llama.cpp's
own JSON-schema converter and joined to the text alternative by `assemble_grammar`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatomon.providers.base import Message, ToolCall, ToolDefinition

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "MUTATE",
    "STOP",
    "ParsedOutput",
    "assemble_grammar",
    "call_key",
    "calls_by_id",
    "clip_result",
    "compact_result",
    "example_arguments",
    "failed_calls",
    "latest_user_text",
    "must_call",
    "offered_tools",
    "parse_output",
    "render_prompt",
    "tool_call_schema",
    "tool_result",
    "tool_rounds",
]

DEFAULT_SYSTEM_PROMPT = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
"""SmolLM2's own default system turn, used when the history has none."""

STOP = ("<|im_end|>", "<|im_start|>")
"""Strings that end a ChatML assistant turn."""

_PLAIN_TEXT = 'plain-text ::= [^{[" \\t\\n] [^\\x00]*\n'
_TOOL_INTRO = "You can call tools. To call a tool, reply with only a JSON object like the examples."
_GREETING = ("Hello! Who are you?", "Hello! I am your assistant. How can I help you?")
"""A synthetic plain-text exchange shown before the tool examples, so that text stays an
option; put first, it keeps the tool examples nearest to the request."""
_ANSWER_EXAMPLE = (
    ("user", "Which colours are there?"),
    ("assistant", '{"name": "list_colours", "arguments": {}}'),
    ("tool", '{"data": [{"name": "Red"}, {"name": "Blue"}], "total_count": 2}'),
    ("assistant", "There are 2 colours: Red and Blue."),
)
"""A synthetic tool exchange answered in text, shown when the model must answer from tool
results: without it SmolLM2-135M echoes the result JSON or calls the tool again."""


_EXAMPLE_IN_DESCRIPTION = re.compile(r"e\.g\.,?\s*['\"]?([^'\".,;)]+)")
"""An example a description gives ("Manager name, e.g. PartManager.")."""


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Example arguments for a tool: its required properties, each with a typed sample.

    A sample is the property's first `examples` entry, its first `enum` value, its
    `const`, its `default`, the example its description gives ("e.g. PartManager"), or a
    placeholder of its type (a string property's name).
    """
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or () if name in properties]
    return {name: _sample(name, properties[name]) for name in required}


def _sample(name: str, schema: Mapping[str, Any]) -> Any:
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    samples: dict[str, Any] = {"integer": 1, "number": 1.5, "boolean": True, "null": None}
    if kind in samples:
        return samples[kind]
    if kind == "array":
        items = schema.get("items")
        return [_sample(name, items)] if isinstance(items, Mapping) else []
    if kind == "object":
        return example_arguments(schema)
    described = _EXAMPLE_IN_DESCRIPTION.search(str(schema.get("description", "")))
    return described.group(1).strip() if described else name.replace("_", " ")


def _call_json(name: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)


def _tools_system(tools: Sequence[ToolDefinition]) -> str:
    lines = [_TOOL_INTRO]
    for tool in tools:
        arguments = _arguments(tool.input_schema)
        lines.append(
            f"- {tool.name}: {_description(tool)}{f' Arguments: {arguments}' if arguments else ''}"
        )
    return "\n".join(lines)


_ENUM_SHOWN = 12
"""Up to this many allowed values, an argument lists them instead of its description."""


def _arguments(schema: Mapping[str, Any]) -> str:
    """A tool's top-level arguments in one line: `name: description`, `?` when optional.

    The grammar already holds the model to the argument names and types, but not to what
    they mean: told only the tools' descriptions, Qwen2.5-Coder-1.5B wrote filters such
    as `{"density": "gt", "value": "5"}`. With the arguments described (filters are
    `{field__lookup: value}`, order_by takes `-` for descending), 5 of the 14 basic_queries
    eval cases passed instead of 3 (temperature 0, the same seed); the prompt's start
    grows by about 250 tokens, read once into llama.cpp's cache.

    Examples:
        >>> print(_arguments({"properties": {"manager": {"enum": ["A", "B"]},
        ...     "limit": {"type": "integer", "description": "Rows per page."}},
        ...     "required": ["manager"]}))
        manager: one of A, B; limit?: Rows per page.
    """
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    shown = []
    for name, property_schema in properties.items():
        marker = "" if name in required else "?"
        if not isinstance(property_schema, Mapping):  # `true`: anything goes
            shown.append(f"{name}{marker}")
            continue
        enum = property_schema.get("enum")
        if isinstance(enum, list) and 0 < len(enum) <= _ENUM_SHOWN:
            meaning = "one of " + ", ".join(_cell(value) for value in enum)
        else:
            meaning = " ".join(str(property_schema.get("description", "")).split())
        shown.append(f"{name}{marker}: {meaning}" if meaning else f"{name}{marker}")
    return "; ".join(shown)


def _description(tool: ToolDefinition) -> str:
    return " ".join(tool.description.split()) or tool.name.replace("_", " ")


def _examples(tools: Sequence[ToolDefinition]) -> list[str]:
    # One synthetic exchange per tool: the tool's description as the request, the example
    # call as the answer. Measured on SmolLM2-135M, this takes structured calls from 0 to
    # nearly every tool request; a description in the system turn alone does not.
    # The examples run in reverse order, so the first tool's is nearest to the request:
    # the model copies the nearest example most (on the demo's six tools it called the
    # last one listed, `mutate`, for 9 requests in 10), and tools come first-to-think-of
    # first. The request is the description's first sentence: the full one is in the
    # system turn already, and each token here is read again for every new conversation.
    turns = [_turn("user", _GREETING[0]), _turn("assistant", _GREETING[1])]
    for tool in reversed(tools):
        turns.append(_turn("user", _request(tool)))
        turns.append(
            _turn("assistant", _call_json(tool.name, example_arguments(tool.input_schema)))
        )
    return turns


_SENTENCE_END = re.compile(r"(?<!e\.g\.)(?<=[.!?;])\s")
_REQUEST_CHARACTERS = 80


def _request(tool: ToolDefinition) -> str:
    """The example request of a tool: its description's first sentence, kept short."""
    first = _SENTENCE_END.split(_description(tool), maxsplit=1)[0].rstrip(".;!? ")
    if len(first) <= _REQUEST_CHARACTERS:
        return first
    return first[:_REQUEST_CHARACTERS].rsplit(" ", 1)[0].rstrip(",:;")


MUTATE = "mutate"
"""The tool that writes (`chatomon.chat.tools.definitions.mutate_definition`)."""


def tool_rounds(messages: Sequence[Message]) -> int:
    """How many tool-calling assistant turns there have been since the last user message."""
    return sum(1 for m in _since_user(messages) if m.role == "assistant" and m.tool_calls)


def _since_user(messages: Sequence[Message]) -> list[Message]:
    """The messages after the latest user message (all of them without one)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return list(messages[index + 1 :])
    return list(messages)


def latest_user_text(messages: Sequence[Message]) -> str:
    """The latest user message's text ("" without one)."""
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def calls_by_id(messages: Sequence[Message]) -> dict[str, ToolCall]:
    """The assistant's tool calls in `messages`, by id (a tool message names its call's)."""
    return {
        call.id: call
        for message in messages
        if message.role == "assistant"
        for call in message.tool_calls
    }


def call_key(name: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """A call as (tool name, arguments as canonical JSON): equal for the same call sent.

    Arguments JSON cannot sort (keys of mixed types) are kept as their repr.
    """
    try:
        return name, json.dumps(dict(arguments), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return name, repr(arguments)


WRITE_OUTCOMES = frozenset({"executed", "unchanged", "rejected", "timed_out"})
"""Statuses of a mutate result that leave nothing to call: the change is decided."""


def _latest_round(messages: Sequence[Message]) -> list[Message]:
    """The tool results of the latest tool round since the user's message."""
    results: list[Message] = []
    for message in reversed(messages):
        if message.role == "user" or (message.role == "assistant" and message.tool_calls):
            break
        if message.role == "tool":
            results.append(message)
    return results


def _clean_round(messages: Sequence[Message]) -> list[Mapping[str, Any]] | None:
    """The latest round's results (`_latest_round`), parsed; None when one is an error."""
    parsed = [tool_result(message) for message in _latest_round(messages)]
    results = [result for result in parsed if isinstance(result, Mapping)]
    if any(result.get("status") == "error" for result in results):
        return None
    return results


def _read_rows(messages: Sequence[Message]) -> bool:
    """Whether the latest round brought rows back and none of its results is an error.

    Rows are a result's non-empty `data` (a query) or `groups` (an aggregate); an
    empty read, a schema or a mutation's result are not.
    """
    results = _clean_round(messages)
    return results is not None and any(_has_rows(result) for result in results)


def _has_rows(result: Any) -> bool:
    if not isinstance(result, Mapping):
        return False
    return any(isinstance(result.get(key), list) and result[key] for key in ("data", "groups"))


def tool_result(message: Message) -> Any:
    """A tool message's result, parsed from its content when it holds none."""
    if isinstance(message.tool_result, Mapping):
        return message.tool_result
    try:
        return json.loads(message.content)
    except ValueError:
        return None


def _decided_write(messages: Sequence[Message]) -> bool:
    """Whether the latest tool round since the user's message was a decided mutate call."""
    latest = _latest_round(messages)  # its last result first
    if not latest or latest[0].tool_name != MUTATE:
        return False
    result = tool_result(latest[0])
    return isinstance(result, Mapping) and result.get("status") in WRITE_OUTCOMES


def offered_tools(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    max_tool_rounds: int,
    *,
    after_rows: Sequence[ToolDefinition] = (),
) -> list[ToolDefinition]:
    """The tools to offer for the next completion (none: the model answers in text).

    None after `max_tool_rounds` tool rounds since the user's message, and none once a
    mutation's outcome is in (executed, unchanged, rejected, timed out): offered tools
    again, Qwen2.5-Coder-1.5B sent the same unchanged assignment twice more before
    answering, two more rounds of a minute each on a small CPU. None either once the
    latest round brought rows back (`_read_rows`), measured on the eval datasets with
    Qwen2.5-Coder-1.5B (temperature 0, one seed): offered every tool again, it asked for
    the same rows again (other fields, or the very same call) in 6 of the 10 multi_hop
    cases until its rounds ran out, then answered with the call as text; offered only the
    tools that do not read rows, it called `mutate` with an invented rename after 3 of 14
    read-only basic_queries questions. So after a lookup a small model answers, or makes
    the write the user asked for: `after_rows` is what it is offered then
    (`local_writes.asks_for_write`: `mutate` alone, or nothing). An error anywhere in the
    round leaves every tool offered, to correct the call.
    """
    if tool_rounds(messages) >= max_tool_rounds or _decided_write(messages):
        return []
    return list(after_rows) if _read_rows(messages) else list(tools)


TRANSIENT_ERRORS = frozenset({"query_timeout"})
"""Tool error codes a second identical call may not meet (`failed_calls`)."""


def failed_calls(messages: Sequence[Message]) -> set[tuple[str, str]]:
    """The calls since the user's message that failed and would fail again, as sent.

    Each as (tool name, its arguments as canonical JSON). A tool error says what was
    wrong with the call (an unknown field, a bad value): the same call meets the same
    error, but for a transient one (`TRANSIENT_ERRORS`). Qwen2.5-Coder-1.5B sent the very
    call that had just failed again until its rounds ran out in 3 of the 33 eval cases
    (temperature 0), 10 to 20 s a round on 2 cores.
    """
    turn = _since_user(messages)
    calls = calls_by_id(turn)
    failed: set[tuple[str, str]] = set()
    for message in turn:
        call = calls.get(message.tool_call_id or "") if message.role == "tool" else None
        if call is not None and _lasting_error(tool_result(message)):
            failed.add(call_key(call.name, call.args))
    return failed


def _lasting_error(result: Any) -> bool:
    """Whether `result` is a tool error the same call meets again."""
    if not isinstance(result, Mapping) or result.get("status") != "error":
        return False
    return result.get("code") not in TRANSIENT_ERRORS


def must_call(messages: Sequence[Message]) -> bool:
    """Whether the next completion must call a tool: the latest read found its name elsewhere.

    A read that found no row, whose name the tool found in another data set (or another
    field), says so (`found_in`) with the call that finds it in its `hint`.
    Qwen2.5-Coder-1.5B answered from such an empty read instead, inventing the value (the
    eval datasets, temperature 0: "What is the gear made of?" read as a material,
    answered "1.5 g/cm³"). Any other empty read may be the answer ("there is none"). The
    round cap (`offered_tools`) still bounds the retries. After a failed read the model
    may still answer: made to call again, it sent the same failing call (the same
    datasets: no case more passed).
    """
    results = _clean_round(messages)
    if not results:
        return False
    return not any(_has_rows(result) for result in results) and any(
        isinstance(result.get("found_in"), str) for result in results
    )


def clip_result(content: str, characters: int | None) -> str:
    """A tool result cut to `characters` (None: whole), saying how much was left out.

    Examples:
        >>> clip_result('{"data": [1, 2, 3]}', 12)
        '{"data": [1,… (7 more characters)'
    """
    if characters is None or len(content) <= characters:
        return content
    return f"{content[:characters]}… ({len(content) - characters} more characters)"


_CELL_BREAKERS = frozenset("|\n\r")


def _rows(count: int) -> str:
    return "1 row" if count == 1 else f"{count} rows"


def compact_result(content: str) -> str:
    """A tool result as the model reads it best for its length: rows as lines of a table.

    A JSON object whose `data` is a list of rows with the same keys becomes its other keys
    as compact JSON, then a header line of column names and one line per row, cells
    joined by " | " (text as it is unless it holds a "|" or a line break, anything else
    as JSON), the `id` column last. An aggregate's `groups` read the same way, a group's
    keys then its values as the columns (`material__name | count`): as JSON,
    Qwen2.5-Coder-1.5B answered "3 parts use each material" from three groups of one.
    Other JSON is re-written without spaces; text that is not JSON is kept. Each token of
    a result is read before the answer (Qwen2.5-Coder-1.5B on 2 cores: about 70 a second
    with an AVX2 build of llama.cpp, 100 with AVX-512): four projects' rows take 266
    tokens this way against 389 as the tool's JSON.
    The header says how many rows there are and to answer with every one:
    Qwen2.5-Coder-1.5B named the first of two rows only, asked which materials are denser
    than 5 (the eval datasets, temperature 0: 15 of 33 cases before, 17 after).

    Examples:
        >>> rows = [{"id": 1, "name": "Red"}, {"id": 2, "name": "A|B"}]
        >>> print(compact_result(json.dumps({"data": rows, "total_count": 2})))
        {"total_count":2} data, 2 rows (answer with every one), one per line:
        name | id
        Red | 1
        "A|B" | 2
        >>> groups = [{"group": {"colour": "Red"}, "values": {"count": 2}}]
        >>> print(compact_result(json.dumps({"groups": groups, "has_more": False})))
        {"has_more":false} groups, 1 row (answer with every one), one per line:
        colour | count
        Red | 2
    """
    try:
        value = json.loads(content)
    except ValueError:
        return content
    found = _rows_held(value)
    columns = None if found is None else _columns(found[1])
    if found is None or columns is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    key, rows = found
    rest = {name: item for name, item in value.items() if name != key}
    return _table(rest, key, rows, columns)


def _rows_held(value: Any) -> tuple[str, Any] | None:
    """The rows a result holds, as (its key, the rows): a read's `data`, an aggregate's groups."""
    if not isinstance(value, dict):
        return None
    groups = value.get("groups")
    if isinstance(groups, list) and all(_is_group(group) for group in groups):
        return "groups", [{**group["group"], **group["values"]} for group in groups]
    return "data", value.get("data")


def _is_group(group: Any) -> bool:
    """Whether `group` is one of an aggregate's groups: `{"group": {...}, "values": {...}}`.

    Not when a key is both a group's and a value's (one would hide the other in a row).
    """
    if not isinstance(group, dict):
        return False
    keys, values = group.get("group"), group.get("values")
    return isinstance(keys, dict) and isinstance(values, dict) and not keys.keys() & values.keys()


def _table(rest: Mapping[str, Any], key: str, rows: list[Any], columns: list[str]) -> str:
    """The result's other keys, then its rows as a table with a header line."""
    # The id last: read first, "1 | Bolt" made the row with id 1 the first one for the
    # model, asked which part comes first alphabetically of rows ordered by name (the
    # eval datasets, temperature 0: 13 of 33 cases with the id first, 14 with it last).
    columns = [*(c for c in columns if c != "id"), *(c for c in columns if c == "id")]
    lines = [
        f"{json.dumps(rest, ensure_ascii=False, separators=(',', ':'))} {key}, {_rows(len(rows))}"
        " (answer with every one), one per line:",
        " | ".join(_cell(column) for column in columns),
    ]
    lines.extend(" | ".join(_cell(row[column]) for column in columns) for row in rows)
    return "\n".join(lines)


def _columns(rows: Any) -> list[str] | None:
    """The shared keys of a non-empty list of rows, or None when it is not such a table."""
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return None
    columns = list(rows[0])
    if not columns or any(list(row) != columns for row in rows):
        return None
    return columns


def _cell(value: Any) -> str:
    """Text as it is when it cannot be read as anything else; other values as JSON.

    Text that would read as a number or a JSON literal ("1001", "null"), or that holds a
    cell break or edge spaces, is quoted: the model must not take the text "1001" for
    the number.
    """
    if isinstance(value, str) and value == value.strip() and _plain(value):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _plain(text: str) -> bool:
    if not text or _CELL_BREAKERS.intersection(text):
        return False
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def render_prompt(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    *,
    offer_tools: bool = True,
    result_characters: int | None = None,
) -> str:
    """The ChatML prompt for `messages`, ending with an open assistant turn.

    Tools are listed at the end of the one system turn, followed by synthetic example
    exchanges (a greeting answered in text, then one call per tool). When tools were
    called but are no longer offered (`offer_tools=False`), a synthetic tool exchange
    answered in text follows them. The tools stay in the prompt either way, so every
    completion of a conversation starts with the same prefix and llama.cpp's prompt
    cache skips re-reading it (measured: the next call in 0.5 s instead of 2 s). An
    assistant tool call is rendered as the JSON object the model itself writes; a tool
    result as a `tool` turn holding the result (`compact_result`: rows as table lines),
    cut to `result_characters` so that a long one (50 rows of a query) still leaves room
    in a small context.
    """
    systems = [m.content for m in messages if m.role == "system" and m.content]
    system = "\n\n".join(systems) or DEFAULT_SYSTEM_PROMPT
    if tools:
        system = f"{system}\n\n{_tools_system(tools)}"
    parts = [_turn("system", system)]
    if tools:
        parts.extend(_examples(tools))
    if not offer_tools and tool_rounds(messages):
        # After the tool examples, not before: placed first it cost about 10 points of
        # right-tool choice on SmolLM2-135M.
        parts.extend(_turn(role, content) for role, content in _ANSWER_EXAMPLE)
    for message in messages:
        if message.role == "system":
            continue  # merged into the one system turn above: ChatML models expect it first
        if message.role == "assistant" and message.tool_calls:
            calls = "\n".join(_call_json(c.name, c.args) for c in message.tool_calls)
            text = f"{message.content}\n{calls}" if message.content else calls
            parts.append(_turn("assistant", text))
        elif message.role == "tool":
            result = compact_result(message.content)
            parts.append(_turn("tool", clip_result(result, result_characters)))
        else:
            parts.append(_turn(message.role, message.content))
    return "".join(parts) + "<|im_start|>assistant\n"


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def tool_call_schema(tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """JSON schema of one tool call: `{"name": <offered tool>, "arguments": <its schema>}`."""
    alternatives = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool.name},
                "arguments": _closed(tool.input_schema),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}


def _closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    # A schema that leaves additionalProperties open lets the grammar wander into
    # arbitrary keys, which a small model does; tools describe their keys, so close it.
    closed = _convertible(schema)
    closed.setdefault("type", "object")
    closed.setdefault("properties", {})
    closed.setdefault("additionalProperties", False)
    return closed


_ANY_ITEM = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "object"}]}


def _convertible(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with untyped array items (`"items": {}`) spelled out for the converter.

    llama.cpp's Python converter fails on an empty `items` schema; a string, number or
    object covers what such items hold in practice (e.g. a name or `{relation: [...]}`).
    """
    result = dict(schema)
    if isinstance(result.get("properties"), Mapping):
        result["properties"] = {
            key: _convertible(value) if isinstance(value, Mapping) else value
            for key, value in result["properties"].items()
        }
    items = result.get("items")
    if isinstance(items, Mapping):
        result["items"] = _convertible(items) if items else dict(_ANY_ITEM)
    return result


_ROOT_RULE = re.compile(r"^root\s*::=", re.MULTILINE)
_TOOL_CALL_RULE = re.compile(r"^tool-call\s*::=", re.MULTILINE)


def assemble_grammar(call_rules: str, *, text: bool = True) -> str:
    """The full GBNF grammar: plain text, or one tool call matching `call_rules`.

    `call_rules` is `local_grammar.tool_call_rules` (a `tool-call` rule), or llama.cpp's
    GBNF for `tool_call_schema` (its root rule is renamed to `tool-call`).
    Text may not start with `{`, `[`, `"` or whitespace, so the first token decides which
    of the two it writes. `text=False`: the call only (`must_call`).
    """
    if _ROOT_RULE.search(call_rules):
        call_rules = _ROOT_RULE.sub("tool-call ::=", call_rules, count=1)
    elif not _TOOL_CALL_RULE.search(call_rules):
        raise ValueError("the tool-call grammar has no root rule (nor a tool-call rule)")
    if not text:
        return f"root ::= tool-call\n{call_rules.strip()}\n"
    return f"root ::= tool-call | plain-text\n{_PLAIN_TEXT}{call_rules.strip()}\n"


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    """A finished model output: its text, or the tool calls it made."""

    text: str
    calls: tuple[ToolCall, ...]


def parse_output(
    output: str, tools: Sequence[ToolDefinition], *, id_prefix: str = "call"
) -> ParsedOutput:
    """Split a finished output into text or tool calls.

    An output that is a JSON object (or several, one per line) naming offered tools is a
    tool call; anything else is text. Ids are `<id_prefix>_<index>`, so the same history
    gives the same ids.

    Raises:
        ValueError: The output starts like a tool call but is not a valid one (cut short
            by max_tokens, an unknown tool, arguments that are not an object).
    """
    stripped = output.strip()
    if not stripped.startswith("{"):
        return ParsedOutput(text=output, calls=())
    names = {tool.name for tool in tools}
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    position = 0
    while position < len(stripped):
        try:
            value, end = decoder.raw_decode(stripped, position)
        except json.JSONDecodeError:
            raise ValueError(f"incomplete tool call JSON at character {position}") from None
        if not isinstance(value, dict) or value.get("name") not in names:
            raise ValueError("the output names no offered tool")
        arguments = value.get("arguments", {})
        if not isinstance(arguments, dict):
            raise ValueError(f"tool {value['name']!r} arguments are not a JSON object")
        calls.append(ToolCall(id=f"{id_prefix}_{len(calls)}", name=value["name"], args=arguments))
        position = end
        while position < len(stripped) and stripped[position].isspace():
            position += 1
    return ParsedOutput(text="", calls=tuple(calls))
