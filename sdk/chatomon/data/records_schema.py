"""Resolving a records manager's declaration: ids, field types, relations.

A field's type is declared (`{"density": "float"}` or a `FieldSpec`) or inferred from its
values (bool, int, float, Decimal, date, datetime, str); a declared type is checked against
every value. Ids are all integers or all strings, unique. A relation's value is the
related id (to-one) or a list of ids (to-many).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from chatomon.data.declarations import (
    build_schema,
    declared_fields,
    declared_relations,
    describe_names,
)
from chatomon.data.errors import did_you_mean
from chatomon.data.fields import FieldSpec, FieldType, RelationSpec
from chatomon.data.schema import FieldSchema, ManagerSchema, RelationSchema

if TYPE_CHECKING:
    from chatomon.data.backend import Backend
    from chatomon.data.manager import Manager

__all__ = ["describe_records", "value_fits"]


def _type_of(value: Any) -> FieldType | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, datetime):
        return "datetime"
    if isinstance(value, date):
        return "date"
    if isinstance(value, str):
        return "string"
    return None


def value_fits(spec: FieldSpec | FieldSchema, value: Any) -> bool:
    """Whether a stored value suits the field (None always does)."""
    if value is None:
        return True
    found = _type_of(value)
    if spec.type == "enum":
        return value in (spec.choices or ())
    if spec.type == "float":
        return found in ("float", "integer")
    if spec.type == "decimal":
        return found in ("decimal", "integer")
    return found == spec.type


def _inferred_type(values: Sequence[Any]) -> FieldType | str:
    kinds = {_type_of(value) for value in values}
    if None in kinds:
        return "values of an unsupported type"
    for mixed, result in (
        (frozenset({"integer", "float"}), "float"),
        (frozenset({"integer", "decimal"}), "decimal"),
    ):
        if len(kinds) == 2 and kinds == mixed:
            return result
    if len(kinds) == 1:
        return kinds.pop()  # type: ignore[return-value]
    return "mixed types " + ", ".join(sorted(str(kind) for kind in kinds))


def _places(values: Sequence[Any]) -> int:
    exponents = [Decimal(value).as_tuple().exponent for value in values]
    return max([0, *(-e for e in exponents if isinstance(e, int))])


def _field_schema(
    manager: type[Manager],
    name: str,
    spec: FieldSpec,
    rows: Sequence[Mapping[str, Any]],
    problems: list[str],
) -> FieldSchema | None:
    values = [row[name] for row in rows if row.get(name) is not None]
    kind = spec.type
    if kind is None:
        inferred = _inferred_type(values) if values else "no values to infer a type from"
        if inferred not in ("string", "integer", "decimal", "float", "boolean", "date", "datetime"):
            problems.append(
                f"{manager.name}.fields[{name!r}]: {inferred}; declare its type, "
                f'e.g. fields={{"{name}": "string"}}'
            )
            return None
        kind = inferred  # type: ignore[assignment]
    if kind == "enum" and not spec.choices:
        problems.append(f"{manager.name}.fields[{name!r}]: an enum needs choices")
        return None
    resolved = FieldSchema(
        name=name,
        type=kind,  # type: ignore[arg-type]
        description=spec.description or "",
        choices=tuple(spec.choices) if spec.choices else None,
        nullable=spec.nullable if spec.nullable is not None else len(values) < len(rows),
        decimal_places=(spec.decimal_places if spec.decimal_places is not None else _places(values))
        if kind == "decimal"
        else None,
    )
    for row in rows:
        if not value_fits(resolved, row.get(name)):
            problems.append(
                f"{manager.name} record {row.get('id')!r}: {name}={row.get(name)!r} "
                f"is not a valid {resolved.type} value"
            )
            return None
    return resolved


def _id_schema(
    manager: type[Manager], rows: Sequence[Mapping[str, Any]], problems: list[str]
) -> FieldSchema:
    ids = [row.get("id") for row in rows]
    missing = [position for position, value in enumerate(ids) if value is None]
    if missing:
        problems.append(f"{manager.name}: record #{missing[0] + 1} has no 'id'")
    kinds = {_type_of(value) for value in ids if value is not None}
    if len(kinds) > 1 or not kinds <= {"integer", "string"}:
        problems.append(f"{manager.name}: ids must be all integers or all strings")
    seen: set[Any] = set()
    for value in ids:
        if value is not None and value in seen:
            problems.append(f"{manager.name}: id {value!r} is used by two records")
            break
        seen.add(value)
    kind: FieldType = "string" if kinds == {"string"} else "integer"
    return FieldSchema("id", kind)


def _relation_schema(
    manager: type[Manager],
    name: str,
    spec: RelationSpec,
    rows: Sequence[Mapping[str, Any]],
    problems: list[str],
) -> RelationSchema:
    values = [row.get(name) for row in rows if row.get(name) is not None]
    listed = {isinstance(value, list | tuple) for value in values}
    to_many = spec.to_many if spec.to_many is not None else listed == {True}
    if listed - {to_many}:
        shape = "lists of ids" if to_many else "single ids"
        problems.append(f"{manager.name}.relations[{name!r}]: values must all be {shape}")
    return RelationSchema(name, spec.target, to_many, spec.description, accessor=name)


def describe_records(
    manager: type[Manager], backend: Backend, problems: list[str]
) -> ManagerSchema | None:
    """Resolve a records manager into its schema (problems appended, not raised)."""
    rows = manager.records or []
    if not isinstance(rows, list) or not all(isinstance(row, Mapping) for row in rows):
        problems.append(f"{manager.name}.records must be a list of dicts")
        return None
    relations = declared_relations(manager, problems)
    declared = declared_fields(manager, problems)
    keys = list(dict.fromkeys(key for row in rows for key in row))
    if declared is None:
        declared = {key: FieldSpec() for key in keys if key != "id" and key not in relations}
    fields: dict[str, FieldSchema] = {"id": _id_schema(manager, rows, problems)}
    for name, spec in declared.items():
        if name in relations:
            problems.append(
                f"{manager.name}.fields: {name!r} is a relation; list it in relations only"
            )
        elif name not in keys and spec.type is None:
            problems.append(
                f"{manager.name}.fields: no record has {name!r}{did_you_mean(name, keys)} "
                f"(record keys: {describe_names(keys)}); declare its type if it may be empty"
            )
        elif (resolved := _field_schema(manager, name, spec, rows, problems)) is not None:
            fields[name] = resolved
    resolved_relations = {
        name: _relation_schema(manager, name, spec, rows, problems)
        for name, spec in relations.items()
    }
    return build_schema(manager, backend, fields, resolved_relations, problems)
