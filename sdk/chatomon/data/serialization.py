"""Field values as JSON: what every tool result holds, the same for every backend.

Decimals become strings at the field's decimal places (exact: "12.50", never 12.5),
dates and datetimes ISO 8601 strings (datetimes in UTC when aware), enums their stored
value, ids as stored (a UUID as its string).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from chatomon.data.schema import FieldSchema

__all__ = ["json_value", "serialize_value"]


def serialize_value(spec: FieldSchema, value: Any) -> Any:
    """`value` of field `spec` as a JSON-ready value."""
    if value is None:
        return None
    if spec.type == "decimal" and spec.decimal_places is not None:
        value = Decimal(value).quantize(Decimal(1).scaleb(-spec.decimal_places))
    return json_value(value)


def json_value(value: Any) -> Any:
    """A scalar as JSON: Decimal → str, date/datetime → ISO 8601, UUID → str."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return (value.astimezone(UTC) if value.tzinfo is not None else value).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return str(value)
