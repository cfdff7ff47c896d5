"""`Manager`: a declared data set the assistant may read, backed by a Django model or records.

```python
class PartManager(Manager):
    model = Part
    description = "Designed or purchased components."
    fields = ["name", "weight_kg", "unit_cost", "created_at"]
    relations = {"material": "MaterialManager", "projects": "ProjectManager"}
    filters = ["name", "weight_kg", "material", "projects"]
    chat_exposed = True

    def get_queryset(self, actor):
        return Part.objects.filter(owner=actor.id)   # the rows this actor may see

MaterialManager = Manager.from_records(
    "MaterialManager", records=[{"id": 1, "name": "Steel", "density": 7.8}]
)
```

Declarations are checked by `ManagerRegistry.validate()`, not at class creation, so managers
may name each other in any order. `filters` defaults to every field and relation. Only
managers with `chat_exposed = True` exist for the tools (`from_records` exposes by default:
records are made for the assistant).

Row scope: every read starts from `get_queryset(actor)` (records managers: the optional
`scope(actor, records)` callable). Reads through a relation respect the target manager's
scope too: related objects outside it are left out of nested selections (a to-one relation
reads as null), and filters through a relation match only related objects inside it (a
`relation__isnull` filter compares the stored reference itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from chatomon.data.fields import FieldSpec, FieldType, RelationSpec

if TYPE_CHECKING:
    from chatomon.data.backend import Backend

__all__ = ["FieldDeclaration", "Manager", "RecordScope", "RelationDeclaration"]

FieldDeclaration = Sequence[str] | Mapping[str, FieldSpec | FieldType]
"""Field names, or names mapped to a `FieldSpec` (or just a type, for records)."""

RelationDeclaration = Mapping[str, "str | RelationSpec | type[Manager]"]
"""Relation names mapped to the target manager (its name, class, or a `RelationSpec`)."""

RecordScope = Callable[[Any, Sequence[Mapping[str, Any]]], Iterable[Mapping[str, Any]]]
"""`scope(actor, records)`: the records an actor may see."""

NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class Manager:
    """Base class of managers: a declared, exposed data set.

    Attributes:
        name: The manager name the assistant uses (default: the class name).
        description: What the data set holds, for the assistant.
        model: The Django model of a Django-backed manager.
        records: The dicts of a records manager (each with an "id"), read live.
        fields: The scalar fields exposed (default: every model field / record key).
        relations: Relations to other managers, by relation name.
        filters: The fields and relations the assistant may filter by (default: all).
        chat_exposed: Whether the tools may see this manager at all.
        record_scope: For records managers, `scope(actor, records)` limiting the rows.
    """

    name: ClassVar[str] = "Manager"
    description: ClassVar[str] = ""
    model: ClassVar[type[Any] | None] = None
    records: ClassVar[list[dict[str, Any]] | None] = None
    fields: ClassVar[FieldDeclaration | None] = None
    relations: ClassVar[RelationDeclaration] = MappingProxyType({})
    filters: ClassVar[Sequence[str] | None] = None
    chat_exposed: ClassVar[bool] = False
    record_scope: ClassVar[RecordScope | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__

    def get_queryset(self, actor: Any) -> Any:
        """The rows `actor` may see: a QuerySet (Django) or a list of dicts (records).

        Override it to scope rows per actor; the default is every row.
        """
        return self.backend().all_rows(type(self), actor)

    @classmethod
    def has_custom_scope(cls) -> bool:
        """Whether reads must filter rows per actor (get_queryset overridden or a scope set)."""
        return cls.get_queryset is not Manager.get_queryset or cls.record_scope is not None

    @classmethod
    def backend_kind(cls) -> str | None:
        """The backend kind: "django", "records", or None when neither source is declared."""
        if cls.model is not None:
            return "django"
        if cls.records is not None:
            return "records"
        return None

    @classmethod
    def backend(cls) -> Backend:
        """The backend that reads this manager (Django is imported only when needed)."""
        if cls.backend_kind() == "django":
            from chatomon.data.django_backend import DJANGO_BACKEND  # noqa: PLC0415 - lazy Django

            return DJANGO_BACKEND
        from chatomon.data.records import RECORDS_BACKEND  # noqa: PLC0415 - records imports this

        return RECORDS_BACKEND

    @classmethod
    def from_records(
        cls,
        name: str,
        *,
        records: Iterable[Mapping[str, Any]],
        fields: FieldDeclaration | None = None,
        relations: RelationDeclaration | None = None,
        filters: Sequence[str] | None = None,
        description: str = "",
        chat_exposed: bool = True,
        scope: RecordScope | None = None,
    ) -> type[Manager]:
        """A records-backed manager class holding `records` (a list of dicts).

        Records without an "id" are numbered 1, 2, ... in order; relation values hold the
        related record's id (to-one) or a list of ids (to-many).

        Args:
            name: The manager name (a Python identifier, e.g. "MaterialManager").
            records: The rows; kept as the manager's live list (mutations may append).
            fields: The exposed fields (default: every key but "id" and the relations).
            relations: Relation names mapped to target managers.
            filters: The filterable fields and relations (default: all).
            description: What the data set holds.
            chat_exposed: Whether the tools may see it.
            scope: Optional `scope(actor, records)` returning the rows an actor may see.

        Returns:
            A new `Manager` subclass named `name`.
        """
        rows = [dict(record) for record in records]
        if rows and not any("id" in row for row in rows):
            rows = [{"id": number, **row} for number, row in enumerate(rows, start=1)]
        namespace: dict[str, Any] = {
            "name": name,
            "records": rows,
            "fields": fields,
            "relations": MappingProxyType(dict(relations or {})),
            "filters": filters,
            "description": description,
            "chat_exposed": chat_exposed,
            "record_scope": staticmethod(scope) if scope is not None else None,
            "__module__": __name__,
            "__doc__": description or f"Records manager {name}.",
        }
        return type(name if NAME_PATTERN.match(name) else "RecordsManager", (cls,), namespace)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
