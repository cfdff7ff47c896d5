"""Local, deterministic ranking of the exposed managers a planned task may concern.

`ManagerResolver(schema_index, catalog).resolve(query, anchors)` returns at most five
`ManagerCandidate`s, drawn only from `schema_index`: the catalog adds words to rank by,
never a manager. Text is compared as words (camelCase split, case-folded, singular:
`chatomon.data.search.normalize_words`), without words such as "which" or "the".

Candidates sort lexicographically by:

1. exact manager name: the query holds the manager's name as words ("PartManager",
   "part manager" or "part" for PartManager, "parts" too);
2. exact catalog alias: the query holds one of the manager's catalog aliases as words;
3. anchored: an exposed relation path joins the manager to one of `anchors` (other
   managers, e.g. those of the task's dependencies), in either direction;
4. score, highest first: per query word, the weight of every place it meets (`WEIGHTS`);
5. manager name.

A manager whose score is 0 is no candidate (an anchor reorders, it does not add).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from chatomon.data.schema import ManagerSchema, SchemaIndex
from chatomon.data.search import normalize_words
from chatomon.planned.catalog import ManagerCatalog, ManagerCatalogEntry

__all__ = [
    "AUDIT_MATCH_SOURCES",
    "MAX_CANDIDATES",
    "WEIGHTS",
    "ManagerCandidate",
    "ManagerResolver",
]

AUDIT_MATCH_SOURCES = MappingProxyType(
    {
        "exact manager name": "exact_name",
        "exact catalog alias": "exact_alias",
        "catalog domain": "catalog_domain",
        "catalog aliases": "catalog_alias",
        "catalog use_when": "catalog_use_when",
        "schema description": "schema_description",
        "schema fields": "schema_field",
        "schema filters": "schema_filter",
        "schema relations": "schema_relation",
    }
)
"""Where a candidate matched, as the audit category each source is recorded under."""

MAX_CANDIDATES = 5

WEIGHTS: Mapping[str, int] = MappingProxyType(
    {
        "exact_name": 12,  # once per candidate
        "exact_alias": 10,  # once per candidate
        "catalog_domain": 3,
        "catalog_alias": 4,  # a word of an alias
        "catalog_use_when": 2,
        "schema_name_word": 5,  # a word of the manager's name (recorded as schema_description)
        "schema_description": 2,
        "schema_field": 3,  # a field's name
        "schema_filter": 2,  # a filter that is no field or relation, or an enum choice
        "schema_relation": 3,  # a relation's name
    }
)
"""The score a query word adds for each place it meets; exact matches add once."""

# Words that say nothing about which data set is meant, as normalize_words spells them
# ("does" -> "doe", "uses" -> "use").
_STOP_SENTENCE = (
    "a an and all any are be by can do doe each every find for from get give ha have how i "
    "in is it list many me much my of on or our per show tell than that the their them there "
    "these they this those to u us use used wa we were what when where which who whose with"
)
_STOP_WORDS = frozenset(_STOP_SENTENCE.split())


@dataclass(frozen=True, slots=True)
class ManagerCandidate:
    """One compact, locally ranked manager candidate.

    Attributes:
        manager: An exposed manager name (always a name of the schema index).
        score: The summed weights of its matches.
        match_sources: Where it matched, as AUDIT_MATCH_SOURCES values, in their order.
        anchored: Whether an exposed relation path joins it to one of the anchors.
    """

    manager: str
    score: int
    match_sources: tuple[str, ...]
    anchored: bool = False


def _words(text: str) -> tuple[str, ...]:
    return tuple(normalize_words(text))


def _content(words: Iterable[str]) -> frozenset[str]:
    return frozenset(word for word in words if word not in _STOP_WORDS)


def _holds(words: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether `phrase` occurs in `words` as consecutive words."""
    size = len(phrase)
    return size > 0 and any(
        tuple(words[start : start + size]) == tuple(phrase)
        for start in range(len(words) - size + 1)
    )


@dataclass(frozen=True, slots=True)
class _Profile:
    """The comparable words of one manager, by the place they come from."""

    name: str
    name_phrase: tuple[str, ...]
    alias_phrases: tuple[tuple[str, ...], ...]
    places: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, schema: ManagerSchema, entry: ManagerCatalogEntry | None) -> _Profile:
        name_words = _words(schema.name)
        if len(name_words) > 1 and name_words[-1] == "manager":
            name_words = name_words[:-1]  # "PartManager" is named by "part"
        members = set(schema.fields) | set(schema.relations)
        choices = [str(c) for f in schema.fields.values() for c in (f.choices or ())]
        places = {
            "schema_name_word": _content(name_words),
            "schema_description": _content(_words(schema.description)),
            "schema_field": _content(w for f in schema.fields if f != "id" for w in _words(f)),
            "schema_filter": _content(
                w for f in [*(set(schema.filters) - members), *choices] for w in _words(f)
            ),
            "schema_relation": _content(w for r in schema.relations for w in _words(r)),
        }
        aliases: tuple[tuple[str, ...], ...] = ()
        if entry is not None:
            aliases = tuple(_words(alias) for alias in entry.aliases)
            places["catalog_domain"] = _content(_words(entry.domain))
            places["catalog_alias"] = _content(w for alias in aliases for w in alias)
            places["catalog_use_when"] = _content(_words(entry.use_when))
        return cls(schema.name, name_words, aliases, MappingProxyType(places))

    def match(self, words: tuple[str, ...], content: frozenset[str]) -> tuple[int, set[str]]:
        """The score of a query's words and the sources (audit values) they met."""
        score, sources = 0, set()
        if _holds(words, self.name_phrase):
            score, sources = WEIGHTS["exact_name"], {"exact_name"}
        if any(_holds(words, alias) for alias in self.alias_phrases):
            score += WEIGHTS["exact_alias"]
            sources.add("exact_alias")
        for place, known in self.places.items():
            hits = len(content & known)
            if hits:
                score += hits * WEIGHTS[place]
                sources.add("schema_description" if place == "schema_name_word" else place)
        return score, sources


_PROFILE_CACHE: dict[tuple[int, str], tuple[SchemaIndex, tuple[_Profile, ...]]] = {}
_PROFILE_CACHE_SIZE = 4
_PROFILE_LOCK = threading.Lock()


def _profiles(index: SchemaIndex, catalog: ManagerCatalog) -> tuple[_Profile, ...]:
    """The profiles of an index's managers with a catalog's entries, built once per pair.

    A turn builds resolvers on the registry's current index; indexing 150 managers takes
    milliseconds, so the few latest pairs are kept (an index is immutable, and a catalog's
    fingerprint is its content). The index itself is held, so its id cannot be reused.
    """
    key = (id(index), catalog.fingerprint)
    with _PROFILE_LOCK:
        cached = _PROFILE_CACHE.get(key)
    if cached is not None and cached[0] is index:
        return cached[1]
    built = tuple(_Profile.of(schema, catalog.get(name)) for name, schema in index.managers.items())
    with _PROFILE_LOCK:
        while len(_PROFILE_CACHE) >= _PROFILE_CACHE_SIZE:
            del _PROFILE_CACHE[next(iter(_PROFILE_CACHE))]  # the oldest
        _PROFILE_CACHE[key] = (index, built)
    return built


class ManagerResolver:
    """Rank only managers present in the live chat schema index.

    The catalog contributes words to rank by (its entries can only name exposed managers:
    `load_manager_catalog` checks); a catalog entry for a manager the index does not hold
    is ignored here too, so a stale catalog cannot expose a manager either.
    """

    def __init__(self, schema_index: SchemaIndex, catalog: ManagerCatalog | None = None) -> None:
        """Index the words of every exposed manager and its catalog entry (once per pair)."""
        self.schema_index = schema_index
        self.catalog = catalog if catalog is not None else ManagerCatalog.empty()
        self._profiles = _profiles(schema_index, self.catalog)

    def resolve(self, query: str, anchors: Sequence[str] = ()) -> tuple[ManagerCandidate, ...]:
        """Return up to five candidates in the specified lexicographic order (see module)."""
        words = _words(query)
        content = _content(words)
        known_anchors = [
            name for name in dict.fromkeys(anchors) if name in self.schema_index.managers
        ]
        ranked = []
        for profile in self._profiles:
            score, sources = profile.match(words, content)
            if score <= 0:
                continue
            anchored = self._anchored(profile.name, known_anchors)
            ordered = tuple(v for v in AUDIT_MATCH_SOURCES.values() if v in sources)
            candidate = ManagerCandidate(profile.name, score, ordered, anchored)
            key = (
                "exact_name" not in sources,
                "exact_alias" not in sources,
                not anchored,
                -score,
                profile.name,
            )
            ranked.append((key, candidate))
        ranked.sort(key=lambda item: item[0])
        return tuple(candidate for _, candidate in ranked[:MAX_CANDIDATES])

    def _anchored(self, name: str, anchors: Sequence[str]) -> bool:
        find = self.schema_index.find_path
        return any(
            anchor != name and (find(anchor, name) is not None or find(name, anchor) is not None)
            for anchor in anchors
        )

    def schema_slice(self, candidates: Iterable[ManagerCandidate]) -> list[dict[str, Any]]:
        """The schemas of `candidates` (as get_manager_schema shows them), for executor prompts.

        Only the candidates' managers: a prompt gets a slice of the index, not all of it.
        """
        managers = self.schema_index.managers
        names = dict.fromkeys(c.manager for c in candidates if c.manager in managers)
        return [managers[name].to_json() for name in names]
