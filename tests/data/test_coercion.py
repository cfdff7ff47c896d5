"""Filter values: lenient where the intent is plain, refused with a clear message otherwise."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from chatomon.data import DataError, FieldSchema
from chatomon.data.coercion import MAX_IN_VALUES, coerce_filter_value, coerce_scalar
from chatomon.data.serialization import json_value, serialize_value

STRING = FieldSchema("name", "string")
INTEGER = FieldSchema("quantity", "integer")
DECIMAL = FieldSchema("unit_cost", "decimal", decimal_places=2)
FLOAT = FieldSchema("weight", "float")
BOOLEAN = FieldSchema("ok", "boolean")
DATE = FieldSchema("on", "date")
DATETIME = FieldSchema("at", "datetime")
ENUM = FieldSchema("status", "enum", choices=("draft", "active"))
INT_ENUM = FieldSchema("size", "enum", choices=(1, 2))


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        (STRING, "Bolt", "Bolt"),
        (INTEGER, 5, 5),
        (INTEGER, "5", 5),
        (INTEGER, 5.0, 5),
        (INTEGER, -(2**63) + 1, -(2**63) + 1),
        (DECIMAL, "12.50", Decimal("12.50")),
        (DECIMAL, 12.5, Decimal("12.5")),
        (DECIMAL, 3, Decimal(3)),
        (FLOAT, 1, 1.0),
        (FLOAT, "0.25", 0.25),
        (BOOLEAN, True, True),
        (BOOLEAN, " False ", False),
        (DATE, "2024-05-31", date(2024, 5, 31)),
        (DATETIME, "2024-05-31T14:00:00Z", datetime(2024, 5, 31, 14, tzinfo=UTC)),
        (DATETIME, "2024-05-31T16:00:00+02:00", datetime(2024, 5, 31, 14, tzinfo=UTC)),
        (DATETIME, "2024-05-31T14:00:00", datetime(2024, 5, 31, 14, tzinfo=UTC)),
        (DATETIME, "2024-05-31", datetime(2024, 5, 31, tzinfo=UTC)),
        (ENUM, "draft", "draft"),
        (INT_ENUM, 2, 2),
        (INT_ENUM, "2", 2),
    ],
)
def test_accepted_values(spec: FieldSchema, value: Any, expected: Any) -> None:
    coerced = coerce_scalar(spec, value, "key")
    assert coerced == expected
    assert type(coerced) is type(expected)


@pytest.mark.parametrize(
    ("spec", "value", "fragment"),
    [
        (STRING, 5, "use a string"),
        (STRING, "a\x00b", "use a string"),
        (STRING, "x" * 10_001, "use a string"),
        (INTEGER, True, "use an integer"),
        (INTEGER, 2**63, "use an integer"),
        (INTEGER, 1.5, "use an integer"),
        (INTEGER, "five", "use an integer"),
        (DECIMAL, "1e30", "numeric string"),
        (DECIMAL, "NaN", "numeric string"),
        (DECIMAL, "sNaN", "numeric string"),
        (DECIMAL, float("inf"), "numeric string"),
        (DECIMAL, [1], "numeric string"),
        (FLOAT, "1e999", "a number"),
        (BOOLEAN, 1, "true or false"),
        (DATE, "31/05/2024", "ISO date"),
        (DATE, 20240531, "ISO date"),
        (DATETIME, "0001-01-01T00:00:00+01:00", "ISO 8601"),
        (DATETIME, "9999-12-31T23:00:00-05:00", "ISO 8601"),
        (ENUM, "Draft", "one of 'draft', 'active'"),
        (INT_ENUM, "x", "one of 1, 2"),
    ],
)
def test_refused_values_say_what_the_field_takes(
    spec: FieldSchema, value: Any, fragment: str
) -> None:
    with pytest.raises(DataError) as caught:
        coerce_scalar(spec, value, "key")
    assert caught.value.code == "invalid_value"
    assert fragment in str(caught.value)
    assert str(caught.value).startswith("key: ")


def test_enum_errors_list_the_choices() -> None:
    with pytest.raises(DataError) as caught:
        coerce_scalar(ENUM, "lost", "status")
    assert caught.value.allowed == ("draft", "active")


def test_lookup_shapes() -> None:
    assert coerce_filter_value(INTEGER, "in", [1, "2"], "k") == (1, 2)
    assert coerce_filter_value(DATE, "range", ["2024-01-01", "2024-12-31"], "k") == (
        date(2024, 1, 1),
        date(2024, 12, 31),
    )
    assert coerce_filter_value(STRING, "isnull", "true", "k") is True
    for lookup, value in [
        ("in", []),
        ("in", [1] * (MAX_IN_VALUES + 1)),
        ("in", 1),
        ("range", [1, 2, 3]),
        ("isnull", None),
        ("icontains", 5),
        ("in", [None]),
    ]:
        with pytest.raises(DataError):
            coerce_filter_value(INTEGER if lookup != "icontains" else STRING, lookup, value, "k")


def test_serialization() -> None:
    assert serialize_value(DECIMAL, Decimal("12.5")) == "12.50"
    assert serialize_value(DECIMAL, 3) == "3.00"
    assert serialize_value(DECIMAL, None) is None
    assert (
        json_value(datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))))
        == "2024-01-01T10:00:00+00:00"
    )
    assert json_value(datetime(2024, 1, 1, 12)) == "2024-01-01T12:00:00"
    assert json_value(date(2024, 1, 1)) == "2024-01-01"
    assert json_value(Decimal("1.10")) == "1.10"
