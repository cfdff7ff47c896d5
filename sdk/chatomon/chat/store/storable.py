r"""Text a store can keep: no NUL character, no unpaired surrogate.

A Python `str` holds any code point, but not every store takes every one: PostgreSQL's
text type refuses U+0000, and an unpaired surrogate (U+D800 to U+DFFF alone, which JSON
lets a client send as `"\ud800"`) has no UTF-8 encoding, so neither SQLite nor an event
stream can write it. Text that arrives from outside is checked here once, before a turn
opens, so that nothing is stored half.

```python
unstorable("fine") is None
unstorable("a\x00b")  # Unstorable(position=1, code_point=0)
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Unstorable", "unstorable"]

_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


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
