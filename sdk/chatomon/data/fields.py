"""Field and relation declarations, field types and the lookups each type allows.

A manager lists its fields by name; the type, description and choices come from the Django
model field, or, for records managers, from a `FieldSpec` or the values themselves. A
`FieldSpec` also overrides what the model says (a better description for the assistant).

```python
fields = {"name": FieldSpec(description="Part name as printed on drawings"), "weight_kg": "float"}
relations = {"material": "MaterialManager", "projects": RelationSpec("ProjectManager")}
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

__all__ = [
    "COMPARISON_LOOKUPS",
    "FIELD_TYPES",
    "LOOKUPS",
    "LOOKUPS_BY_TYPE",
    "NUMERIC_TYPES",
    "ORDERED_TYPES",
    "RELATION_LOOKUPS",
    "Choice",
    "FieldSpec",
    "FieldType",
    "RelationSpec",
]

FieldType = Literal["string", "integer", "decimal", "float", "boolean", "date", "datetime", "enum"]
"""The scalar field types; relations are declared apart, as to-one or to-many."""

FIELD_TYPES: tuple[FieldType, ...] = get_args(FieldType)

NUMERIC_TYPES: tuple[FieldType, ...] = ("integer", "decimal", "float")
"""Field types a sum or an average can take."""
ORDERED_TYPES: tuple[FieldType, ...] = (*NUMERIC_TYPES, "date", "datetime")
"""Field types with an order: compared with gt/lt, a min or max taken, sorted."""

Choice = str | int
"""An enum value, as stored (Django choices are strings or integers)."""

LOOKUPS: tuple[str, ...] = (
    "exact",
    "iexact",
    "contains",
    "icontains",
    "startswith",
    "in",
    "gt",
    "gte",
    "lt",
    "lte",
    "range",
    "isnull",
)
"""Every lookup a filter may use, in Django's `field__lookup` spelling."""

COMPARISON_LOOKUPS = ("exact", "in", "gt", "gte", "lt", "lte", "range", "isnull")
RELATION_LOOKUPS = ("exact", "in", "isnull")
"""Lookups on a relation itself compare the related object's id."""

LOOKUPS_BY_TYPE: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "string": ("exact", "iexact", "contains", "icontains", "startswith", "in", "isnull"),
        "integer": COMPARISON_LOOKUPS,
        "decimal": COMPARISON_LOOKUPS,
        "float": COMPARISON_LOOKUPS,
        "date": COMPARISON_LOOKUPS,
        "datetime": COMPARISON_LOOKUPS,
        "boolean": ("exact", "isnull"),
        "enum": ("exact", "in", "isnull"),
    }
)
"""The lookups each field type allows (a filter on a field allows all of its type's)."""


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """What a declaration says about one field; every part left None comes from the source.

    Attributes:
        type: The field type; required for records fields whose values are all None.
        description: Text for the assistant (default: help_text, else verbose_name).
        choices: The allowed values of an enum field.
        nullable: Whether the field may be empty.
        decimal_places: The places of a decimal field (results are quantized to them).
    """

    type: FieldType | None = None
    description: str | None = None
    choices: tuple[Choice, ...] | None = None
    nullable: bool | None = None
    decimal_places: int | None = None


@dataclass(frozen=True, slots=True)
class RelationSpec:
    """A relation to another manager.

    Attributes:
        target: The name of the manager the relation leads to.
        to_many: For records managers, whether the value is a list of ids (default: inferred
            from the values); Django relations take it from the model.
        description: Text for the assistant.
    """

    target: str
    to_many: bool | None = None
    description: str = ""
