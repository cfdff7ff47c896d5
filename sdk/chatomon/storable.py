r"""Text a store can keep: no NUL character, no unpaired surrogate.

A Python `str` holds any code point, but not every store takes every one: PostgreSQL's
text type refuses U+0000, and an unpaired surrogate (U+D800 to U+DFFF alone, which JSON
lets a client send as `"\ud800"`) has no UTF-8 encoding, so neither SQLite nor an event
stream can write it. Text that arrives from a client is checked here once, before a turn
opens, so that nothing is stored half (`unstorable`: the transports refuse it with
`bad_message`). Text that arrives from a model cannot be refused (the user asked nothing
wrong): every provider event's text, a tool call's id, name and arguments included, is made
storable as it enters chatomon (`chatomon.providers.contract`), each such character
replaced with U+FFFD, so the user sees the answer, it is stored, and the turn completes
(`storable`, and `storable_value` for JSON values).

```python
unstorable("fine") is None
unstorable("a\x00b")  # Unstorable(position=1, code_point=0)
storable("a\x00b")    # "a\ufffdb"
storable_value({"k\x00": ["\ud800"]})  # {"k\ufffd": ["\ufffd"]}
```
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REPLACEMENT", "Unstorable", "storable", "storable_value", "unstorable"]

_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")

REPLACEMENT = "\ufffd"
"""What stands in place of a character no store can keep (Unicode's replacement character)."""


@dataclass(frozen=True, slots=True)
class Unstorable:
    """The first character of a text that no store can keep, and where it is."""

    position: int
    code_point: int

    def describe(self, name: str) -> str:
        """A sentence saying which character of `name` is refused and why.

        Examples:
            >>> Unstorable(3, 0).describe("`text`")
            '`text` holds U+0000 (a NUL character) at position 3, which cannot be stored.'
        """
        kind = "a NUL character" if self.code_point == 0 else "an unpaired surrogate"
        return (
            f"{name} holds U+{self.code_point:04X} ({kind}) at position {self.position},"
            " which cannot be stored."
        )


def unstorable(text: str) -> Unstorable | None:
    r"""The first NUL or unpaired surrogate in `text`, or None when a store can keep it all.

    A surrogate pair sent as two JSON escapes is decoded into one character before this
    runs, so only an unpaired surrogate is left to find.

    Examples:
        >>> unstorable("caf\u00e9 \U0001f600") is None
        True
        >>> unstorable("ab\ud800")
        Unstorable(position=2, code_point=55296)
    """
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return Unstorable(found.start(), ord(found.group()))


def storable(text: str) -> str:
    r"""`text` with each NUL and each unpaired surrogate replaced by U+FFFD.

    Two surrogate code points that form a pair are joined into the one character they
    encode, as a UTF-16 decoder would. Text with nothing to replace is returned as is.

    Examples:
        >>> storable("a\x00b\ud800c")
        'a\ufffdb\ufffdc'
        >>> storable("\ud83d\ude00")
        '\U0001f600'
        >>> storable("fine") == "fine"
        True
    """
    if _UNSTORABLE.search(text) is None:
        return text
    # UTF-16 keeps every surrogate through `surrogatepass`; decoding it back joins the
    # pairs and replaces each unpaired one.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.replace("\x00", REPLACEMENT)


def storable_value(value: Any) -> Any:
    r"""A JSON-like `value` with `storable` applied to every string in it, keys included.

    Mappings become dicts and lists and tuples lists; other values (numbers, None) are
    kept. A value with nothing to replace is returned as it is.

    Examples:
        >>> storable_value({"name\x00": ["a\ud800", 1, None]})
        {'name\ufffd': ['a\ufffd', 1, None]}
        >>> fine = {"a": [1, "b"]}
        >>> storable_value(fine) is fine
        True
    """
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, Mapping):
        pairs = [(storable_value(k), storable_value(v)) for k, v in value.items()]
        same = all(
            new is old
            for pair, kept in zip(pairs, value.items(), strict=True)
            for new, old in zip(pair, kept, strict=True)
        )
        return value if same else dict(pairs)
    if isinstance(value, list | tuple):
        items = [storable_value(item) for item in value]
        same = all(new is old for new, old in zip(items, value, strict=True))
        return value if same else items
    return value
