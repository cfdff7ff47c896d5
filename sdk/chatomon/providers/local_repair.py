"""Closing a tool call that max_tokens cut off (private to `local`).

The bounded grammar keeps calls short, but a small `max_tokens` can still end one midway:
`{"name": "query", "arguments": {"manager": "PartMan`. Rather than fail the turn, the
provider keeps what the model finished: the text up to the last complete value (or the
last opened object or array), with the open brackets closed:
`{"name": "query", "arguments": {}}`. The tool then checks those arguments like any
other and answers with an error the model can read when something required is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

__all__ = ["close_cut_json"]

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
