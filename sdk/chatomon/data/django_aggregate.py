"""Aggregates in the database: one grouped query, values finished exactly in Python.

Counts, sums, minima and maxima are SQL aggregates. An average is sent as a sum and a count
of non-empty values and divided here (see `chatomon.data.aggregate`), because SQLite's AVG
works in floating point and PostgreSQL's returns a different number of digits. When a
filter crosses a to-many relation, the rows are first narrowed by id in a subquery, so the
join cannot count a row twice. Group keys through a relation to a scoped manager read as
null for related rows outside the scope.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Case, Count, F, Max, Min, Q, QuerySet, Sum, When

from chatomon.data.aggregate import AggregateSpec, GroupKey, Metric, average
from chatomon.data.backend import AggregatePage
from chatomon.data.django_conditions import apply_conditions, field_path, scope_conditions
from chatomon.data.django_timeout import statement_timeout
from chatomon.data.serialization import json_value, serialize_value

__all__ = ["run_aggregate"]


def _group_expression(key: GroupKey, actor: Any) -> F | Case:
    expression = F(field_path(key.hops, key.field.name))
    scopes = scope_conditions(key.hops, actor)
    if not scopes:
        return expression
    inside = Q()
    for clause in scopes:
        inside &= clause
    return Case(When(inside, then=expression), default=None)


def _aggregates(metrics: tuple[Metric, ...]) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    for number, metric in enumerate(metrics):
        if metric.field is None:
            parts[f"chatomon_m{number}"] = Count("pk")
            continue
        name = "pk" if metric.field.name == "id" else metric.field.name
        if metric.op == "count":
            parts[f"chatomon_m{number}"] = Count(name)
        elif metric.op in ("sum", "avg"):
            parts[f"chatomon_m{number}"] = Sum(name)
            parts[f"chatomon_n{number}"] = Count(name)
        else:
            parts[f"chatomon_m{number}"] = (Min if metric.op == "min" else Max)(name)
    return parts


def _finish(metrics: tuple[Metric, ...], row: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for number, metric in enumerate(metrics):
        raw = row[f"chatomon_m{number}"]
        field = metric.field
        if field is None or metric.op == "count":
            values[metric.name] = int(raw or 0)
        elif metric.op == "avg":
            values[metric.name] = json_value(
                average(field, raw, int(row[f"chatomon_n{number}"] or 0))
            )
        elif field.type == "integer" and raw is not None:
            # PostgreSQL sums bigints as numeric: keep integers integers.
            values[metric.name] = int(raw)
        else:
            values[metric.name] = serialize_value(field, raw)
    return values


def run_aggregate(spec: AggregateSpec, actor: Any, timeout_seconds: float | None) -> AggregatePage:
    """Execute a validated aggregate on the manager's model."""
    base: QuerySet[Any] = spec.schema.manager.get_queryset(actor)
    filtered, crosses_many = apply_conditions(base, spec.conditions, actor)
    if crosses_many:
        filtered = base.model._default_manager.filter(pk__in=filtered.values("pk"))
    aggregates = _aggregates(spec.metrics)
    with statement_timeout(filtered.db, timeout_seconds):
        if not spec.group_by:
            row = filtered.order_by().aggregate(**aggregates)
            return AggregatePage([{"group": {}, "values": _finish(spec.metrics, row)}], False)
        names = {f"chatomon_g{number}": key for number, key in enumerate(spec.group_by)}
        grouped = (
            filtered.order_by()
            .annotate(**{name: _group_expression(key, actor) for name, key in names.items()})
            .values(*names)
            .annotate(**aggregates)
            .order_by(*(F(name).asc(nulls_last=True) for name in names))
        )
        rows = list(grouped[: spec.max_groups + 1])
    groups = [
        {
            "group": {
                key.key: serialize_value(key.field, row[name]) for name, key in names.items()
            },
            "values": _finish(spec.metrics, row),
        }
        for row in rows[: spec.max_groups]
    ]
    return AggregatePage(groups, len(rows) > spec.max_groups)
