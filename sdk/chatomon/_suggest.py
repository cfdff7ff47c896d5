"""The one "did you mean" of chatomon: the closest known name to a misspelled one.

Settings keys, provider configuration keys, provider short names, manager and field names
all suggest through here, so every message spells the hint the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]

DEFAULT_CUTOFF = 0.6
"""How alike two names must be (difflib's ratio) before one is suggested for the other."""


def closest(name: str, known: Iterable[str], *, cutoff: float = DEFAULT_CUTOFF) -> str | None:
    """The known name most like `name`, or None when none is alike enough."""
    matches = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return matches[0] if matches else None


def did_you_mean(name: str, known: Iterable[str], cutoff: float = DEFAULT_CUTOFF) -> str:
    """The hint "; did you mean 'x'?" for `name` among `known`, or "" when none is close."""
    match = closest(name, known, cutoff=cutoff)
    return f"; did you mean {match!r}?" if match else ""
