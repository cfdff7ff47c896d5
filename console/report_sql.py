"""SQL conditions on the TurnReport JSON that the ORM cannot express on every backend.

Which orbital stopped a turn, and whether anything in the report failed, means looking
inside the report's arrays (``input[*]``, ``output[*].results[*]``). PostgreSQL does it
with JSON path, SQLite with ``json_each``; other backends are not supported.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from chatomon.django.models import Turn
from chatomon.errors import ConfigurationError

__all__ = ["any_error", "stopped_by_orbital"]

_PG_STOPPED = (
    "jsonb_path_exists({col}, '$.input[*] ? (@.name == $n && @.action != \"allow\")', "
    "jsonb_build_object('n', %s::text)) OR "
    "jsonb_path_exists({col}, '$.output[*].results[*] ? (@.name == $n && @.action != \"allow\")', "
    "jsonb_build_object('n', %s::text))"
)
_SQLITE_STOPPED = (
    "EXISTS (SELECT 1 FROM json_each({col}, '$.input') AS r "
    "WHERE json_extract(r.value, '$.name') = %s AND json_extract(r.value, '$.action') != 'allow') "
    "OR EXISTS (SELECT 1 FROM json_each({col}, '$.output') AS a, "
    "json_each(a.value, '$.results') AS r "
    "WHERE json_extract(r.value, '$.name') = %s AND json_extract(r.value, '$.action') != 'allow')"
)
_PG_ERROR = (
    "jsonb_path_exists({col}, '$.error_type ? (@ != null)') OR "
    "jsonb_path_exists({col}, '$.input[*].error_type ? (@ != null)') OR "
    "jsonb_path_exists({col}, '$.output[*].results[*].error_type ? (@ != null)')"
)
_SQLITE_ERROR = (
    "json_extract({col}, '$.error_type') IS NOT NULL "
    "OR EXISTS (SELECT 1 FROM json_each({col}, '$.input') AS r "
    "WHERE json_extract(r.value, '$.error_type') IS NOT NULL) "
    "OR EXISTS (SELECT 1 FROM json_each({col}, '$.output') AS a, "
    "json_each(a.value, '$.results') AS r WHERE json_extract(r.value, '$.error_type') IS NOT NULL)"
)


def _report_column() -> str:
    quote = connection.ops.quote_name
    return f"{quote(Turn._meta.db_table)}.{quote('report')}"


def _condition(postgresql: str, sqlite: str, params: tuple[str, ...]) -> RawSQL:
    if connection.vendor == "postgresql":
        template = postgresql
    elif connection.vendor == "sqlite":
        template = sqlite
    else:
        raise ConfigurationError(
            f"the console's report filters support PostgreSQL and SQLite, not {connection.vendor}",
            field="DATABASES",
            value=connection.vendor,
            allowed=("postgresql", "sqlite"),
        )
    # COALESCE: a turn without a report matches no condition instead of giving NULL.
    sql = f"COALESCE(({template.format(col=_report_column())}), FALSE)"
    # The SQL is one of the constant templates above; values are bound parameters.
    return RawSQL(sql, params, output_field=BooleanField())  # noqa: S611


def stopped_by_orbital(name: str) -> Q:
    """Turns in which the orbital `name` gave a verdict other than allow (input or output)."""
    return Q(_condition(_PG_STOPPED, _SQLITE_STOPPED, (name, name)))


def any_error() -> Q:
    """Turns whose report records an error: the turn's own or any orbital's."""
    return Q(_condition(_PG_ERROR, _SQLITE_ERROR, ()))
