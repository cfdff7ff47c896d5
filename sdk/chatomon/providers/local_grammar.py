"""A bounded GBNF grammar for the local model's tool calls (private to `local`).

llama.cpp's own JSON-schema converter admits strings, arrays and free-form objects of any
length: SmolLM2-135M, given `"input": {"type": "object"}`, wrote keys and values until
max_tokens cut the call off (3 demo requests in 5 ended so, after 15-25 s). This module
writes the grammar itself, with every part bounded, so that any call the grammar admits
is short:

- a string holds at most `STRING_CHARACTERS` characters (fewer when the schema's
  `maxLength` says so), without control characters;
- an array at most `ARRAY_ITEMS` items (or the schema's `maxItems`);
- an integer at most `INTEGER_DIGITS` digits, a number's fraction at most 6;
- a free-form object (no `properties`) at most `FREE_PROPERTIES` keys of at most
  `KEY_CHARACTERS` characters, with a scalar or a short array of scalars each;
- an object with `properties` only those properties, each once, required ones first,
  in the schema's order.

Whitespace is one optional space where JSON allows it. Keywords it cannot honour (`$ref`,
`allOf`, `not`, `pattern`, `format`, ...) raise `UnsupportedSchemaError`; the provider then falls
back to llama.cpp's converter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ARRAY_ITEMS",
    "FREE_PROPERTIES",
    "INTEGER_DIGITS",
    "KEY_CHARACTERS",
    "STRING_CHARACTERS",
    "UnsupportedSchemaError",
    "tool_call_rules",
]

STRING_CHARACTERS = 40
"""The longest string value (a manager name, a search phrase, a part number)."""
KEY_CHARACTERS = 32
"""The longest key of a free-form object (a filter such as `parts__number__iexact`)."""
ARRAY_ITEMS = 4
"""The most items of an array."""
FREE_PROPERTIES = 3
"""The most keys of a free-form object."""
INTEGER_DIGITS = 9
"""The most digits of an integer (and of a number's integral part)."""

_RULE_NAME = re.compile(r"[^a-zA-Z0-9-]+")
_UNSUPPORTED = ("$ref", "allOf", "not", "if", "pattern", "format", "patternProperties")
_COMMON = {
    "ws": '" "?',
    "char": r'[^"\\\x00-\x1F\x7F] | "\\" ["\\/nt]',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "integer": f'"-"? [0-9]{{1,{INTEGER_DIGITS}}}',
    "number": f'"-"? [0-9]{{1,{INTEGER_DIGITS}}} ("." [0-9]{{1,6}})?',
}


class UnsupportedSchemaError(ValueError):
    """A tool schema uses a keyword this grammar does not express."""


def _literal(value: Any) -> str:
    """A GBNF literal matching exactly the JSON text of `value`."""
    text = json.dumps(value, ensure_ascii=False)
    return json.dumps(text, ensure_ascii=False)


def _bounded(schema: Mapping[str, Any], key: str, default: int) -> int:
    value = schema.get(key)
    return min(value, default) if isinstance(value, int) and value >= 0 else default


class _Rules:
    """The rules of one grammar, each body written once under a stable name."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = dict(_COMMON)
        self._names: dict[str, str] = {body: name for name, body in _COMMON.items()}

    def add(self, hint: str, body: str) -> str:
        known = self._names.get(body)
        if known is not None:
            return known
        hint = _RULE_NAME.sub("-", hint)  # GBNF names: letters, digits and dashes
        name = hint if hint not in self.rules else f"{hint}-{len(self.rules)}"
        self.rules[name] = body
        self._names[body] = name
        return name

    def visit(self, schema: Any, hint: str) -> str:
        if not isinstance(schema, Mapping) or not schema:
            return self.free_value()
        used = [key for key in _UNSUPPORTED if key in schema]
        if used:
            raise UnsupportedSchemaError(f"{hint}: {', '.join(used)} is not supported")
        if "const" in schema:
            return self.add(hint, _literal(schema["const"]))
        if "enum" in schema:
            return self.add(hint, " | ".join(_literal(v) for v in schema["enum"]) or '"null"')
        choices = schema.get("anyOf") or schema.get("oneOf")
        if choices:
            parts = [self.visit(choice, f"{hint}-{i}") for i, choice in enumerate(choices)]
            return self.add(hint, " | ".join(parts))
        kind = schema.get("type")
        if isinstance(kind, list):
            parts = [self.visit({**schema, "type": k}, f"{hint}-{k}") for k in kind]
            return self.add(hint, " | ".join(parts))
        return self.typed(schema, kind, hint)

    def typed(self, schema: Mapping[str, Any], kind: Any, hint: str) -> str:
        if kind == "string":
            longest = _bounded(schema, "maxLength", STRING_CHARACTERS)
            return self.add(hint, rf'"\"" char{{0,{longest}}} "\""')
        if kind in ("integer", "number", "boolean", "null"):
            return str(kind)
        if kind == "array":
            item = self.visit(schema.get("items"), f"{hint}-item")
            return self.add(hint, _array(item, _bounded(schema, "maxItems", ARRAY_ITEMS)))
        if kind == "object" or (kind is None and "properties" in schema):
            if schema.get("properties"):
                return self.closed_object(schema, hint)
            return self.free_object(schema.get("additionalProperties"), hint)
        if kind is None:
            return self.free_value()
        raise UnsupportedSchemaError(f"{hint}: type {kind!r} is not supported")

    def closed_object(self, schema: Mapping[str, Any], hint: str) -> str:
        properties: Mapping[str, Any] = schema["properties"]
        required = [k for k in properties if k in set(schema.get("required") or ())]
        optional = [k for k in properties if k not in required]
        pair = {
            key: self.add(
                f"{hint}-{key}-kv",
                f'{_literal(key)} ws ":" ws {self.visit(properties[key], f"{hint}-{key}")}',
            )
            for key in properties
        }
        head = ' "," ws '.join(pair[key] for key in required)
        tail = " ".join(f'( "," ws {pair[key]} )?' for key in optional)
        if head:
            body = f"{head} {tail}".strip()
        elif optional:
            # No required key: the first key written has no comma before it.
            starts = [
                " ".join([pair[key], *(f'( "," ws {pair[k]} )?' for k in optional[i + 1 :])])
                for i, key in enumerate(optional)
            ]
            body = f"( {' | '.join(f'( {s} )' for s in starts)} )?"
        else:
            body = ""
        return self.add(hint, f'"{{" ws {body} "}}"')

    def free_object(self, values: Any, hint: str) -> str:
        value = (
            self.visit(values, f"{hint}-value")
            if isinstance(values, Mapping) and values
            else self.free_value()
        )
        key = self.add("free-key", rf'"\"" char{{1,{KEY_CHARACTERS}}} "\""')
        pair = self.add(f"{hint}-pair", f'{key} ws ":" ws {value}')
        more = FREE_PROPERTIES - 1
        return self.add(hint, f'"{{" ws ( {pair} ( "," ws {pair} ){{0,{more}}} )? "}}"')

    def free_value(self) -> str:
        # Untyped: a scalar or a short array of scalars, never a nested object, so an
        # untyped value cannot grow without bound.
        scalar = self.add("scalar", self.typed({}, "string", "text") + " | number | boolean | null")
        return self.add("free-value", f"{scalar} | {self.add('scalars', _array(scalar, 3))}")


def _array(item: str, most: int) -> str:
    if most == 0:
        return '"[" ws "]"'
    return f'"[" ws ( {item} ( "," ws {item} ){{0,{most - 1}}} )? "]"'


def tool_call_rules(tools: Sequence[Any]) -> str:
    """GBNF rules whose `tool-call` rule is one bounded call of one of `tools`.

    A call is `{"name": <tool name>, "arguments": {...}}`, written as the prompt's examples
    write it. `tools` are ToolDefinitions (a `name` and a JSON-schema `parameters`).

    Raises:
        UnsupportedSchemaError: A tool's parameters use a keyword the grammar cannot express.
    """
    rules = _Rules()
    calls = []
    for index, tool in enumerate(tools):
        hint = f"t{index}"
        parameters = tool.input_schema or {}
        arguments = (
            rules.closed_object(parameters, f"{hint}-args")
            if parameters.get("properties")
            else rules.add(f"{hint}-args", '"{" ws "}"')
        )
        calls.append(
            rules.add(
                f"{hint}-call",
                f'"{{" ws "\\"name\\"" ws ":" ws {_literal(tool.name)} "," ws '
                f'"\\"arguments\\"" ws ":" ws {arguments} ws "}}"',
            )
        )
    lines = [f"tool-call ::= {' | '.join(calls)}"]
    lines.extend(f"{name} ::= {body}" for name, body in rules.rules.items())
    return "\n".join(lines) + "\n"
