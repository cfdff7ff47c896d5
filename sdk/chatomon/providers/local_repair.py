"""Repairs of the local model's output (private to `local`): cut-off calls, calls as text.

A call cut off. The bounded grammar keeps calls short, but a small `max_tokens` can still
end one midway: `{"name": "query", "arguments": {"manager": "PartMan`. Rather than fail
the turn, the provider keeps what the model finished: the text up to the last complete
value (or the last opened object or array), with the open brackets closed:
`{"name": "query", "arguments": {}}`. The tool then checks those arguments like any
other and answers with an error the model can read when something required is missing.

A call written as text. Without the grammar (or in text the grammar lets through), models
write their call inside prose or markup rather than as the whole output: a tagged call as
their own chat template teaches it (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`,
Qwen2.5 and Hermes), a fenced ```json block, or "I will call {...}". `extract_text_calls`
finds every JSON object in the text that names an offered tool, in the shapes models use
(`arguments`, `parameters`, `args` or `input`; OpenAI's `{"function": {"name",
"arguments": "<json>"}}`), and returns the calls with the rest of the text. An object that
names no offered tool is text (a model quoting data is not calling anything).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatomon.providers.base import ToolCall, ToolDefinition
from chatomon.providers.local_template import ParsedOutput

__all__ = ["close_cut_json", "extract_text_calls"]

_CLOSER = {"{": "}", "[": "]"}


@dataclass(slots=True)
class _Scan:
    """Where a scan of JSON text is: open containers, string state, the last safe cut."""

    stack: list[str] = field(default_factory=list)
    awaiting_key: list[bool] = field(default_factory=list)
    in_string: bool = False
    escaped: bool = False
    string_is_key: bool = False
    cut: tuple[int, str] | None = None

    def closers(self) -> str:
        return "".join(_CLOSER[opener] for opener in reversed(self.stack))

    def mark(self, end: int) -> None:
        """Text up to `end` is whole values: remember it with the closers it needs."""
        self.cut = (end, self.closers())

    def string_char(self, char: str, index: int) -> None:
        if self.escaped:
            self.escaped = False
        elif char == "\\":
            self.escaped = True
        elif char == '"':
            self.in_string = False
            if not self.string_is_key:
                self.mark(index + 1)

    def structural_char(self, char: str, index: int) -> None:
        in_object = bool(self.stack) and self.stack[-1] == "{"
        if char == '"':
            self.in_string = True
            self.string_is_key = in_object and self.awaiting_key[-1]
        elif char in _CLOSER:
            self.stack.append(char)
            self.awaiting_key.append(char == "{")
            self.mark(index + 1)
        elif char in "}]" and self.stack:
            self.stack.pop()
            self.awaiting_key.pop()
            self.mark(index + 1)
        elif char == ":" and in_object:
            self.awaiting_key[-1] = False
        elif char == ",":
            self.mark(index)  # the value before the comma is complete
            if in_object:
                self.awaiting_key[-1] = True


def close_cut_json(text: str) -> str | None:
    """`text`, a JSON object cut short, trimmed to its last whole value and closed.

    None when nothing worth keeping is left (not an object, or nothing complete in it).

    Examples:
        >>> close_cut_json('{"name": "query", "arguments": {"manager": "Par')
        '{"name": "query", "arguments": {}}'
        >>> close_cut_json('{"name": "get", "arguments": {"id": 3, "verbose"')
        '{"name": "get", "arguments": {"id": 3}}'
        >>> close_cut_json('{"na') is None
        True
    """
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    scan = _Scan()
    for index, char in enumerate(stripped):
        if scan.in_string:
            scan.string_char(char, index)
        else:
            scan.structural_char(char, index)
    if scan.cut is None:
        return None
    end, closers = scan.cut
    closed = stripped[:end].rstrip().rstrip(",") + closers
    try:
        value = json.loads(closed)
    except json.JSONDecodeError:
        return None
    return closed if isinstance(value, dict) and value else None


_WRAPPERS = re.compile(
    r"</?(?:tool_call|tool_calls|function_call|functioncall|tool)>|```(?:json|JSON)?",
)
"""Markup around a call written as text: tags of the models' own templates, fences."""
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def _call_of(value: Any, names: frozenset[str]) -> tuple[str, dict[str, Any]] | None:
    """(tool name, arguments) when `value` is a tool call of an offered tool."""
    if not isinstance(value, Mapping):
        return None
    if isinstance(value.get("function"), Mapping):  # OpenAI's shape, arguments as JSON text
        value = value["function"]
    name = value.get("name", value.get("tool"))
    if not isinstance(name, str) or name not in names:
        return None
    arguments: Any = next((value[key] for key in _ARGUMENT_KEYS if key in value), {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None
    return (name, dict(arguments)) if isinstance(arguments, Mapping) else None


def extract_text_calls(
    output: str, tools: Sequence[ToolDefinition], *, id_prefix: str = "call"
) -> ParsedOutput | None:
    """The tool calls written inside `output`'s text, with the text left around them.

    None when the text holds no call of an offered tool. Ids are `<id_prefix>_<index>`,
    as `parse_output` gives them.

    Examples:
        >>> from chatomon.providers.base import ToolDefinition
        >>> tools = [ToolDefinition("query", "Read rows.", {"type": "object"})]
        >>> found = extract_text_calls(
        ...     'Let me look. <tool_call>{"name": "query", "arguments": {"manager": "A"}}'
        ...     "</tool_call>",
        ...     tools,
        ... )
        >>> found.text, [(c.name, c.args) for c in found.calls]
        ('Let me look.', [('query', {'manager': 'A'})])
    """
    names = frozenset(tool.name for tool in tools)
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    kept: list[str] = []
    position = 0
    start = output.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(output, start)
        except json.JSONDecodeError:
            start = output.find("{", start + 1)
            continue
        found = _call_of(value, names)
        if found is None:
            start = output.find("{", end)
            continue
        kept.append(output[position:start])
        calls.append(ToolCall(id=f"{id_prefix}_{len(calls)}", name=found[0], args=found[1]))
        position = end
        start = output.find("{", end)
    if not calls:
        return None
    kept.append(output[position:])
    text = " ".join(" ".join(_WRAPPERS.sub(" ", part).split()) for part in kept).strip()
    return ParsedOutput(text=text.rstrip(":").strip(), calls=tuple(calls))
