"""The schema index: what the assistant may know about the exposed managers.

`SchemaIndex` is built once per registry version (`ManagerRegistry.schema_index()` caches
it) from the managers' resolved schemas. It holds only chat-exposed managers, and only the
relations between them: a relation to a hidden manager does not exist here, so nothing built
on the index (tool results, errors, suggestions, paths) can name a hidden manager.

It answers the questions the tools ask: a manager's schema, the relation path between two
managers (`find_path`), and ranked search (`search`, in `chatomon.data.search`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from chatomon._rich_display import RichDisplay
from chatomon.data.errors import DataError, did_you_mean
from chatomon.data.fields import LOOKUPS_BY_TYPE, Choice, FieldType

if TYPE_CHECKING:
    from chatomon.data.backend import Backend
    from chatomon.data.manager import Manager
    from chatomon.data.search import SearchIndex

__all__ = [
    "ID_LOOKUPS",
    "FieldSchema",
    "ManagerSchema",
    "RelationPath",
    "RelationSchema",
    "SchemaIndex",
]

ID_LOOKUPS = ("exact", "in")
"""Every manager can be filtered by id with these lookups."""


@dataclass(frozen=True, slots=True)
class FieldSchema:
    """One resolved scalar field of a manager.

    Attributes:
        name: The field name the assistant uses.
        type: The field type.
        description: Text for the assistant.
        choices: The values of an enum field.
        nullable: Whether the field may be empty.
        decimal_places: The places decimal values are quantized to.
    """

    name: str
    type: FieldType
    description: str = ""
    choices: tuple[Choice, ...] | None = None
    nullable: bool = False
    decimal_places: int | None = None

    @property
    def lookups(self) -> tuple[str, ...]:
        """The lookups a filter on this field may use."""
        return ID_LOOKUPS if self.name == "id" else LOOKUPS_BY_TYPE[self.type]

    def to_json(self) -> dict[str, Any]:
        """The field as get_manager_schema shows it (empty parts left out)."""
        shown: dict[str, Any] = {"type": self.type}
        if self.description:
            shown["description"] = self.description
        if self.choices is not None:
            shown["choices"] = list(self.choices)
        if self.nullable:
            shown["nullable"] = True
        return shown


@dataclass(frozen=True, slots=True)
class RelationSchema:
    """One resolved relation to another manager.

    Attributes:
        name: The relation name the assistant uses (also the filter and selection key).
        target: The name of the manager it leads to.
        to_many: Whether it leads to a list of objects.
        description: Text for the assistant.
        accessor: Where the backend reads the related objects (a Django reverse relation's
            accessor name may differ from its query name).
    """

    name: str
    target: str
    to_many: bool
    description: str = ""
    accessor: str = ""

    def to_json(self) -> dict[str, Any]:
        """The relation as get_manager_schema shows it."""
        shown: dict[str, Any] = {"name": self.name, "target": self.target}
        shown["kind"] = "to_many" if self.to_many else "to_one"
        if self.description:
            shown["description"] = self.description
        return shown


@dataclass(frozen=True)
class ManagerSchema(RichDisplay):
    """One resolved manager: fields (with `id` first), relations and filters.

    Attributes:
        name: The manager name.
        description: Text for the assistant.
        fields: Scalar fields by name, `id` first, in declaration order.
        relations: Relations by name.
        filters: Filterable names (fields and relations) with their lookups.
        manager: The manager instance that runs reads (never shown to the model).
        backend: The backend that executes reads for it.
    """

    name: str
    description: str
    fields: Mapping[str, FieldSchema]
    relations: Mapping[str, RelationSchema]
    filters: Mapping[str, tuple[str, ...]]
    manager: Manager = field(repr=False, compare=False)
    backend: Backend = field(repr=False, compare=False)

    def field_named(self, name: str, *, code: str = "unknown_field") -> FieldSchema:
        """The scalar field `name`, or a DataError listing the fields there are."""
        found = self.fields.get(name)
        if found is None:
            raise DataError(
                f"{self.name} has no field {name!r}{did_you_mean(name, self.fields)}",
                code=code,
                allowed=list(self.fields),
            )
        return found

    def to_json(self) -> dict[str, Any]:
        """The schema as get_manager_schema returns it."""
        return {
            "name": self.name,
            "description": self.description,
            "fields": {name: spec.to_json() for name, spec in self.fields.items()},
            "relations": [relation.to_json() for relation in self.relations.values()],
            "filters": {name: list(lookups) for name, lookups in self.filters.items()},
        }

    def summary(self) -> dict[str, Any]:
        """The short form search_managers returns."""
        return {
            "name": self.name,
            "description": self.description,
            "fields": [name for name in self.fields if name != "id"],
            "relations": list(self.relations),
        }

    def restricted_to(self, exposed: frozenset[str]) -> ManagerSchema:
        """This schema without the relations (and their filters) to managers not in `exposed`."""
        hidden = {name for name, rel in self.relations.items() if rel.target not in exposed}
        if not hidden:
            return self
        return ManagerSchema(
            name=self.name,
            description=self.description,
            fields=self.fields,
            relations=MappingProxyType(
                {n: r for n, r in self.relations.items() if n not in hidden}
            ),
            filters=MappingProxyType({n: lk for n, lk in self.filters.items() if n not in hidden}),
            manager=self.manager,
            backend=self.backend,
        )


@dataclass(frozen=True, slots=True)
class RelationPath:
    """A path of relations from one manager to another.

    Attributes:
        relations: The relation names in order ([] from a manager to itself).
        managers: The managers visited after the start, one per relation.
    """

    relations: tuple[str, ...]
    managers: tuple[str, ...]

    @property
    def lookup_prefix(self) -> str:
        """The filter prefix the path spells (`parts__material__`), "" for an empty path."""
        return "".join(f"{name}__" for name in self.relations)


@dataclass(frozen=True)
class SchemaIndex:
    """The exposed managers of one registry version, their schemas and relation graph.

    Attributes:
        version: The registry version the index was built from.
        managers: The exposed managers' schemas by name, sorted by name.
    """

    version: int
    managers: Mapping[str, ManagerSchema]

    @property
    def names(self) -> tuple[str, ...]:
        """The exposed manager names, sorted."""
        return tuple(self.managers)

    def get(self, name: object) -> ManagerSchema:
        """The schema of manager `name`, or an unknown_manager DataError (exposed names only)."""
        if isinstance(name, str) and name in self.managers:
            return self.managers[name]
        shown = name if isinstance(name, str) else repr(name)
        # Manager names share their "Manager" ending, so only a near miss is a suggestion.
        hint = did_you_mean(shown, self.managers, cutoff=0.8) if isinstance(name, str) else ""
        if not hint and isinstance(name, str):
            # "Parts" or "part_cost": the word index knows what the model was after.
            nearest = [schema.name for schema in self.search_index.search(name, 3)]
            if nearest:
                hint = f"; the nearest: {', '.join(nearest)}"
        raise DataError(
            f"there is no manager {shown!r}{hint}; search_managers finds managers by words",
            code="unknown_manager",
            allowed=self.names if len(self.managers) <= 30 else (),
        )

    @cached_property
    def graph(self) -> Mapping[str, tuple[tuple[str, str], ...]]:
        """Each manager's outgoing relations as (relation name, target), sorted by name."""
        return MappingProxyType(
            {
                name: tuple(sorted((rel.name, rel.target) for rel in schema.relations.values()))
                for name, schema in self.managers.items()
            }
        )

    def find_path(self, start: str, goal: str) -> RelationPath | None:
        """The shortest relation path from `start` to `goal`, or None when there is none.

        Breadth-first over declared relations (they are directed: a path is usable as a
        filter or selection prefix from `start`). Among shortest paths the one whose
        relation names sort first at the earliest difference wins, so results are stable.
        """
        self.get(start)
        self.get(goal)
        if start == goal:
            return RelationPath((), ())
        parents: dict[str, tuple[str, str]] = {start: ("", "")}
        frontier: deque[str] = deque([start])
        while frontier:
            current = frontier.popleft()
            for relation, target in self.graph[current]:
                if target in parents:
                    continue
                parents[target] = (current, relation)
                if target == goal:
                    return self._walk_back(parents, goal)
                frontier.append(target)
        return None

    @staticmethod
    def _walk_back(parents: Mapping[str, tuple[str, str]], goal: str) -> RelationPath:
        relations: list[str] = []
        managers: list[str] = []
        node = goal
        while parents[node][0]:
            previous, relation = parents[node]
            relations.append(relation)
            managers.append(node)
            node = previous
        return RelationPath(tuple(reversed(relations)), tuple(reversed(managers)))

    @cached_property
    def search_index(self) -> SearchIndex:
        """The word index for search_managers, built on first use."""
        from chatomon.data.search import SearchIndex  # noqa: PLC0415 - search imports this module

        return SearchIndex.build(self.managers.values())
