"""Validated read requests: a query's filters, field selection, ordering and page.

`parse_query` checks the JSON arguments of the query tool against the schema index and
returns a `QuerySpec` that the backends execute as is; every mistake is a `DataError` with
a code the model can act on (unknown_manager, unknown_field, unknown_filter,
invalid_value, limit_exceeded). Nothing here touches data.

Filters are `field__lookup` keys (`name__icontains`), through relations with
`relation__field__lookup` (`material__name__iexact`); a relation alone compares the
related id (`material`, `material__in`, `material__isnull`). Fields are names, or objects
selecting a relation's fields (`{"material": ["name", "density"]}`), nested up to
`MAX_DEPTH` relations; a relation named alone selects the related object's fields.

An exact match on a text field ignores case (`{"name": "cobalt"}` finds Cobalt, as
`name__iexact` does): people and models write names in any case, and an empty result
from a case difference reads as a confident "no". `in`, `contains` and `startswith` keep
their case; the query tool's empty results point to `__icontains`. Errors say what would
work: the nearest valid names and a filter to copy (`chatomon.data.hints`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatomon.data import hints
from chatomon.data.coercion import coerce_filter_value
from chatomon.data.errors import DataError, did_you_mean
from chatomon.data.fields import RELATION_LOOKUPS
from chatomon.data.schema import FieldSchema, ManagerSchema, RelationSchema, SchemaIndex

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_DEPTH",
    "MAX_OFFSET",
    "Condition",
    "Hop",
    "Ordering",
    "QuerySpec",
    "Selection",
    "parse_filters",
    "parse_order_by",
    "parse_page",
    "parse_query",
    "parse_selection",
]

DEFAULT_LIMIT = 50
MAX_DEPTH = 3
MAX_OFFSET = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Hop:
    """One relation crossed by a filter, selection or grouping.

    Attributes:
        relation: The relation crossed.
        target: The schema of the manager it leads to.
    """

    relation: RelationSchema
    target: ManagerSchema


@dataclass(frozen=True, slots=True)
class Condition:
    """One validated filter: `hops` then `field` compared with `lookup` to `value`.

    Attributes:
        key: The filter key as the model wrote it.
        hops: The relations crossed, in order.
        field: The compared field of the last manager; its `id` when the key names a
            relation alone.
        lookup: The lookup (never "exact" with None: that becomes "isnull").
        value: The coerced value (a tuple for "in" and "range").
        on_relation: Whether the key names the last relation itself (`material__isnull`).
    """

    key: str
    hops: tuple[Hop, ...]
    field: FieldSchema
    lookup: str
    value: Any
    on_relation: bool = False


@dataclass(frozen=True, slots=True)
class Selection:
    """The fields to return for one manager, and the nested relation selections.

    Attributes:
        schema: The manager selected from.
        fields: The scalar fields, `id` first.
        relations: The selected relations with their nested selections.
    """

    schema: ManagerSchema
    fields: tuple[FieldSchema, ...]
    relations: tuple[tuple[Hop, Selection], ...] = ()


@dataclass(frozen=True, slots=True)
class Ordering:
    """One ordering key: a scalar field of the queried manager, ascending or descending.

    Empty values sort last in both directions.
    """

    field: FieldSchema
    descending: bool = False


@dataclass(frozen=True, slots=True)
class QuerySpec:
    """A validated query, ready for a backend.

    Attributes:
        schema: The queried manager.
        conditions: The filters (all must hold).
        selection: What each row returns.
        order_by: The ordering keys; `id` always ends them, so pages are stable.
        limit: The page size.
        offset: The rows skipped.
    """

    schema: ManagerSchema
    conditions: tuple[Condition, ...]
    selection: Selection
    order_by: tuple[Ordering, ...]
    limit: int
    offset: int


def _parse_condition(index: SchemaIndex, schema: ManagerSchema, key: str, raw: Any) -> Condition:
    parts = key.split("__")
    hops: list[Hop] = []
    current = schema
    position = 0
    while True:
        name = parts[position]
        rest = parts[position + 1 :]
        prefix = "".join(f"{part}__" for part in parts[:position])
        if name in current.relations and name in current.filters:
            relation = current.relations[name]
            hops.append(Hop(relation, index.managers[relation.target]))
            if len(hops) > MAX_DEPTH:
                raise DataError(
                    f"{key}: filters cross at most {MAX_DEPTH} relations", code="invalid_value"
                )
            current = hops[-1].target
            if not rest or (len(rest) == 1 and rest[0] in RELATION_LOOKUPS):
                lookup = rest[0] if rest else "exact"
                return _relation_condition(index, key, prefix, tuple(hops), lookup=lookup, raw=raw)
            position += 1
            continue
        if name in current.fields and (name == "id" or name in current.filters):
            spec = current.fields[name]
            lookup = rest[0] if len(rest) == 1 else "exact"
            if len(rest) > 1 or lookup not in spec.lookups:
                raise hints.unknown_lookup(
                    key, prefix, current, spec, lookup="__".join(rest), raw=raw
                )
            return _condition(key, tuple(hops), spec, lookup=lookup, raw=raw, on_relation=False)
        raise hints.unknown_filter(index, current, key, position, raw)


def _relation_condition(
    index: SchemaIndex, key: str, prefix: str, hops: tuple[Hop, ...], *, lookup: str, raw: Any
) -> Condition:
    """A condition on a relation itself (it compares ids); a name instead says what to write."""
    try:
        return _condition(key, hops, hops[-1].target.fields["id"], lookup=lookup, raw=raw,
                          on_relation=True)  # fmt: skip
    except DataError as error:
        if lookup == "isnull":
            raise
        relation = hops[-1].relation
        hint = hints.relation_value_hint(index, prefix, relation.name, relation.target, raw)
        shown = hint if key == f"{prefix}{relation.name}" else f"{key}: {hint}"
        raise DataError(shown, code="invalid_value") from error


def _condition(
    key: str,
    hops: tuple[Hop, ...],
    spec: FieldSchema,
    *,
    lookup: str,
    raw: Any,
    on_relation: bool,
) -> Condition:
    if lookup == "exact" and raw is None:
        # Django's reading too: "field equals null" asks for empty values.
        return Condition(key, hops, spec, "isnull", True, on_relation)
    if raw is None:
        raise DataError(
            f"{key}: null is not a value to compare; use {key.rsplit('__', 1)[0]}__isnull",
            code="invalid_value",
        )
    value = coerce_filter_value(spec, lookup, raw, key)
    if lookup == "exact" and spec.type == "string" and spec.name != "id" and not on_relation:
        # A person asking for "cobalt" means Cobalt: an exact text match ignores case, so a
        # model that writes the user's spelling does not get an empty answer it trusts.
        lookup = "iexact"
    return Condition(key, hops, spec, lookup, value, on_relation)


def parse_filters(index: SchemaIndex, schema: ManagerSchema, filters: Any) -> tuple[Condition, ...]:
    """Validate a filters object (`{"field__lookup": value}`) against `schema`."""
    if filters is None:
        return ()
    if not isinstance(filters, Mapping):
        raise DataError(
            'filters must be an object such as {"name__icontains": "bolt"}', code="invalid_value"
        )
    conditions = []
    for key, raw in filters.items():
        if not isinstance(key, str) or not key or "" in key.split("__"):
            raise hints.unknown_filter(index, schema, str(key), 0, raw)
        conditions.append(_parse_condition(index, schema, key, raw))
    return tuple(conditions)


def _default_selection(schema: ManagerSchema) -> Selection:
    return Selection(schema, tuple(schema.fields.values()))


def parse_selection(
    index: SchemaIndex, schema: ManagerSchema, fields: Any, depth: int = 0
) -> Selection:
    """Validate a fields list against `schema`; None or [] selects every scalar field."""
    if fields is None or (isinstance(fields, list) and not fields):
        return _default_selection(schema)
    if not isinstance(fields, list):
        raise DataError(
            'fields must be a list such as ["name", {"material": ["name"]}]',
            code="invalid_value",
        )
    chosen: dict[str, FieldSchema] = {"id": schema.fields["id"]}
    nested: dict[str, tuple[Hop, Selection]] = {}
    for item in _paths_nested(schema, fields):
        if isinstance(item, str):
            _select_name(index, schema, item, depth=depth, chosen=chosen, nested=nested)
        elif isinstance(item, Mapping) and item:
            for name, sub in item.items():
                _select_relation(index, schema, str(name), sub=sub, depth=depth, nested=nested)
        else:
            raise DataError(
                'each entry of fields is a field name or an object such as {"material": ["name"]}',
                code="invalid_value",
            )
    return Selection(schema, tuple(chosen.values()), tuple(nested.values()))


def _paths_nested(schema: ManagerSchema, fields: list[Any]) -> list[Any]:
    """`fields` with each relation path ("material__name") as a nested selection.

    Paths through the same relation join one selection, where the first of them stood:
    `["name", "parts__name", "parts__material__name"]` reads as
    `["name", {"parts": ["name", "material__name"]}]` (the inner path is read the same
    way one level down). Models write fields as they write filters: Qwen2.5-Coder-1.5B
    asked for `material__name` in 3 of the 10 multi_hop eval cases.
    """
    if not any(isinstance(item, str) and "__" in item for item in fields):
        return fields
    expanded: list[Any] = []
    paths: dict[str, list[Any]] = {}
    for item in fields:
        head, _, rest = item.partition("__") if isinstance(item, str) else ("", "", "")
        if not rest or head not in schema.relations:
            expanded.append(item)  # a field, a relation, an object, or a wrong name to report
            continue
        if head not in paths:
            paths[head] = []
            expanded.append({head: paths[head]})
        paths[head].append(rest)
    return expanded


def _select_name(
    index: SchemaIndex,
    schema: ManagerSchema,
    name: str,
    *,
    depth: int,
    chosen: dict[str, FieldSchema],
    nested: dict[str, tuple[Hop, Selection]],
) -> None:
    if name in schema.fields:
        chosen[name] = schema.fields[name]
    elif name in schema.relations:
        _select_relation(index, schema, name, sub=None, depth=depth, nested=nested)
    else:
        raise hints.unknown_member(index, schema, name)


def _select_relation(
    index: SchemaIndex,
    schema: ManagerSchema,
    name: str,
    *,
    sub: Any,
    depth: int,
    nested: dict[str, tuple[Hop, Selection]],
) -> None:
    relation = schema.relations.get(name)
    if relation is None:
        members = [*schema.fields, *schema.relations]
        raise DataError(
            f"{schema.name} has no relation {name!r}{did_you_mean(name, schema.relations)}",
            code="unknown_field",
            allowed=members,
        )
    if depth + 1 > MAX_DEPTH:
        raise DataError(f"fields nest at most {MAX_DEPTH} relations deep", code="invalid_value")
    if name in nested:
        raise DataError(
            f"fields name the relation {name!r} twice (a path and an object, or two "
            "objects): name it once, as paths or as one object holding every field wanted",
            code="invalid_value",
        )
    hop = Hop(relation, index.managers[relation.target])
    nested[name] = (hop, parse_selection(index, hop.target, sub, depth + 1))


def parse_order_by(schema: ManagerSchema, order_by: Any) -> tuple[Ordering, ...]:
    """Validate order_by (field names, "-" for descending); `id` is appended as tiebreaker."""
    if order_by is None:
        order_by = []
    if not isinstance(order_by, list) or not all(isinstance(key, str) for key in order_by):
        raise DataError('order_by must be a list of field names such as ["-unit_cost"]')
    keys: list[Ordering] = []
    for key in order_by:
        name = key[1:] if key.startswith("-") else key
        spec = schema.fields.get(name)
        if spec is None:
            hint = did_you_mean(name, schema.fields)
            raise DataError(
                f"order_by: {schema.name} has no field {name!r}{hint} (relations cannot order)",
                code="unknown_field",
                allowed=list(schema.fields),
            )
        if all(existing.field.name != name for existing in keys):
            keys.append(Ordering(spec, key.startswith("-")))
    if all(existing.field.name != "id" for existing in keys):
        keys.append(Ordering(schema.fields["id"]))
    return tuple(keys)


def _integer_argument(name: str, value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(f"{name} must be an integer", code="invalid_value")
    return value


def parse_page(limit: Any, offset: Any, max_results: int) -> tuple[int, int]:
    """Validate limit (default 50, at most max_results) and offset (default 0)."""
    size = _integer_argument("limit", limit, min(DEFAULT_LIMIT, max_results))
    skip = _integer_argument("offset", offset, 0)
    if size < 1:
        raise DataError("limit must be at least 1", code="invalid_value")
    if size > max_results:
        raise DataError(
            f"limit {size} is above the maximum of {max_results}; "
            f"ask for at most {max_results} rows and page with offset",
            code="limit_exceeded",
        )
    if not 0 <= skip <= MAX_OFFSET:
        raise DataError(f"offset must be between 0 and {MAX_OFFSET}", code="invalid_value")
    return size, skip


def parse_query(
    index: SchemaIndex,
    manager: Any,
    *,
    filters: Any = None,
    fields: Any = None,
    order_by: Any = None,
    limit: Any = None,
    offset: Any = None,
    max_results: int,
) -> QuerySpec:
    """Validate the query tool's arguments into a QuerySpec.

    Raises:
        DataError: With the code of the first problem found.
    """
    schema = index.get(manager)
    size, skip = parse_page(limit, offset, max_results)
    return QuerySpec(
        schema=schema,
        conditions=parse_filters(index, schema, filters),
        selection=parse_selection(index, schema, fields),
        order_by=parse_order_by(schema, order_by),
        limit=size,
        offset=skip,
    )
