"""Reading a manager's declaration: the parts both backends share.

The backends resolve field types (from the model, or from the records); what is left is
the same for both: normalizing the `fields` and `relations` declarations, checking the
`filters` list, and assembling the `ManagerSchema`. Each mistake becomes one precise line
in `problems` (which manager, which name, what exists, did-you-mean).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from chatomon.data.errors import did_you_mean
from chatomon.data.fields import FIELD_TYPES, RELATION_LOOKUPS, FieldSpec, RelationSpec
from chatomon.data.schema import ID_LOOKUPS, FieldSchema, ManagerSchema, RelationSchema

if TYPE_CHECKING:
    from chatomon.data.backend import Backend
    from chatomon.data.manager import Manager

__all__ = [
    "build_schema",
    "declared_fields",
    "declared_relations",
    "describe_names",
    "resolve_filters",
]


def describe_names(names: Iterable[str]) -> str:
    """Names as a short readable list for messages."""
    listed = sorted(names)
    shown = ", ".join(listed[:25]) + (", ..." if len(listed) > 25 else "")
    return shown or "none"


def declared_fields(manager: type[Manager], problems: list[str]) -> dict[str, FieldSpec] | None:
    """The declared fields as name → FieldSpec, or None when the manager declares none."""
    declaration = manager.fields
    if declaration is None:
        return None
    if isinstance(declaration, str):
        problems.append(f"{manager.name}.fields must be a list of names, not a string")
        return {}
    if isinstance(declaration, Mapping):
        specs: dict[str, FieldSpec] = {}
        for name, value in declaration.items():
            if isinstance(value, FieldSpec):
                specs[name] = value
            elif value in FIELD_TYPES:
                specs[name] = FieldSpec(type=value)
            else:
                problems.append(
                    f"{manager.name}.fields[{name!r}]: {value!r} is neither a FieldSpec nor a "
                    f"field type ({', '.join(FIELD_TYPES)})"
                )
        return specs
    return {name: FieldSpec() for name in declaration if name != "id"}


def declared_relations(manager: type[Manager], problems: list[str]) -> dict[str, RelationSpec]:
    """The declared relations as name → RelationSpec (targets given as classes become names)."""
    relations: dict[str, RelationSpec] = {}
    for name, value in dict(manager.relations).items():
        if isinstance(value, RelationSpec):
            relations[name] = value
        elif isinstance(value, str):
            relations[name] = RelationSpec(value)
        elif isinstance(value, type) and hasattr(value, "chat_exposed"):
            relations[name] = RelationSpec(value.name)
        else:
            problems.append(
                f"{manager.name}.relations[{name!r}]: {value!r} is not a manager name, "
                "manager class or RelationSpec"
            )
    return relations


def resolve_filters(
    manager: type[Manager],
    fields: Mapping[str, FieldSchema],
    relations: Mapping[str, RelationSchema],
    problems: list[str],
) -> dict[str, tuple[str, ...]]:
    """The filterable names with their lookups; `filters = None` means every one."""
    names = manager.filters
    if names is None:
        names = [*(n for n in fields if n != "id"), *relations]
    elif isinstance(names, str):
        problems.append(f"{manager.name}.filters must be a list of names, not a string")
        names = []
    resolved: dict[str, tuple[str, ...]] = {"id": ID_LOOKUPS}
    for name in names:
        if name in fields:
            resolved[name] = fields[name].lookups
        elif name in relations:
            resolved[name] = RELATION_LOOKUPS
        else:
            known = [*fields, *relations]
            problems.append(
                f"{manager.name}.filters: {name!r} is not one of its fields or relations"
                f"{did_you_mean(name, known)} (fields and relations: {describe_names(known)})"
            )
    return resolved


def build_schema(
    manager: type[Manager],
    backend: Backend,
    fields: Mapping[str, FieldSchema],
    relations: Mapping[str, RelationSchema],
    problems: list[str],
) -> ManagerSchema:
    """Assemble the resolved schema of `manager` (filters checked here)."""
    filters = resolve_filters(manager, fields, relations, problems)
    return ManagerSchema(
        name=manager.name,
        description=manager.description,
        fields=MappingProxyType(dict(fields)),
        relations=MappingProxyType(dict(relations)),
        filters=MappingProxyType(filters),
        manager=manager(),
        backend=backend,
    )
