"""A query's count and page with the least ORM work (see `DjangoBackend.run_query`).

The count compiles the filtered queryset once and counts its rows in a subquery, which is
what `QuerySet.count()` sends for a distinct query anyway, without the cloning and
aggregation set-up it costs per call. A page that selects no relations is read with
`values_list`, through the same database converters as model instances, so no instance
is built per row; a page with relations loads instances and their prefetches as before.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet

from chatomon.data.query import QuerySpec
from chatomon.data.serialization import serialize_value

__all__ = ["count_rows", "scalar_page"]


def count_rows(queryset: QuerySet[Any]) -> int:
    """How many rows `queryset` yields, in one `SELECT COUNT(*) FROM (...)` statement."""
    unordered = queryset.order_by()  # ordering cannot change a count
    try:
        sql, params = unordered.query.get_compiler(using=unordered.db).as_sql()
    except EmptyResultSet:  # a condition that matches nothing, such as `pk__in=[]`
        return 0
    with connections[unordered.db].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({sql}) subquery", params)  # noqa: S608
        row = cursor.fetchone()
    return int(row[0]) if row is not None else 0


def scalar_page(ordered: QuerySet[Any], spec: QuerySpec) -> list[dict[str, Any]] | None:
    """The page as JSON rows read with `values_list`; None when it needs model instances."""
    selection = spec.selection
    if selection.relations:
        return None
    fields = selection.fields
    names = ["pk" if field.name == "id" else field.name for field in fields]
    # Prefetches a manager's queryset asks for attach to instances: scalar rows need none.
    scalars = ordered.prefetch_related(None).values_list(*names)
    page = scalars[spec.offset : spec.offset + spec.limit]
    return [
        {
            field.name: serialize_value(field, value)
            for field, value in zip(fields, row, strict=True)
        }
        for row in page
    ]
