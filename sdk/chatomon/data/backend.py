"""The backend protocol: what a data source implements so the tools can read and write it.

Two backends ship: `chatomon.data.records` (lists of dicts, runs inline) and
`chatomon.data.django_backend` (Django models; synchronous ORM, so the tools run it in a
worker thread). Both execute the same validated specs and return the same JSON-ready
shapes, which one shared test suite checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from chatomon._rich_display import RichDisplay

if TYPE_CHECKING:
    from chatomon.data.aggregate import AggregateSpec
    from chatomon.data.manager import Manager
    from chatomon.data.query import QuerySpec
    from chatomon.data.schema import ManagerSchema

__all__ = ["AggregatePage", "Backend", "QueryPage", "mixed_backend_problem"]


@dataclass(frozen=True, slots=True)
class QueryPage(RichDisplay):
    """One page of query results.

    Attributes:
        rows: The JSON-ready rows, each with its id.
        total_count: How many rows match in all.
    """

    rows: list[dict[str, Any]]
    total_count: int


@dataclass(frozen=True, slots=True)
class AggregatePage(RichDisplay):
    """The groups of an aggregate, sorted by their keys.

    Attributes:
        groups: `{"group": {...}, "values": {...}}` per group, JSON-ready.
        has_more: Whether more groups exist than were returned.
    """

    groups: list[dict[str, Any]]
    has_more: bool


class Backend(Protocol):
    """A data source the tools can read (and mutations write)."""

    kind: ClassVar[str]
    runs_in_thread: ClassVar[bool]

    def all_rows(self, manager: type[Manager], actor: Any) -> Any:
        """Every row of `manager` (the default get_queryset)."""
        ...

    def describe(self, manager: type[Manager], problems: list[str]) -> ManagerSchema | None:
        """Resolve `manager`'s declaration; append a line to `problems` per mistake."""
        ...

    def check_relation(
        self, schema: ManagerSchema, relation: str, target: ManagerSchema
    ) -> str | None:
        """A problem line when `relation` cannot lead to `target`, else None."""
        ...

    def run_query(self, spec: QuerySpec, actor: Any, timeout_seconds: float | None) -> QueryPage:
        """Execute a validated query."""
        ...

    def run_aggregate(
        self, spec: AggregateSpec, actor: Any, timeout_seconds: float | None
    ) -> AggregatePage:
        """Execute a validated aggregate."""
        ...

    def fetch(self, schema: ManagerSchema, object_id: Any, actor: Any) -> Mapping[str, Any] | None:
        """The scalar fields of one object in `actor`'s scope (JSON-ready), or None."""
        ...

    def serialize(self, schema: ManagerSchema, obj: Any) -> dict[str, Any] | None:
        """A mutation's returned object as its id and scalar fields, or None if not one."""
        ...


def mixed_backend_problem(
    schema: ManagerSchema, relation: str, target: ManagerSchema, kind: str
) -> str | None:
    """The problem line when a `kind` manager's relation leads to another backend's manager."""
    if target.backend.kind == kind:
        return None
    return (
        f"{schema.name}.relations[{relation!r}]: {target.name} is a {target.backend.kind}"
        f" manager; a {kind} manager relates to {kind} managers only"
    )
