"""JSON values to field values: what a filter value means for a field's type.

The model sends JSON; a filter compares typed values. Coercion is lenient where the intent
is plain (the string "12.5" for a decimal, "true" for a boolean) and refuses everything
else with an `invalid_value` error that says what the field takes. Values the databases
cannot hold (integers beyond 64 bits, NUL characters, infinite numbers) are refused here,
before they reach a database driver.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from chatomon.data.errors import DataError
from chatomon.data.hints import operator_value_hint
from chatomon.data.schema import FieldSchema

__all__ = ["MAX_IN_VALUES", "coerce_filter_value", "coerce_scalar", "describe_type"]

MAX_IN_VALUES = 1000
MAX_STRING_LENGTH = 10_000
_INT_LIMIT = 2**63
_DECIMAL_LIMIT = Decimal("1e30")

_TYPE_HINTS = {
    "string": "a string",
    "integer": "an integer",
    "decimal": "a number or numeric string such as '12.50'",
    "float": "a number",
    "boolean": "true or false",
    "date": "an ISO date such as '2024-05-31'",
    "datetime": "an ISO 8601 datetime such as '2024-05-31T14:00:00Z'",
    "enum": "one of the choices",
}


def describe_type(spec: FieldSchema) -> str:
    """What a value of `spec`'s type looks like, for messages."""
    if spec.type == "enum" and spec.choices is not None:
        return "one of " + ", ".join(repr(choice) for choice in spec.choices)
    return _TYPE_HINTS[spec.type]


def _refuse(key: str, spec: FieldSchema, value: Any) -> DataError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return DataError(
        f"{key}: {shown} is not valid for {spec.name} ({spec.type}); use {describe_type(spec)}"
        f"{operator_value_hint(key, spec, value)}",
        code="invalid_value",
        allowed=[str(c) for c in spec.choices] if spec.type == "enum" and spec.choices else (),
    )


def coerce_scalar(spec: FieldSchema, value: Any, key: str) -> Any:
    """`value` as a value of `spec`'s type, or an invalid_value DataError."""
    converted = _convert(spec, value)
    if converted is None:
        raise _refuse(key, spec, value)
    return converted


def _convert(spec: FieldSchema, value: Any) -> Any:
    kind = spec.type
    if kind == "string":
        return _string(value)
    if kind == "enum":
        return _enum(spec, value)
    if kind == "boolean":
        return _boolean(value)
    if kind == "integer":
        return _integer(value)
    if kind == "float":
        number = _decimal(value)
        return float(number) if number is not None else None
    if kind == "decimal":
        return _decimal(value)
    if kind == "datetime":
        return _datetime(value)
    return _date(value)


def _string(value: Any) -> str | None:
    if isinstance(value, str) and "\x00" not in value and len(value) <= MAX_STRING_LENGTH:
        return value
    return None


def _enum(spec: FieldSchema, value: Any) -> Any:
    for choice in spec.choices or ():
        if value == choice and type(value) is type(choice):
            return choice
        if isinstance(choice, int) and isinstance(value, str) and value.strip() == str(choice):
            return choice
    return None


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and len(value) < 25:
        try:
            number = int(value.strip())
        except ValueError:
            return None
    if number is None or abs(number) >= _INT_LIMIT:
        return None
    return number


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str) and len(value) > 50:
        return None
    try:
        number = Decimal(str(value).strip()) if not isinstance(value, int) else Decimal(value)
    except InvalidOperation:
        return None
    if not number.is_finite() or abs(number) >= _DECIMAL_LIMIT:
        return None
    return number


def _datetime(value: Any) -> datetime | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    # A time without a zone is read as UTC: the databases store aware datetimes.
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # an offset that moves the time out of years 1..9999
        return None


def _date(value: Any) -> date | None:
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        return None


def coerce_filter_value(spec: FieldSchema, lookup: str, value: Any, key: str) -> Any:
    """The filter value of `key` (`field__lookup`) coerced for the lookup and field type.

    `in` takes a non-empty list, `range` a list of two, `isnull` a boolean; `exact` with
    null means `isnull` (the caller rewrites it). Everything else takes one scalar.
    """
    if lookup == "isnull":
        flag = _boolean(value)
        if flag is None:
            raise DataError(f"{key} takes true or false", code="invalid_value")
        return flag
    if lookup == "in":
        if not isinstance(value, list) or not value or len(value) > MAX_IN_VALUES:
            raise DataError(
                f"{key} takes a list of 1 to {MAX_IN_VALUES} values of {describe_type(spec)}",
                code="invalid_value",
            )
        return tuple(coerce_scalar(spec, item, key) for item in value)
    if lookup == "range":
        if not isinstance(value, list) or len(value) != 2:
            raise DataError(
                f"{key} takes a list of two values [low, high], inclusive", code="invalid_value"
            )
        low, high = (coerce_scalar(spec, item, key) for item in value)
        return (low, high)
    if lookup in ("contains", "icontains", "startswith", "iexact") and not isinstance(value, str):
        raise DataError(f"{key} takes a string", code="invalid_value")
    return coerce_scalar(spec, value, key)
