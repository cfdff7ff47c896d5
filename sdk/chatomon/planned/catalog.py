"""The manager catalog: optional metadata that helps the resolver rank managers.

```python
PLANNED = {"catalog": {
    "PartManager": {
        "domain": "manufacturing",
        "aliases": ["part", "component", "item"],
        "use_when": "The question concerns designed or purchased components.",
        "distinguish_from": ["MaterialManager"],
    },
}}
```

`load_manager_catalog(source, schema_index)` accepts None, such a mapping, a callable
returning one (called without arguments), or the dotted path of such a callable. Only the
schema index decides what exists: an entry, or a `distinguish_from` name, for a manager the
index does not hold is a configuration error, so the catalog can rank managers but never
expose one (nor name a hidden one in a prompt), and it grants no access.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import ConfigDict, Field, StrictStr, TypeAdapter, ValidationError
from pydantic import dataclasses as pydantic_dataclasses

from chatomon._suggest import closest, did_you_mean
from chatomon._validation import problem_of
from chatomon.errors import ChatConfigurationError

if TYPE_CHECKING:
    from chatomon.data.schema import SchemaIndex

__all__ = [
    "ManagerCatalog",
    "ManagerCatalogEntry",
    "load_manager_catalog",
    "normalize_match_text",
]

CATALOG_KEY = "planned.catalog"
"""The setting errors name."""

NEAR_MISS = 0.8
"""How alike a wrong manager name must be to a known one to suggest it (as SchemaIndex.get)."""

_NOT_WORD = re.compile(r"[\W_]+")


def normalize_match_text(value: str) -> str:
    """Normalize free text into comparable case-insensitive words.

    >>> normalize_match_text("  Part-Number!  ")
    'part number'
    """
    return " ".join(_NOT_WORD.sub(" ", value.casefold()).split())


@dataclass(frozen=True, slots=True)
class ManagerCatalogEntry:
    """Normalized metadata used to rank one chat-exposed manager.

    Attributes:
        manager: The exact exposed manager name.
        domain: The business domain, as configured.
        aliases: Other names for the manager's objects, normalized, unique, in order.
        use_when: When a question concerns this manager, as configured.
        distinguish_from: Exposed managers this one is easily confused with.
    """

    manager: str
    domain: str = ""
    aliases: tuple[str, ...] = ()
    use_when: str = ""
    distinguish_from: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The entry's fields as JSON (without `manager`, its key in the catalog)."""
        return {
            "domain": self.domain,
            "aliases": list(self.aliases),
            "use_when": self.use_when,
            "distinguish_from": list(self.distinguish_from),
        }

    def summary_line(self) -> str:
        """One compact line for the planner prompt (empty parts left out)."""
        parts = [self.manager + (f" ({self.domain})" if self.domain else "")]
        if self.aliases:
            parts.append("aliases: " + ", ".join(self.aliases))
        if self.use_when:
            parts.append("use when: " + self.use_when)
        if self.distinguish_from:
            parts.append("not: " + ", ".join(self.distinguish_from))
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class ManagerCatalog:
    """Immutable validated catalog and its canonical content fingerprint.

    Attributes:
        entries: The entries by manager name, sorted by name (read-only).
        fingerprint: SHA-256 hex of the entries' canonical JSON: equal catalogs, equal
            fingerprints, whatever order or spelling of aliases they were given in.
    """

    entries: Mapping[str, ManagerCatalogEntry]
    fingerprint: str

    @classmethod
    def build(cls, entries: Mapping[str, ManagerCatalogEntry]) -> ManagerCatalog:
        """A catalog of `entries`, sorted by name, with its fingerprint."""
        ordered = {name: entries[name] for name in sorted(entries)}
        canonical = json.dumps(
            {name: entry.to_json() for name, entry in ordered.items()},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        return cls(MappingProxyType(ordered), digest)

    @classmethod
    def empty(cls) -> ManagerCatalog:
        """The catalog without entries (no `planned.catalog` configured)."""
        return cls.build({})

    def get(self, manager: str) -> ManagerCatalogEntry | None:
        """The entry of `manager`, or None."""
        return self.entries.get(manager)

    def summary_lines(self) -> list[str]:
        """One compact line per entry, by manager name, for the planner prompt."""
        return [entry.summary_line() for entry in self.entries.values()]


Words = Annotated[tuple[StrictStr, ...], Field(description="a list of strings")]


@pydantic_dataclasses.dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class _EntrySection:
    """One configured catalog entry (the reference's four fields, each optional)."""

    domain: StrictStr = Field(default="", description="a string")
    aliases: Words = ()
    use_when: StrictStr = Field(default="", description="a string")
    distinguish_from: Words = ()


def load_manager_catalog(source: Any, schema_index: SchemaIndex) -> ManagerCatalog:
    """Load a catalog without changing the live chat schema index.

    Args:
        source: None, a mapping of manager name to entry, a callable returning one, or
            the dotted path of such a callable.
        schema_index: The exposed managers; the only names an entry may use.

    Raises:
        ChatConfigurationError: The source cannot be loaded, an entry is malformed, or it
            names a manager absent from `schema_index` (with a "did you mean").
    """
    raw = _resolve_source(source)
    if raw is None:
        return ManagerCatalog.empty()
    try:
        sections = _CATALOG.validate_python({"entries": raw}).entries
    except ValidationError as error:
        problem = problem_of(error, _CatalogShape)
        label = CATALOG_KEY + problem.key.removeprefix("entries")
        raise ChatConfigurationError.from_problem(problem, label, key=CATALOG_KEY) from None
    exposed = schema_index.managers
    entries = {}
    for manager, section in sections.items():
        _require_exposed(manager, exposed, where="")
        for other in section.distinguish_from:
            _require_exposed(other, exposed, where=f"{manager}.distinguish_from ")
        entries[manager] = ManagerCatalogEntry(
            manager=manager,
            domain=section.domain.strip(),
            aliases=_aliases(manager, section.aliases),
            use_when=section.use_when.strip(),
            distinguish_from=tuple(dict.fromkeys(section.distinguish_from)),
        )
    return ManagerCatalog.build(entries)


@pydantic_dataclasses.dataclass(frozen=True)
class _CatalogShape:
    """The catalog mapping as one field, so that errors read back to a key path."""

    entries: dict[StrictStr, _EntrySection] = Field(
        description="a mapping of manager names to entries"
    )


_CATALOG = TypeAdapter(_CatalogShape)


def _resolve_source(source: Any) -> Mapping[str, Any] | None:
    """The catalog mapping `source` stands for (None for no catalog)."""
    if isinstance(source, str):
        source = _import_callable(source)
    if callable(source) and not isinstance(source, Mapping):
        source = source()
    if source is None or isinstance(source, Mapping):
        return source
    raise ChatConfigurationError(
        f"{CATALOG_KEY} must be None, a mapping, a callable returning a mapping or a dotted "
        f"path to one, got {type(source).__name__}",
        key=CATALOG_KEY,
        value=type(source).__name__,
    )


def _import_callable(path: str) -> Callable[[], Any]:
    """The callable a dotted path names (no Django: importlib)."""
    module_name, _, attribute = path.rpartition(".")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ChatConfigurationError(
            f"{CATALOG_KEY} names {path!r}, which cannot be imported: {error}",
            key=CATALOG_KEY,
            value=path,
        ) from error
    if not callable(target):
        raise ChatConfigurationError(
            f"{CATALOG_KEY} names {path!r}, which is not a callable",
            key=CATALOG_KEY,
            value=path,
        )
    return target  # type: ignore[no-any-return]


def _require_exposed(name: str, exposed: Mapping[str, Any], *, where: str) -> None:
    if name not in exposed:
        # Manager names share their "Manager" ending: only a near miss is a suggestion.
        raise ChatConfigurationError(
            f"{CATALOG_KEY} {where}names {name!r}, which is not a chat-exposed manager"
            f"{did_you_mean(name, exposed, cutoff=NEAR_MISS)}",
            key=CATALOG_KEY,
            value=name,
            suggestion=closest(name, exposed, cutoff=NEAR_MISS),
        )


def _aliases(manager: str, aliases: tuple[str, ...]) -> tuple[str, ...]:
    normalized = tuple(dict.fromkeys(normalize_match_text(alias) for alias in aliases))
    if "" in normalized:
        raise ChatConfigurationError(
            f"{CATALOG_KEY} {manager}.aliases holds an alias without a letter or digit",
            key=CATALOG_KEY,
            value=list(aliases),
        )
    return normalized
