"""Ranked search over the exposed managers, for the search_managers tool.

Text is compared as normalized words: split at camelCase humps, underscores and anything
that is not a letter or digit, case-folded, and reduced to a singular ("parts" and "Part"
are both "part"; "unitCost", "unit cost" and "unit_cost" all give "unit", "cost"). A word of
the query scores where it meets a manager's name, its fields and relations, or its
description; managers rank by score, then by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from chatomon.data.schema import ManagerSchema

__all__ = ["SearchIndex", "normalize_words", "singular"]

_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")

# Words that say nothing about which data set is meant ("show me all the parts").
_STOP_SENTENCE = (
    "a an and all any are by do does each every find for from get give has have how i in "
    "is it list many me much my of on or per show tell that the their there these this "
    "those to what when where which who whose with"
)
_STOP_WORDS = frozenset(_STOP_SENTENCE.split())

NAME_SCORE = 10
MEMBER_SCORE = 4
DESCRIPTION_SCORE = 2
PREFIX_SCORE = 1


def singular(word: str) -> str:
    """A crude English singular: "parts" → "part", "categories" → "category"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalize_words(text: str) -> list[str]:
    """The comparable words of `text`: camelCase and snake_case split, folded, singular."""
    return [
        singular(piece.casefold())
        for chunk in _NON_WORD.split(text)
        for piece in _HUMP.split(chunk)
        if piece
    ]


@dataclass(frozen=True, slots=True)
class _Entry:
    schema: ManagerSchema
    name_words: frozenset[str]
    member_words: frozenset[str]
    description_words: frozenset[str]

    def score(self, word: str) -> int:
        if word in self.name_words:
            return NAME_SCORE
        if word in self.member_words:
            return MEMBER_SCORE
        if word in self.description_words:
            return DESCRIPTION_SCORE
        # A started word ("mat" for "material") still counts, a little.
        if len(word) >= 3 and any(
            known.startswith(word) for known in self.name_words | self.member_words
        ):
            return PREFIX_SCORE
        return 0


def _joined(name: str) -> set[str]:
    """The words of a name plus the name run together ("unit_cost" also gives "unitcost")."""
    words = normalize_words(name)
    return {*words, singular("".join(words))}


@dataclass(frozen=True, slots=True)
class SearchIndex:
    """Normalized words of every exposed manager, ready to rank queries against."""

    entries: tuple[_Entry, ...]

    @classmethod
    def build(cls, schemas: Iterable[ManagerSchema]) -> SearchIndex:
        """Index the names, fields, relations and descriptions of `schemas`."""
        entries = []
        for schema in schemas:
            name_words = _joined(schema.name) - {"manager"}
            members: set[str] = set()
            for member in (*schema.fields, *schema.relations):
                if member != "id":
                    members |= _joined(member)
            entries.append(
                _Entry(
                    schema=schema,
                    name_words=frozenset(name_words),
                    member_words=frozenset(members),
                    description_words=frozenset(normalize_words(schema.description)),
                )
            )
        return cls(tuple(entries))

    def search(self, query: str, limit: int = 10) -> list[ManagerSchema]:
        """The managers matching the words of `query`, best first, at most `limit`.

        A query with no meaningful word (blank, or only words like "show all") lists the
        managers by name.
        """
        words = [w for w in normalize_words(query) if w not in _STOP_WORDS]
        joined = singular("".join(words))
        if len(words) > 1:
            words.append(joined)
        if not words:
            return [entry.schema for entry in self.entries[:limit]]
        scored = [
            (sum(entry.score(w) for w in words), entry.schema.name, entry) for entry in self.entries
        ]
        ranked = sorted(
            (item for item in scored if item[0] > 0), key=lambda item: (-item[0], item[1])
        )
        return [entry.schema for _, _, entry in ranked[:limit]]
