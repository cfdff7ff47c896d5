"""Resolving a Django-backed manager's declaration from its model's fields.

Types come from the model field classes (a field with choices is an enum), descriptions
from the declaration, else the field's help_text, else its verbose_name when that says more
than the field name. Relations name a model relation (forward or reverse, by its query
name); whether it is to-one or to-many comes from the model. Django is imported here, so
only managers that have a model ever load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.db.models import ForeignObjectRel

from chatomon.data.declarations import (
    build_schema,
    declared_fields,
    declared_relations,
    describe_names,
)
from chatomon.data.errors import did_you_mean
from chatomon.data.fields import FieldSpec, FieldType
from chatomon.data.schema import FieldSchema, ManagerSchema, RelationSchema

if TYPE_CHECKING:
    from chatomon.data.backend import Backend
    from chatomon.data.manager import Manager

__all__ = ["describe_model", "model_field_type", "related_model_of"]

# Order matters: DateTimeField is a DateField, AutoField an IntegerField.
_TYPES: tuple[tuple[type[models.Field[Any, Any]], FieldType], ...] = (
    (models.BooleanField, "boolean"),
    (models.DateTimeField, "datetime"),
    (models.DateField, "date"),
    (models.DecimalField, "decimal"),
    (models.FloatField, "float"),
    (models.IntegerField, "integer"),
    (models.AutoField, "integer"),
    (models.BigAutoField, "integer"),
    (models.SmallAutoField, "integer"),
    (models.CharField, "string"),
    (models.TextField, "string"),
    (models.UUIDField, "string"),
)


def model_field_type(field: Any) -> FieldType | None:
    """The chatomon type of a concrete model field, or None when it is not supported."""
    if getattr(field, "choices", None):
        return "enum"
    for field_class, kind in _TYPES:
        if isinstance(field, field_class):
            return kind
    return None


def _description(field: Any, declared: str | None) -> str:
    if declared:
        return declared
    if getattr(field, "help_text", ""):
        return str(field.help_text)
    verbose = str(getattr(field, "verbose_name", "") or "")
    return verbose if verbose and verbose != field.name.replace("_", " ") else ""


def _field_schema(field: Any, spec: FieldSpec, kind: FieldType) -> FieldSchema:
    choices = spec.choices
    if choices is None and kind == "enum":
        choices = tuple(value for value, _label in field.flatchoices)
    places = field.decimal_places if kind == "decimal" else None
    return FieldSchema(
        name=field.name,
        type=spec.type or kind,
        description=_description(field, spec.description),
        choices=tuple(choices) if choices is not None else None,
        nullable=spec.nullable if spec.nullable is not None else bool(field.null),
        decimal_places=spec.decimal_places if spec.decimal_places is not None else places,
    )


def _model_names(model: Any) -> list[str]:
    return [field.name for field in model._meta.get_fields()]


def related_model_of(model: Any, relation: str) -> Any:
    """The model a relation of `model` leads to (None if it is not a relation)."""
    try:
        field = model._meta.get_field(relation)
    except FieldDoesNotExist:
        return None
    return field.related_model if field.is_relation else None


def _relation(manager: type[Manager], name: str, problems: list[str]) -> tuple[bool, str] | None:
    model = manager.model
    assert model is not None
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        relations = [f.name for f in model._meta.get_fields() if f.is_relation]
        problems.append(
            f"{manager.name}.relations: {model.__name__} has no relation {name!r}"
            f"{did_you_mean(name, relations)} (relations: {describe_names(relations)})"
        )
        return None
    if not field.is_relation or field.related_model is None:
        problems.append(
            f"{manager.name}.relations: {model.__name__}.{name} is not a relation to a model"
        )
        return None
    to_many = bool(field.many_to_many or field.one_to_many)
    # A reverse relation is reached through its accessor; a field declared on the model
    # (a foreign key, a many-to-many: Django 6.1 no longer calls the latter concrete) by
    # its name.
    accessor = (field.get_accessor_name() or name) if isinstance(field, ForeignObjectRel) else name
    return to_many, accessor


def describe_model(
    manager: type[Manager], backend: Backend, problems: list[str]
) -> ManagerSchema | None:
    """Resolve a Django-backed manager into its schema (problems appended, not raised)."""
    model = manager.model
    assert model is not None
    meta = model._meta
    relations = declared_relations(manager, problems)
    declared = declared_fields(manager, problems)
    if declared is None:
        declared = {
            f.name: FieldSpec()
            for f in meta.concrete_fields
            if not f.is_relation and not f.primary_key
        }
    pk_kind = model_field_type(meta.pk) or "string"
    fields = {"id": FieldSchema("id", "integer" if pk_kind == "integer" else "string")}
    for name, spec in declared.items():
        try:
            field = meta.get_field(name)
        except FieldDoesNotExist:
            names = _model_names(model)
            problems.append(
                f"{manager.name}.fields: {model.__name__} has no field {name!r}"
                f"{did_you_mean(name, names)} (fields: {describe_names(names)})"
            )
            continue
        if field.is_relation:
            problems.append(
                f"{manager.name}.fields: {name!r} is a relation; list it in relations only"
            )
            continue
        kind = model_field_type(field)
        if kind is None:
            problems.append(
                f"{manager.name}.fields: {model.__name__}.{name} is a "
                f"{type(field).__name__}, which chat tools cannot read (supported: text, "
                "numbers, booleans, dates, datetimes, choices)"
            )
            continue
        fields[name] = _field_schema(field, spec, kind)
    resolved: dict[str, RelationSchema] = {}
    for name, relation in relations.items():
        found = _relation(manager, name, problems)
        if found is not None:
            to_many, accessor = found
            resolved[name] = RelationSchema(
                name, relation.target, to_many, relation.description, accessor
            )
    return build_schema(manager, backend, fields, resolved, problems)
