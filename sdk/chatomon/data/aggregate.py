"""Validated aggregate requests and the exact finishing of their values.

`parse_aggregate` checks the aggregate tool's arguments: filters (as for query), group_by
(scalar fields, also across to-one relations: `material__name`) and metrics
(`{"op": "sum", "field": "unit_cost"}`; ops count, sum, avg, min, max). The database
computes counts, sums, minima and maxima; an average is its sum divided by its count of
non-empty values, here, so every backend returns the same digits:

- sums, minima and maxima of decimal fields are Decimals at the field's decimal places;
- the average of a decimal field is rounded half-even to its decimal places + 4;
- integer sums are integers; averages of integers and floats are floats.

A value is named `count` (rows) or `<op>_<field>` (`sum_unit_cost`, `count_weight_kg`
counts non-empty values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

from chatomon.data import hints
from chatomon.data.errors import DataError, did_you_mean
from chatomon.data.fields import NUMERIC_TYPES, ORDERED_TYPES
from chatomon.data.query import MAX_DEPTH, Condition, Hop, parse_filters
from chatomon.data.schema import FieldSchema, ManagerSchema, SchemaIndex

__all__ = [
    "AVERAGE_EXTRA_PLACES",
    "MAX_METRICS",
    "OPS",
    "AggregateSpec",
    "GroupKey",
    "Metric",
    "average",
    "parse_aggregate",
]

OPS = ("count", "sum", "avg", "min", "max")
MAX_METRICS = 10
MAX_GROUP_KEYS = 5
AVERAGE_EXTRA_PLACES = 4


@dataclass(frozen=True, slots=True)
class GroupKey:
    """One group_by key: to-one relations crossed, then a scalar field.

    Attributes:
        key: The key as written (`material__name`), also its name in each group.
        hops: The to-one relations crossed.
        field: The grouped field.
    """

    key: str
    hops: tuple[Hop, ...]
    field: FieldSchema


@dataclass(frozen=True, slots=True)
class Metric:
    """One computed value.

    Attributes:
        op: count, sum, avg, min or max.
        field: The field it reads (None: count rows).
        name: Its key in each group's values.
    """

    op: str
    field: FieldSchema | None
    name: str


@dataclass(frozen=True, slots=True)
class AggregateSpec:
    """A validated aggregate, ready for a backend.

    Attributes:
        schema: The aggregated manager.
        conditions: The filters.
        group_by: The grouping keys (none: one group of every matching row).
        metrics: The values computed per group.
        max_groups: At most this many groups are returned (sorted by their keys).
    """

    schema: ManagerSchema
    conditions: tuple[Condition, ...]
    group_by: tuple[GroupKey, ...]
    metrics: tuple[Metric, ...]
    max_groups: int


def _group_key(index: SchemaIndex, schema: ManagerSchema, key: Any) -> GroupKey:
    if not isinstance(key, str) or not key:
        raise DataError("group_by entries are field names such as 'material__name'")
    parts = key.split("__")
    hops: list[Hop] = []
    current = schema
    for name in parts[:-1]:
        relation = current.relations.get(name)
        if relation is None:
            raise DataError(
                f"group_by {key!r}: {current.name} has no relation {name!r}"
                f"{did_you_mean(name, current.relations)}",
                code="unknown_field",
                allowed=list(current.relations),
            )
        if relation.to_many:
            raise DataError(
                f"group_by {key!r}: {name!r} is a to-many relation; aggregate "
                f"{relation.target} instead, or group by a to-one relation",
                code="invalid_value",
            )
        hops.append(Hop(relation, index.managers[relation.target]))
        current = hops[-1].target
    if len(hops) > MAX_DEPTH:
        raise DataError(f"group_by crosses at most {MAX_DEPTH} relations")
    name = parts[-1]
    if name not in current.fields:
        members = [*current.fields, *current.relations]
        hint = ""
        if name in current.relations:
            target = index.managers[current.relations[name].target]
            label = hints.label_field(target) or next(iter(target.fields))
            hint = f" (group by one of {target.name}'s fields: '{key}__{label}')"
        raise DataError(
            f"group_by {key!r}: {current.name} has no field {name!r}"
            f"{did_you_mean(name, current.fields)}{hint}",
            code="unknown_field",
            allowed=members,
        )
    return GroupKey(key, tuple(hops), current.fields[name])


def _metric(schema: ManagerSchema, raw: Any) -> Metric:
    if not isinstance(raw, Mapping) or "op" not in raw:
        raise DataError('each metric is an object such as {"op": "sum", "field": "unit_cost"}')
    op, field_name = raw.get("op"), raw.get("field")
    if op not in OPS:
        raise DataError(
            f"metric op {op!r} is not one of {', '.join(OPS)}", code="invalid_value", allowed=OPS
        )
    if field_name is None:
        if op != "count":
            raise DataError(f"metric {op!r} needs a field", code="invalid_value")
        return Metric("count", None, "count")
    if not isinstance(field_name, str):
        raise DataError("metric field must be a field name", code="invalid_value")
    spec = schema.field_named(field_name)
    allowed_types = {
        "sum": NUMERIC_TYPES,
        "avg": NUMERIC_TYPES,
        "min": ORDERED_TYPES,
        "max": ORDERED_TYPES,
    }.get(op)
    if allowed_types is not None and spec.type not in allowed_types:
        raise DataError(
            f"{op} needs a field of type {', '.join(allowed_types)}; "
            f"{schema.name}.{field_name} is {spec.type}",
            code="invalid_value",
            allowed=[f.name for f in schema.fields.values() if f.type in allowed_types],
        )
    return Metric(op, spec, f"{op}_{field_name}")


def parse_aggregate(
    index: SchemaIndex,
    manager: Any,
    *,
    filters: Any = None,
    group_by: Any = None,
    metrics: Any = None,
    max_groups: int,
) -> AggregateSpec:
    """Validate the aggregate tool's arguments into an AggregateSpec.

    Raises:
        DataError: With the code of the first problem found.
    """
    schema = index.get(manager)
    conditions = parse_filters(index, schema, filters)
    keys = _sequence("group_by", group_by, MAX_GROUP_KEYS)
    group_keys = {key.key: key for key in (_group_key(index, schema, raw) for raw in keys)}
    raw_metrics = _sequence("metrics", metrics, MAX_METRICS) or [{"op": "count"}]
    parsed = {metric.name: metric for metric in (_metric(schema, raw) for raw in raw_metrics)}
    return AggregateSpec(
        schema=schema,
        conditions=conditions,
        group_by=tuple(group_keys.values()),
        metrics=tuple(parsed.values()),
        max_groups=max_groups,
    )


def _sequence(name: str, value: Any, most: int) -> Sequence[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"{name} must be a list", code="invalid_value")
    if len(value) > most:
        raise DataError(f"{name} takes at most {most} entries", code="invalid_value")
    return value


def average(spec: FieldSchema, total: Any, count: int) -> Any:
    """The average of `count` non-empty values summing to `total` (None when count is 0)."""
    if not count or total is None:
        return None
    if spec.type == "decimal":
        places = (spec.decimal_places or 0) + AVERAGE_EXTRA_PLACES
        context = Context(prec=80, rounding=ROUND_HALF_EVEN)
        quotient = context.divide(Decimal(total), Decimal(count))
        return quotient.quantize(Decimal(1).scaleb(-places), context=context)
    return float(total) / count
