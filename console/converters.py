"""Path converters for the console's ids: a malformed id never reaches the database.

A URL whose id cannot be one (a NUL, text beyond the column's length, letters in an
integer id, an integer beyond the 64-bit key range) does not match the route, so Django
answers 404 before any view or query runs. PostgreSQL rejects a NUL in a text parameter
with an error, and an out-of-range integer with another: without these converters such
URLs answered 500. Conversations and confirmations use Django's own `uuid` converter.
`is_turn_id` applies the same rule to turn ids a query string carries (the compare view).
"""

from __future__ import annotations

import re

__all__ = ["KeyConverter", "TurnIdConverter", "is_turn_id"]

TURN_ID_LENGTH = 64
"""The length of `Turn.id` (chatomon's ids are 32 hex digits; given ids may be longer)."""

BIGINT_MAX = 2**63 - 1
"""The largest value of a BigAutoField primary key."""


class TurnIdConverter:
    """A turn id: 1 to 64 ASCII letters, digits, "_", ".", ":" or "-"."""

    regex = rf"[0-9A-Za-z_.:\-]{{1,{TURN_ID_LENGTH}}}"

    def to_python(self, value: str) -> str:
        """The id as the view receives it."""
        return value

    def to_url(self, value: str) -> str:
        """The id as URLs carry it."""
        return value


def is_turn_id(value: str) -> bool:
    """Whether `value` can be a turn id (for ids that come in a query string, not a path)."""
    return re.fullmatch(TurnIdConverter.regex, value) is not None


class KeyConverter:
    """A 64-bit integer primary key (an audit event's, a saved view's): digits, in range."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        """The id as an int; ValueError (no match, so 404) beyond the key range."""
        number = int(value)
        if number > BIGINT_MAX:
            raise ValueError("beyond the key range")
        return number

    def to_url(self, value: int) -> str:
        """The id as URLs carry it."""
        return str(value)
