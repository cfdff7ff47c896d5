"""The records backend: managers over lists of dicts, for notebooks, tests and demos.

It executes the same validated specs as the Django backend, with the same meaning:
conditions through one relation hold for one related record together (as in a single
Django `filter()` call), relations read only records in the target manager's scope,
empty values sort last, and sums are exact (Decimal arithmetic for decimals, `math.fsum`
for floats). Reads run inline: there is no I/O. `query_timeout_seconds` does not apply.
String lookups compare case-sensitively, as on PostgreSQL (SQLite's `contains` ignores
case for ASCII).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

from chatomon.data.aggregate import AggregateSpec, average
from chatomon.data.backend import AggregatePage, QueryPage, mixed_backend_problem
from chatomon.data.coercion import coerce_scalar
from chatomon.data.errors import DataError
from chatomon.data.manager import Manager
from chatomon.data.query import Condition, Hop, Ordering, QuerySpec, Selection
from chatomon.data.records_schema import describe_records
from chatomon.data.schema import ManagerSchema
from chatomon.data.serialization import json_value, serialize_value

__all__ = ["RECORDS_BACKEND", "RecordsBackend"]

Row = Mapping[str, Any]
Test = Callable[[Row], bool]


def comparable(value: Any) -> Any:
    """A stored value made comparable with coerced filter values (naive datetimes as UTC)."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "exact": operator.eq,
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}


def _value_test(lookup: str, wanted: Any, datetimes: bool) -> Callable[[Any], bool]:
    """A test of one stored value; stored datetimes are made comparable only when needed."""
    prepare = comparable if datetimes else _unchanged
    if lookup == "isnull":
        return lambda value: (value is None) is wanted
    if lookup == "iexact":
        return lambda value: value is not None and value.casefold() == wanted.casefold()
    if lookup == "contains":
        return lambda value: value is not None and wanted in value
    if lookup == "icontains":
        folded = wanted.casefold()
        return lambda value: value is not None and folded in value.casefold()
    if lookup == "startswith":
        return lambda value: value is not None and value.startswith(wanted)
    if lookup == "in":
        choices = frozenset(wanted)
        return lambda value: value is not None and prepare(value) in choices
    if lookup == "range":
        low, high = wanted
        return lambda value: value is not None and low <= prepare(value) <= high
    compare = _COMPARISONS[lookup]
    if datetimes:
        return lambda value: value is not None and compare(comparable(value), wanted)
    return lambda value: value is not None and compare(value, wanted)


def _unchanged(value: Any) -> Any:
    return value


def _every(tests: Sequence[Test]) -> Test:
    if len(tests) == 1:
        return tests[0]

    def check(row: Row) -> bool:
        return all(test(row) for test in tests)

    return check


def _stored_reference_is_empty(row: Row, name: str) -> bool:
    value = row.get(name)
    return value is None or (isinstance(value, list | tuple) and not value)


def _reference_test(accessor: str, empty: bool) -> Test:
    return lambda row: _stored_reference_is_empty(row, accessor) is empty


class _Read:
    """One read: each manager's scoped rows, fetched once and indexed by id."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self._rows: dict[str, list[Row]] = {}
        self._by_id: dict[str, dict[Any, Row]] = {}

    def rows(self, schema: ManagerSchema) -> list[Row]:
        if schema.name not in self._rows:
            self._rows[schema.name] = list(schema.manager.get_queryset(self.actor))
        return self._rows[schema.name]

    def index(self, schema: ManagerSchema) -> dict[Any, Row]:
        """The scoped rows of `schema` by id."""
        if schema.name not in self._by_id:
            self._by_id[schema.name] = {r["id"]: r for r in self.rows(schema)}
        return self._by_id[schema.name]

    def related(self, hop: Hop, row: Row) -> list[Row]:
        """The related rows in the target's scope, in id order."""
        index = self.index(hop.target)
        value = row.get(hop.relation.accessor)
        ids = value if isinstance(value, list | tuple) else () if value is None else (value,)
        found = [index[i] for i in ids if i in index]
        return sorted(found, key=lambda r: r["id"]) if len(found) > 1 else found

    def test(self, conditions: Sequence[Condition], depth: int = 0) -> Test:
        """One predicate for `conditions`, grouping them by the relation they cross."""
        tests: list[Test] = []
        groups: dict[str, list[Condition]] = {}
        for condition in conditions:
            if len(condition.hops) == depth:
                tests.append(self._field_test(condition))
            elif (
                condition.on_relation
                and condition.lookup == "isnull"
                and len(condition.hops) == depth + 1
            ):
                accessor = condition.hops[depth].relation.accessor
                tests.append(_reference_test(accessor, condition.value))
            else:
                groups.setdefault(condition.hops[depth].relation.name, []).append(condition)
        tests.extend(
            self._related_test(members[0].hops[depth], self.test(members, depth + 1))
            for members in groups.values()
        )
        return _every(tests)

    def _related_test(self, hop: Hop, inner: Test) -> Test:
        index, accessor = self.index(hop.target), hop.relation.accessor
        if not hop.relation.to_many:

            def through_one(row: Row) -> bool:
                target = index.get(row.get(accessor))
                return target is not None and inner(target)

            return through_one

        def through_many(row: Row) -> bool:
            return any(i in index and inner(index[i]) for i in row.get(accessor) or ())

        return through_many

    @staticmethod
    def _field_test(condition: Condition) -> Test:
        datetimes = condition.field.type == "datetime"
        name = condition.field.name
        check = _value_test(condition.lookup, condition.value, datetimes)
        return lambda row: check(row.get(name))

    def render(self, selection: Selection, row: Row) -> dict[str, Any]:
        """One row as JSON: its selected fields, then its selected relations."""
        out = {spec.name: serialize_value(spec, row.get(spec.name)) for spec in selection.fields}
        for hop, nested in selection.relations:
            related = self.related(hop, row)
            if hop.relation.to_many:
                out[hop.relation.name] = [self.render(nested, r) for r in related]
            else:
                out[hop.relation.name] = self.render(nested, related[0]) if related else None
        return out

    def through(self, hops: Sequence[Hop], row: Row) -> Row | None:
        """The row reached over to-one `hops` (None when a link is empty or out of scope)."""
        current: Row | None = row
        for hop in hops:
            if current is None:
                return None
            found = self.related(hop, current)
            current = found[0] if found else None
        return current


def _ordered(rows: list[Row], order_by: Sequence[Ordering]) -> list[Row]:
    for ordering in reversed(order_by):
        name = ordering.field.name
        present = [row for row in rows if row.get(name) is not None]
        if ordering.field.type == "datetime":
            present.sort(key=lambda row: comparable(row[name]), reverse=ordering.descending)
        else:
            present.sort(key=operator.itemgetter(name), reverse=ordering.descending)
        rows = present + [row for row in rows if row.get(name) is None]
    return rows


def _metric_values(spec: AggregateSpec, rows: Sequence[Row]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for metric in spec.metrics:
        if metric.field is None:
            values[metric.name] = len(rows)
            continue
        field = metric.field
        present = [comparable(row[field.name]) for row in rows if row.get(field.name) is not None]
        if metric.op == "count":
            values[metric.name] = len(present)
        elif metric.op in ("sum", "avg"):
            total = _exact_sum(field.type, present) if present else None
            if metric.op == "sum":
                values[metric.name] = serialize_value(field, total)
            else:
                values[metric.name] = json_value(average(field, total, len(present)))
        else:
            chosen = (min if metric.op == "min" else max)(present) if present else None
            values[metric.name] = serialize_value(field, chosen)
    return values


def _exact_sum(kind: str, values: Sequence[Any]) -> Any:
    if kind == "decimal":
        return sum((Decimal(value) for value in values), Decimal(0))
    if kind == "float":
        return math.fsum(values)
    return sum(values)


def _group_sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((value is None, value if value is not None else 0) for value in key)


class RecordsBackend:
    """Executes validated specs over the managers' record lists."""

    kind: ClassVar[str] = "records"
    runs_in_thread: ClassVar[bool] = False

    def all_rows(self, manager: type[Manager], actor: Any) -> list[Row]:
        """The manager's records, narrowed by its `record_scope` when it has one."""
        rows = manager.records or []
        scope = manager.record_scope
        return list(scope(actor, rows)) if scope is not None else list(rows)

    def describe(self, manager: type[Manager], problems: list[str]) -> ManagerSchema | None:
        """Resolve a records manager (see `chatomon.data.records_schema`)."""
        return describe_records(manager, self, problems)

    def check_relation(
        self, schema: ManagerSchema, relation: str, target: ManagerSchema
    ) -> str | None:
        """Records relations may lead only to records managers."""
        return mixed_backend_problem(schema, relation, target, self.kind)

    def run_query(self, spec: QuerySpec, actor: Any, timeout_seconds: float | None) -> QueryPage:
        """Filter, order and page the scoped records, then render the selection."""
        read = _Read(actor)
        test = read.test(spec.conditions)
        matched = [row for row in read.rows(spec.schema) if test(row)]
        page = _ordered(matched, spec.order_by)[spec.offset : spec.offset + spec.limit]
        return QueryPage([read.render(spec.selection, row) for row in page], len(matched))

    def run_aggregate(
        self, spec: AggregateSpec, actor: Any, timeout_seconds: float | None
    ) -> AggregatePage:
        """Group the matching records and compute each metric exactly."""
        read = _Read(actor)
        test = read.test(spec.conditions)
        groups: dict[tuple[Any, ...], list[Row]] = {}
        for row in read.rows(spec.schema):
            if test(row):
                key = tuple(
                    comparable(reached.get(k.field.name))
                    if (reached := read.through(k.hops, row)) is not None
                    else None
                    for k in spec.group_by
                )
                groups.setdefault(key, []).append(row)
        if not spec.group_by and not groups:
            groups[()] = []
        ordered = sorted(groups, key=_group_sort_key)
        shown = [
            {
                "group": {
                    k.key: serialize_value(k.field, value)
                    for k, value in zip(spec.group_by, key, strict=True)
                },
                "values": _metric_values(spec, groups[key]),
            }
            for key in ordered[: spec.max_groups]
        ]
        return AggregatePage(shown, len(ordered) > spec.max_groups)

    def fetch(self, schema: ManagerSchema, object_id: Any, actor: Any) -> Mapping[str, Any] | None:
        """The object `object_id` as JSON, if it is in the actor's scope."""
        try:
            wanted = coerce_scalar(schema.fields["id"], object_id, "id")
        except DataError:
            return None
        for row in schema.manager.get_queryset(actor):
            if row.get("id") == wanted:
                return {
                    name: serialize_value(f, row.get(name)) for name, f in schema.fields.items()
                }
        return None

    def serialize(self, schema: ManagerSchema, obj: Any) -> dict[str, Any] | None:
        """A record (a dict with an id) as its id and scalar fields."""
        if isinstance(obj, Mapping) and "id" in obj:
            return {name: serialize_value(f, obj.get(name)) for name, f in schema.fields.items()}
        return None


RECORDS_BACKEND = RecordsBackend()
"""The one records backend (it holds no state)."""
