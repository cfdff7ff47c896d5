"""Hand-composed SQL for one model: built once from `_meta`, values adapted as the ORM does.

Opening and closing a turn are the store's hot path: a handful of statements whose SQL
takes microseconds, where the ORM spends a millisecond compiling them and building model
instances. Here the statements are composed once per database vendor from the models'
`_meta` (table and column names, quoted by the connection) and run on the connection's
cursor, so they still pass through Django's execute wrappers and error translation.

Values go in through each field's `get_db_prep_save` and come out through the converters
the ORM itself would apply (`connection.ops.get_db_converters` and the field's own), so
JSON, UUIDs and aware datetimes read and write exactly as through the models, on SQLite
and PostgreSQL alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import models as db_models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.expressions import Col

__all__ = ["ModelSQL", "model_sql"]

Converter = Callable[[Any, Any, BaseDatabaseWrapper], Any]


@dataclass(frozen=True, slots=True)
class ModelSQL:
    """One model's statements for one vendor, with what adapts values in and out.

    Attributes:
        model: The model.
        table: The quoted table name.
        columns: The quoted column names, in `fields` order.
        fields: The concrete fields by name, in `_meta` order.
        attnames: Their attribute names (`conversation_id` for `conversation`).
        readers: Per field, its column expression and the ORM's converters from
            database values.
        verbatim: Per field, the Python types it stores unchanged (see `_VERBATIM`).
    """

    model: type[db_models.Model]
    table: str
    columns: Mapping[str, str]
    fields: Mapping[str, db_models.Field[Any, Any]]
    attnames: tuple[str, ...]
    readers: Mapping[str, tuple[Col, tuple[Converter, ...]]]
    verbatim: Mapping[str, frozenset[type]]

    def column(self, name: str) -> str:
        """The quoted column of field `name` (`conversation` is `"conversation_id"`)."""
        return self.columns[name]

    def insert(self, names: Sequence[str], *, rows: int = 1) -> str:
        """`INSERT INTO table (columns of names) VALUES (%s, ...)`, `rows` rows of them."""
        columns = ", ".join(self.columns[name] for name in names)
        marks = ", ".join([f"({', '.join(['%s'] * len(names))})"] * rows)
        return f"INSERT INTO {self.table} ({columns}) VALUES {marks}"  # noqa: S608

    def select(self, names: Sequence[str], where: str, order: str = "") -> str:
        """`SELECT columns of names FROM table WHERE where [ORDER BY order]`."""
        columns = ", ".join(self.columns[name] for name in names)
        sql = f"SELECT {columns} FROM {self.table} WHERE {where}"  # noqa: S608
        return f"{sql} ORDER BY {order}" if order else sql

    def update(self, names: Iterable[str], where: str) -> str:
        """`UPDATE table SET column = %s, ... WHERE where`."""
        assignments = ", ".join(f"{self.columns[name]} = %s" for name in names)
        return f"UPDATE {self.table} SET {assignments} WHERE {where}"  # noqa: S608

    def prepared(self, connection: BaseDatabaseWrapper, values: Mapping[str, Any]) -> list[Any]:
        """`values` (field name to Python value) as database parameters, in their order."""
        fields, verbatim = self.fields, self.verbatim
        return [
            value
            if type(value) in verbatim[name]
            else fields[name].get_db_prep_save(value, connection)
            for name, value in values.items()
        ]

    def parameter(self, connection: BaseDatabaseWrapper, name: str, value: Any) -> Any:
        """One Python value of field `name` as a database parameter (for a WHERE)."""
        return self.fields[name].get_db_prep_save(value, connection)

    def python(
        self, connection: BaseDatabaseWrapper, names: Sequence[str], row: Sequence[Any]
    ) -> dict[str, Any]:
        """A fetched row of `names` columns as Python values, converted as the ORM would."""
        out: dict[str, Any] = {}
        for name, stored in zip(names, row, strict=True):
            column, converters = self.readers[name]
            value = stored
            for converter in converters:
                value = converter(value, column, connection)
            out[name] = value
        return out


_VERBATIM: Mapping[type[db_models.Field[Any, Any]], frozenset[type]] = {
    db_models.CharField: frozenset({str, type(None)}),
    db_models.TextField: frozenset({str, type(None)}),
    db_models.IntegerField: frozenset({int, type(None)}),
    db_models.BigIntegerField: frozenset({int, type(None)}),
    db_models.BooleanField: frozenset({bool, type(None)}),
}
"""Field classes (exactly these, not subclasses) whose `get_db_prep_save` returns a value of
these exact types as it is: `to_python` of a str, int or bool is itself. Skipping the call
for them saves most of the adaptation work of a turn's statements."""


def _reader(
    connection: BaseDatabaseWrapper, table: str, field: db_models.Field[Any, Any]
) -> tuple[Col, tuple[Converter, ...]]:
    column = field.get_col(table)
    found = [*connection.ops.get_db_converters(column), *column.get_db_converters(connection)]
    return column, tuple(found)


def _compose(connection: BaseDatabaseWrapper, model: type[db_models.Model]) -> ModelSQL:
    quote = connection.ops.quote_name
    meta = model._meta
    fields = {field.name: field for field in meta.concrete_fields}
    return ModelSQL(
        model=model,
        table=quote(meta.db_table),
        columns={name: quote(str(field.column)) for name, field in fields.items()},
        fields=fields,
        attnames=tuple(field.attname for field in fields.values()),
        readers={name: _reader(connection, meta.db_table, field) for name, field in fields.items()},
        verbatim={name: _VERBATIM.get(type(field), frozenset()) for name, field in fields.items()},
    )


_COMPOSED: dict[tuple[str, str, str], ModelSQL] = {}
"""Composed statements by (alias, vendor, model label): derived from code and settings."""


def model_sql(connection: BaseDatabaseWrapper, model: type[db_models.Model]) -> ModelSQL:
    """`model`'s statements for `connection`'s database (composed on first use).

    Keyed by alias too: converters read per-database settings such as `TIME_ZONE`.
    """
    key = (connection.alias, connection.vendor, model._meta.label)
    found = _COMPOSED.get(key)
    if found is None:
        found = _COMPOSED[key] = _compose(connection, model)
    return found
