"""Checking tool arguments against the tools' own JSON Schemas.

The tool schemas use a small part of JSON Schema (type, properties, required,
additionalProperties, items, enum, minimum, maximum, minLength, maxLength, minItems,
maxItems), so this checks exactly that part, without a dependency, and words each
mismatch for the model: which argument, what it must be.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatomon.data.errors import DataError, did_you_mean

__all__ = ["check_arguments"]

_JSON_TYPES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _is(kind: str, value: Any) -> bool:
    if kind == "object":
        return isinstance(value, Mapping)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return value is None


def _check(schema: Mapping[str, Any], value: Any, where: str) -> None:
    kinds = schema.get("type")
    where = where or "arguments"
    if kinds is not None:
        listed = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(kind, value) for kind in listed):
            wanted = " or ".join(_JSON_TYPES[kind] for kind in listed)
            raise DataError(f"{where} must be {wanted}", code="invalid_value")
    if "enum" in schema and value not in schema["enum"]:
        raise DataError(
            f"{where} must be one of {', '.join(map(str, schema['enum']))}, not {value!r}",
            code="invalid_value",
            allowed=[str(item) for item in schema["enum"]],
        )
    if isinstance(value, Mapping):
        _check_object(schema, value, where)
    elif isinstance(value, list):
        _check_array(schema, value, where)
    elif isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 10**9):
            raise DataError(
                f"{where} must have {schema.get('minLength', 0)} to "
                f"{schema.get('maxLength', 'any number of')} characters",
                code="invalid_value",
            )
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(schema, value, where)


def _check_number(schema: Mapping[str, Any], value: float, where: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise DataError(f"{where} must be at least {schema['minimum']}", code="invalid_value")
    if "maximum" in schema and value > schema["maximum"]:
        raise DataError(f"{where} must be at most {schema['maximum']}", code="invalid_value")


def _check_object(schema: Mapping[str, Any], value: Mapping[Any, Any], where: str) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in value:
            raise DataError(f"{where or 'the call'} needs {name!r}", code="invalid_value")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if not isinstance(key, str):
            raise DataError(f"{where or 'argument'} names must be strings", code="invalid_value")
        if key in properties:
            _check(properties[key], item, f"{where}.{key}" if where else key)
        elif extra is False:
            owner = f"{where} has no key" if where else "there is no argument"
            raise DataError(
                f"{owner} {key!r}{did_you_mean(key, properties)}",
                code="invalid_value",
                allowed=list(properties),
            )
        elif isinstance(extra, Mapping):
            _check(extra, item, f"{where}.{key}")


def _check_array(schema: Mapping[str, Any], value: list[Any], where: str) -> None:
    if len(value) < schema.get("minItems", 0):
        raise DataError(
            f"{where} needs at least {schema['minItems']} entries", code="invalid_value"
        )
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise DataError(f"{where} takes at most {schema['maxItems']} entries", code="invalid_value")
    items = schema.get("items")
    if isinstance(items, Mapping):
        for position, item in enumerate(value):
            _check(items, item, f"{where}[{position}]")


def check_arguments(schema: Mapping[str, Any], arguments: Any) -> None:
    """Raise an invalid_value DataError when `arguments` do not match `schema`."""
    if not isinstance(arguments, Mapping):
        raise DataError("arguments must be an object", code="invalid_value")
    _check_object(schema, arguments, "")
