"""The Django backend: managers over Django models, read through the ORM.

A query costs one SQL query for the page and one for the count (skipped for a first page
that is not full, which holds every match; the page is skipped when the offset is past
the end; a page without relations is read as values, see
`chatomon.data.django_page`), plus one per relation that must be prefetched: to-one
relations whose target has no row scope are joined (`select_related`); to-many relations,
and relations to scoped managers, are prefetched with the target manager's scoped
queryset, so related rows outside the actor's scope are left out and nothing is loaded
row by row. The reads of one call share one transaction on
PostgreSQL, under `query_timeout_seconds` (see `chatomon.data.django_timeout`).

The ORM is synchronous: `runs_in_thread` tells the tools to call this backend off the
event loop (through their `Toolset.run_blocking`). Importing this module imports Django
(settings are needed only when a query runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import F, Model, OrderBy, Prefetch, QuerySet

from chatomon.data.aggregate import AggregateSpec
from chatomon.data.backend import AggregatePage, QueryPage, mixed_backend_problem
from chatomon.data.coercion import coerce_scalar
from chatomon.data.django_aggregate import run_aggregate
from chatomon.data.django_conditions import apply_conditions
from chatomon.data.django_page import count_rows, scalar_page
from chatomon.data.django_schema import describe_model, related_model_of
from chatomon.data.django_timeout import statement_timeout
from chatomon.data.errors import DataError
from chatomon.data.manager import Manager
from chatomon.data.query import Ordering, QuerySpec, Selection
from chatomon.data.schema import ManagerSchema
from chatomon.data.serialization import serialize_value

__all__ = ["DJANGO_BACKEND", "DjangoBackend", "render_object"]


def _order_expression(ordering: Ordering) -> OrderBy:
    name = "pk" if ordering.field.name == "id" else ordering.field.name
    if ordering.descending:
        return F(name).desc(nulls_last=True)
    return F(name).asc(nulls_last=True)


def with_selection(
    queryset: QuerySet[Any], selection: Selection, actor: Any, prefix: str = ""
) -> QuerySet[Any]:
    """`queryset` set up to load `selection`'s relations without a query per row."""
    for hop, nested in selection.relations:
        path = prefix + hop.relation.accessor
        if not hop.relation.to_many and not hop.target.manager.has_custom_scope():
            queryset = with_selection(queryset.select_related(path), nested, actor, path + "__")
        else:
            related = hop.target.manager.get_queryset(actor).order_by("pk")
            inner = with_selection(related, nested, actor)
            queryset = queryset.prefetch_related(Prefetch(path, queryset=inner))
    return queryset


def _related(obj: Model, accessor: str) -> Any:
    try:
        return getattr(obj, accessor)
    except ObjectDoesNotExist:  # a reverse one-to-one with no row
        return None


def render_object(selection: Selection, obj: Model) -> dict[str, Any]:
    """One model instance as JSON: its selected fields, then its selected relations."""
    out: dict[str, Any] = {}
    for spec in selection.fields:
        value = obj.pk if spec.name == "id" else getattr(obj, spec.name)
        out[spec.name] = serialize_value(spec, value)
    for hop, nested in selection.relations:
        related = _related(obj, hop.relation.accessor)
        if hop.relation.to_many:
            out[hop.relation.name] = [render_object(nested, item) for item in related.all()]
        else:
            out[hop.relation.name] = render_object(nested, related) if related is not None else None
    return out


class DjangoBackend:
    """Executes validated specs with the Django ORM."""

    kind: ClassVar[str] = "django"
    runs_in_thread: ClassVar[bool] = True

    def all_rows(self, manager: type[Manager], actor: Any) -> QuerySet[Any]:
        """Every row of the manager's model (its default model manager)."""
        assert manager.model is not None
        rows: QuerySet[Any] = manager.model._default_manager.all()
        return rows

    def describe(self, manager: type[Manager], problems: list[str]) -> ManagerSchema | None:
        """Resolve a Django-backed manager (see `chatomon.data.django_schema`)."""
        return describe_model(manager, self, problems)

    def check_relation(
        self, schema: ManagerSchema, relation: str, target: ManagerSchema
    ) -> str | None:
        """The relation's model must be the target manager's model."""
        problem = mixed_backend_problem(schema, relation, target, self.kind)
        if problem is not None:
            return problem
        source_model = type(schema.manager).model
        target_model = type(target.manager).model
        related = related_model_of(source_model, relation)
        if target_model is None or related is None or not issubclass(related, target_model):
            shown = getattr(related, "__name__", related)
            return (
                f"{schema.name}.relations[{relation!r}] leads to {shown} rows, but "
                f"{target.name} manages {getattr(target_model, '__name__', 'records')}"
            )
        return None

    def run_query(self, spec: QuerySpec, actor: Any, timeout_seconds: float | None) -> QueryPage:
        """Count the matching rows, then load the page with its relations."""
        base = spec.schema.manager.get_queryset(actor)
        filtered, crosses_many = apply_conditions(base, spec.conditions, actor)
        if crosses_many:
            filtered = filtered.distinct()
        ordered = filtered.order_by(*(_order_expression(o) for o in spec.order_by))
        with statement_timeout(filtered.db, timeout_seconds):
            if spec.offset == 0:
                # A first page that is not full holds every match: no count needed.
                rows = self._page(ordered, spec, actor)
                total = len(rows) if len(rows) < spec.limit else count_rows(filtered)
            else:
                total = count_rows(filtered)
                rows = self._page(ordered, spec, actor) if total > spec.offset else []
        return QueryPage(rows, total)

    def _page(self, ordered: QuerySet[Any], spec: QuerySpec, actor: Any) -> list[dict[str, Any]]:
        rows = scalar_page(ordered, spec)
        if rows is not None:
            return rows
        page = with_selection(ordered, spec.selection, actor)
        objects = page[spec.offset : spec.offset + spec.limit]
        return [render_object(spec.selection, obj) for obj in objects]

    def run_aggregate(
        self, spec: AggregateSpec, actor: Any, timeout_seconds: float | None
    ) -> AggregatePage:
        """Group and aggregate in the database (see `chatomon.data.django_aggregate`)."""
        return run_aggregate(spec, actor, timeout_seconds)

    def fetch(self, schema: ManagerSchema, object_id: Any, actor: Any) -> Mapping[str, Any] | None:
        """The object `object_id` as JSON, if it is in the actor's scope."""
        try:
            wanted = coerce_scalar(schema.fields["id"], object_id, "id")
        except DataError:
            return None
        obj = schema.manager.get_queryset(actor).filter(pk=wanted).first()
        if obj is None:
            return None
        return render_object(Selection(schema, tuple(schema.fields.values())), obj)

    def serialize(self, schema: ManagerSchema, obj: Any) -> dict[str, Any] | None:
        """A model instance of the manager's model as its id and scalar fields."""
        model = type(schema.manager).model
        if model is not None and isinstance(obj, model):
            return render_object(Selection(schema, tuple(schema.fields.values())), obj)
        return None


DJANGO_BACKEND = DjangoBackend()
"""The one Django backend (it holds no state)."""
