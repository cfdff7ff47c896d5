"""The vendor-neutral script of one completion, which each vendor encoder turns into bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Text:
    """A text delta."""

    content: str


@dataclass(frozen=True)
class Call:
    """A tool call; `fragments` splits its JSON arguments over that many stream events.

    `raw_arguments` replaces the JSON encoding of `arguments` (for malformed JSON tests).
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    fragments: int = 1
    raw_arguments: str | None = None


@dataclass(frozen=True)
class Usage:
    """The usage the vendor reports for the completion."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Stall:
    """The server pauses this long before the next event (or before anything, when first)."""

    seconds: float


Step = Text | Call | Usage | Stall


def split(text: str, parts: int) -> list[str]:
    """Split `text` into `parts` non-empty pieces (fewer when it is shorter)."""
    parts = max(1, min(parts, len(text)))
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]
