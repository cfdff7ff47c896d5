"""What a tool error says would work: the nearest valid names and a filter to copy.

A model that reads only "PartManager cannot be filtered by 'material'" tends to send the
same call again, or to pass the error text on to the user. So the read errors of the data
layer name the valid fields and lookups nearest to what was asked (through
`chatomon._suggest`, the one "did you mean" of chatomon) and give an example filter built
from the manager's own names and the value the model sent:

- `{"material": "Steel"}`, where material is a relation (it compares ids): filter on a
  field of MaterialManager: `{"material__name": "Steel"}`;
- `{"density__gt": 5}` on parts, where density is a field of the related material:
  `{"material__density__gt": 5}`;
- `{"name__like": "bolt"}`: `{"name__icontains": "bolt"}`;
- `{"part_id": "P-1002"}` on projects: the part's field whose description shows a value
  of the same form ("Part number, such as P-1001."): `{"parts__number": "P-1002"}`, not
  its name (seen from Qwen2.5-Coder-1.5B in the demo: `parts__name` found nothing and it
  answered that no project uses the part).

Nothing here reads data; every name comes from the schema index, so no hint can name a
manager or field the assistant may not see.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chatomon._suggest import closest, did_you_mean
from chatomon.data.errors import DataError
from chatomon.data.fields import LOOKUPS, NUMERIC_TYPES, ORDERED_TYPES
from chatomon.data.schema import FieldSchema, ManagerSchema, SchemaIndex
from chatomon.data.search import normalize_words

__all__ = [
    "LOOKUP_ALIASES",
    "comparison",
    "counted_member",
    "example",
    "field_elsewhere",
    "filter_names",
    "label_field",
    "listing",
    "lookup_alias",
    "manager_path",
    "member_path",
    "operator_value_hint",
    "relation_value_hint",
    "reverse_relation",
    "shaped_field",
    "unknown_filter",
    "unknown_lookup",
    "unknown_member",
]

LOOKUP_ALIASES = {
    "like": "icontains",
    "ilike": "icontains",
    "has": "icontains",
    "includes": "icontains",
    "include": "icontains",
    "search": "icontains",
    "match": "icontains",
    "regex": "icontains",
    "iregex": "icontains",
    "endswith": "icontains",
    "iendswith": "icontains",
    "istartswith": "icontains",
    ">": "gt",
    ">=": "gte",
    "<": "lt",
    "<=": "lte",
    "eq": "exact",
    "equals": "exact",
    "is": "exact",
    "ge": "gte",
    "le": "lte",
    "between": "range",
    "null": "isnull",
    "isempty": "isnull",
}
"""Lookups of other query languages, and the chatomon lookup that does what they mean."""

_LABELS = ("name", "title", "label", "number", "code", "email", "username")
"""Field names that usually hold what people call an object by, in order of preference."""

_LISTED = 12
"""The most names a message lists (the error's `allowed` carries them all)."""


_DIGITS = re.compile(r"\d+")
_TOKEN = re.compile(r"[^\s,;:()\"'«»“”]+")


def _shape(text: str) -> str:
    """A code's form: its letters and punctuation as written, each run of digits as one 9."""
    return _DIGITS.sub("9", text.strip(".").casefold())


def shaped_field(schema: ManagerSchema, value: Any) -> str | None:
    """The text field whose description shows a value of `value`'s form, or None.

    "P-1002" has the form of the "P-1001" in "Part number, such as P-1001.", so it is a
    part number, not a part name. Only a value holding a digit and no space is taken for a
    code: a word such as "Steel" has the form of any word.
    """
    if not isinstance(value, str) or not _DIGITS.search(value) or any(c.isspace() for c in value):
        return None
    wanted = _shape(value)
    for name, spec in schema.fields.items():
        if spec.type != "string" or name == "id":
            continue
        if any(_shape(token) == wanted for token in _TOKEN.findall(spec.description)):
            return name
    return None


def label_field(schema: ManagerSchema, value: Any = None) -> str | None:
    """The text field people name `schema`'s objects by (name, title, ...), or None.

    With the `value` to filter by, a field whose description shows a value of its form
    comes first (`shaped_field`: "P-1002" → the part's number).
    """
    if (shaped := shaped_field(schema, value)) is not None:
        return shaped
    strings = [name for name, spec in schema.fields.items() if spec.type == "string"]
    for preferred in _LABELS:
        if preferred in strings:
            return preferred
    return strings[0] if strings else None


def example(key: str, value: Any) -> str:
    """A one-entry filter object as JSON, with a value that is short enough to read."""
    if isinstance(value, str) and len(value) > 40:
        value = value[:40]
    elif not isinstance(value, str | int | float | bool | list) or value is None:
        value = "..."
    return json.dumps({key: value}, ensure_ascii=False)


def listing(names: Iterable[str]) -> str:
    """`names` joined for a message, cut after a dozen (the error's `allowed` has them all)."""
    shown = list(names)
    if len(shown) <= _LISTED:
        return ", ".join(shown)
    return ", ".join(shown[:_LISTED]) + f", ... ({len(shown) - _LISTED} more)"


def lookup_alias(lookup: str, allowed: Sequence[str]) -> str | None:
    """The allowed lookup nearest to `lookup`: its alias (`like` → icontains) or a near miss."""
    alias = LOOKUP_ALIASES.get(lookup.lower())
    if alias is not None and alias in allowed:
        return alias
    if lookup.lower() in allowed:
        return lookup.lower()
    return closest(lookup, allowed)


def relation_value_hint(
    index: SchemaIndex, prefix: str, relation: str, target: str, value: Any
) -> str:
    """How to filter a relation by a value that is not an id.

    `prefix` is the key up to the relation (`parts__` for `parts__material`).
    """
    schema = index.managers[target]
    shown = value[0] if isinstance(value, list) and value else value
    label = label_field(schema, shown)
    if label is None:
        return f"{prefix}{relation} compares {target} ids; filter on one of its fields instead"
    return (
        f"{prefix}{relation} is a relation and compares {target} ids; "
        f"filter on a field of {target}: {example(f'{prefix}{relation}__{label}', shown)}"
    )


def field_elsewhere(
    index: SchemaIndex, schema: ManagerSchema, name: str
) -> tuple[str, str, str] | None:
    """(relation, target, field): a filterable field `name` (or close to it) of a related manager.

    A model that asks parts for `density` means the density of their material.
    """
    for exact_only in (True, False):
        for relation in schema.relations.values():
            target = index.managers[relation.target]
            known = [n for n in target.filters if n != "id" and n not in target.relations]
            if name in known:
                return relation.name, relation.target, name
            found = None if exact_only else closest(name, known, cutoff=0.8)
            if found is not None:
                return relation.name, relation.target, found
    return None


_MORE = frozenset(
    (
        "more",
        "greater",
        "higher",
        "larger",
        "bigger",
        "heavier",
        "denser",
        "longer",
        "over",
        "above",
        "after",
    )
)
_LESS = frozenset(
    (
        "less",
        "lower",
        "smaller",
        "lighter",
        "fewer",
        "shorter",
        "cheaper",
        "under",
        "below",
        "before",
    )
)
"""Words of a comparative filter name ("denser_than") and the lookup each means."""

_COMPARISONS = ("gt", "gte", "lt", "lte")


def operator_value_hint(key: str, spec: FieldSchema, value: Any) -> str:
    """What to write instead of an operator given as the value, or "".

    `{"density": "gt"}` and `{"density": {"$gt": 5}}` put the comparison in the value
    (Mongo and other query languages do); `{"density": "max"}` asks a filter for the
    highest, which an ordering gives. A key that ends in a lookup gets nothing: only its
    value is wrong.
    """
    if spec.type not in ORDERED_TYPES or not key.endswith(spec.name):
        return ""
    if isinstance(value, Mapping) and len(value) == 1:
        ((operator, operand),) = value.items()
        lookup = _comparing(str(operator).lstrip("$"), spec)
        return (
            f"; put the lookup in the key: {example(f'{key}__{lookup}', operand)}" if lookup else ""
        )
    if not isinstance(value, str):
        return ""
    word = value.strip().lower()
    if (lookup := _comparing(word, spec)) is not None:
        return f'; to compare, put the lookup in the key, the value after it: "{key}__{lookup}"'
    if (extreme := _METRICS.get(word)) in ("max", "min"):
        sign, which = ("-", "highest") if extreme == "max" else ("", "lowest")
        holder = "this manager" if key == spec.name else "the manager that holds it"
        return (
            f"; a filter cannot pick the {which}: query {holder} with "
            f'"order_by": ["{sign}{spec.name}"], "limit": 1'
        )
    return ""


def _comparing(word: str, spec: FieldSchema) -> str | None:
    """The comparison lookup `word` names ("gt", ">", "greater", "ge"), if `spec` allows it."""
    word = word.lower()
    lookup = "gt" if word in _MORE else "lt" if word in _LESS else LOOKUP_ALIASES.get(word, word)
    return lookup if lookup in _COMPARISONS and lookup in spec.lookups else None


def comparison(schema: ManagerSchema, name: str) -> tuple[str, str] | None:
    """(field, gt or lt) for a comparative filter name ("denser_than" → density, gt).

    The field is the one whose name starts like the word (dens-ity), else the manager's
    only numeric field.
    """
    words = [word.lower() for word in name.replace("__", "_").split("_") if word]
    lookup = "gt" if _MORE & set(words) else "lt" if _LESS & set(words) else None
    if lookup is None:
        return None
    numeric = [
        field.name
        for field in schema.fields.values()
        if field.type in ORDERED_TYPES and field.name != "id"
    ]
    for word in words:
        stem = word[:4]
        matching = [field for field in numeric if len(stem) == 4 and field.startswith(stem)]
        if matching:
            return matching[0], lookup
    return (numeric[0], lookup) if len(numeric) == 1 else None


def manager_path(
    index: SchemaIndex, schema: ManagerSchema, name: str
) -> tuple[str, tuple[str, ...]] | None:
    """(manager, relations): the manager a filter name speaks of, reachable from `schema`.

    "project_id" asked of projects is the project itself (no relation: filter its name);
    "partMaterial" asked of projects is the material of their parts.
    """
    words = [word for word in normalize_words(name) if word != "id"]
    for word in reversed(words):  # the last word is the thing: partMaterial is a material
        for other in index.search_index.search(word, 3):
            if word not in normalize_words(other.name):
                continue
            path = index.find_path(schema.name, other.name)
            if path is not None:
                return other.name, path.relations
    return None


def reverse_relation(
    index: SchemaIndex, schema: ManagerSchema, name: str
) -> tuple[str, str] | None:
    """(manager, relation): the manager `name` speaks of, whose relation leads to `schema`.

    A model asks parts for `project_id` when only projects lead to parts: the parts of a
    project are read from the project.
    """
    words = " ".join(word for word in name.split("_") if word.lower() != "id")
    for other in index.search_index.search(words, 3) if words else ():
        if other.name == schema.name:
            continue
        for relation in other.relations.values():
            if relation.target == schema.name:
                return other.name, relation.name
    return None


def filter_names(schema: ManagerSchema) -> list[str]:
    """The names `schema` can be filtered by, `id` first."""
    return ["id", *(name for name in schema.filters if name != "id")]


def unknown_filter(
    index: SchemaIndex, schema: ManagerSchema, key: str, position: int, raw: Any
) -> DataError:
    """unknown_filter for the key part at `position`: the nearest names, a filter to copy."""
    parts = key.split("__")
    prefix = "".join(f"{part}__" for part in parts[:position])
    name, rest = parts[position], parts[position + 1 :]
    names = filter_names(schema)
    suffix = "".join(f"__{part}" for part in rest)
    hint = f"; filterable: {listing(names)}"
    near = closest(name, names)
    elsewhere = field_elsewhere(index, schema, name) if near is None else None
    if near is not None and near in schema.relations and not isinstance(raw, int | bool):
        target = schema.relations[near].target
        label = label_field(index.managers[target], raw)
        if label is not None:
            # "part__material__name" goes on through the relation; "part" or
            # "part__icontains" compares the related object's label.
            goes_on = bool(rest) and rest[0] not in LOOKUPS
            fixed = f"{prefix}{near}{suffix}" if goes_on else f"{prefix}{near}__{label}{suffix}"
            shown = example(fixed, raw)
            hint = f"; did you mean {near!r}, the relation to {target}? e.g. {shown}"
    elif near is not None:
        hint = f"; did you mean {near!r}? e.g. {example(f'{prefix}{near}{suffix}', raw)}"
    elif elsewhere is not None:
        relation, target, field = elsewhere
        shown = example(f"{prefix}{relation}__{field}{suffix}", raw)
        hint = f"; {field} is a field of {target}, through {relation}: {shown}"
    elif (compared := comparison(schema, name)) is not None:
        field, lookup = compared
        hint = f"; compare a field instead: {example(f'{prefix}{field}__{lookup}', raw)}"
    elif (path := manager_path(index, schema, name)) is not None:
        target, relations = path
        label = "id" if isinstance(raw, int) else (label_field(index.managers[target], raw) or "id")
        key_path = "".join(f"{relation}__" for relation in relations)
        shown = example(f"{prefix}{key_path}{label}", raw)
        hint = f"; {name!r} names {target}: filter on its {label}, {shown}"
    elif position == 0 and (reverse := reverse_relation(index, schema, name)) is not None:
        other, relation = reverse
        selected = json.dumps({relation: [label_field(schema) or "id"]})
        hint = (
            f"; {schema.name} has no relation to {other}, but {other}.{relation} leads "
            f"here: query {other} with fields [{selected}] (filtered as you need)"
        )
    return DataError(
        f"{key}: {schema.name} cannot be filtered by {name!r}{hint}",
        code="unknown_filter",
        allowed=names,
    )


def unknown_lookup(
    key: str, prefix: str, schema: ManagerSchema, spec: FieldSchema, *, lookup: str, raw: Any
) -> DataError:
    """unknown_filter for a lookup `spec` does not allow: the one that does what was meant."""
    better = lookup_alias(lookup, spec.lookups)
    shown = example(f"{prefix}{spec.name}__{better}", raw) if better else ""
    return DataError(
        f"{key}: {schema.name}.{spec.name} ({spec.type}) allows the lookups "
        f"{', '.join(spec.lookups)}{f'; use {better}, e.g. {shown}' if better else ''}",
        code="unknown_filter",
        allowed=spec.lookups,
    )


def unknown_member(index: SchemaIndex, schema: ManagerSchema, name: str) -> DataError:
    """unknown_field for a selected name, with what to select or call instead.

    A near name; a related manager's field, through one relation or more; a count or
    total, which the aggregate tool computes; else the list of names.
    """
    members = [*schema.fields, *schema.relations]
    hint = did_you_mean(name, members)
    elsewhere = field_elsewhere(index, schema, name) if not hint else None
    farther = member_path(index, schema, name) if not hint else None
    counted = counted_member(index, schema, name) if not hint else None
    if elsewhere is not None:
        relation, target, field = elsewhere
        hint = f"; {field} is a field of {target}: select {json.dumps({relation: [field]})}"
    elif farther is not None:
        target, path = farther
        hint = f"; {name.partition('__')[0]} belongs to {target}: select {json.dumps(path)}"
    elif counted is not None:
        hint = f"; {name!r} is not stored: count or total with the aggregate tool, {counted}"
    elif not hint:
        hint = f"; its fields and relations: {listing(members)}"
    return DataError(
        f"{schema.name} has no field or relation {name!r}{hint}",
        code="unknown_field",
        allowed=members,
    )


_COUNTS = frozenset(("count", "counts", "num"))
_METRICS = {
    "sum": "sum", "total": "sum", "avg": "avg", "average": "avg", "mean": "avg",
    "max": "max", "maximum": "max", "highest": "max", "largest": "max", "most": "max",
    "min": "min", "minimum": "min", "lowest": "min", "smallest": "min", "least": "min",
}  # fmt: skip


def counted_member(index: SchemaIndex, schema: ManagerSchema, name: str) -> str | None:
    """The aggregate arguments a selected name such as `count` or `parts__count` asks for.

    Models select a count as if it were a field; the aggregate tool computes it. A count
    of related rows (`parts__count` on materials) is the related manager's rows grouped by
    the way back (parts grouped by `material__name`).
    """
    *relations, last = name.lower().split("__")
    words = last.split("_")
    ops = [_METRICS.get(word, "count" if word in _COUNTS else None) for word in words]
    # A count word wins: "total_count" (the key every query result has) counts rows.
    op = "count" if "count" in ops else next((found for found in ops if found), None)
    if op is None:
        return None
    rest = "_".join(word for word, found in zip(words, ops, strict=True) if found is None)
    manager, group_by = schema, None
    # The rows counted: a relation's ("parts__count"), or those a word names ("part_count").
    counted = relations[0] if relations else rest if op == "count" else ""
    if counted and (rows := _counted_rows(index, schema, counted)) is not None:
        manager, group_by = rows
    metric: dict[str, str] = {"op": op}
    if op != "count":
        numeric = [
            f.name for f in manager.fields.values() if f.type in NUMERIC_TYPES and f.name != "id"
        ]
        field = closest(rest, numeric) if rest else numeric[0] if len(numeric) == 1 else None
        if field is None:
            return None  # the field to total is not one of them: no guess
        metric["field"] = field
    arguments: dict[str, Any] = {"manager": manager.name}
    if group_by is not None:
        arguments["group_by"] = [group_by]
    arguments["metrics"] = [metric]
    return json.dumps(arguments)


def _counted_rows(
    index: SchemaIndex, schema: ManagerSchema, word: str
) -> tuple[ManagerSchema, str] | None:
    """(manager, group_by): the rows `word` counts per object of `schema`.

    The word is a relation of `schema`, or names a manager whose relation leads to it
    (`reverse_relation`); its rows are grouped by the way back (`parts` of materials:
    PartManager by `material__name`).
    """
    related = schema.relations.get(word)
    if related is None:
        found = reverse_relation(index, schema, word)
        if found is None:
            return None
        other, relation = found
        return index.managers[other], f"{relation}__{label_field(schema) or 'id'}"
    target = index.managers[related.target]
    back = index.find_path(target.name, schema.name)
    if back is None or not back.relations:
        return None
    return target, "__".join([*back.relations, label_field(schema) or "id"])


def member_path(index: SchemaIndex, schema: ManagerSchema, name: str) -> tuple[str, str] | None:
    """(manager, path): where `name` is, and the relation path that selects it from `schema`.

    The nearest other manager holding `name`'s first part as a field or relation:
    "density" on projects is MaterialManager's, selected as "parts__material__density".
    """
    head = name.partition("__")[0]
    found: list[tuple[int, str, str]] = []
    for other in index.managers.values():
        if other.name == schema.name or (head not in other.fields and head not in other.relations):
            continue
        path = index.find_path(schema.name, other.name)
        if path is not None and path.relations:
            found.append((len(path.relations), other.name, "__".join([*path.relations, name])))
    if not found:
        return None
    _, target, selected = min(found)
    return target, selected
