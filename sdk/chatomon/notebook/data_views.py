"""Renderings of the data layer's objects: a manager's schema and read results.

`ManagerSchema` shows what the assistant may know of a manager (fields, relations,
filters); `QueryPage` and `AggregatePage` show rows as a table, nested values as compact
JSON. Long pages show their first `MAX_ROWS` rows and say how many more there are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chatomon.data.backend import AggregatePage, QueryPage
from chatomon.data.schema import ManagerSchema
from chatomon.notebook.markup import (
    badge,
    details,
    escape,
    md_escape,
    md_table,
    table,
    value_text,
    view,
)

__all__ = [
    "MAX_ROWS",
    "aggregate_page_html",
    "aggregate_page_markdown",
    "aggregate_page_text",
    "manager_schema_html",
    "manager_schema_markdown",
    "manager_schema_text",
    "query_page_html",
    "query_page_markdown",
    "query_page_text",
]

MAX_ROWS = 50
"""Rows shown of a long page; the rest are counted, not shown."""

FIELD_HEADERS = ("field", "type", "description", "choices", "nullable")


def _field_cells(schema: ManagerSchema) -> list[list[str]]:
    return [
        [
            name,
            spec.type,
            spec.description,
            ", ".join(map(str, spec.choices)) if spec.choices else "",
            "yes" if spec.nullable else "",
        ]
        for name, spec in schema.fields.items()
    ]


def manager_schema_html(schema: ManagerSchema) -> str:
    """A manager's schema as scoped HTML: fields, relations, then filters (closed)."""
    parts = [f"<div><b>{escape(schema.name)}</b></div>"]
    if schema.description:
        parts.append(f'<div class="cm-muted">{escape(schema.description)}</div>')
    cells = _field_cells(schema)
    parts.append(table(FIELD_HEADERS, ([escape(cell) for cell in row] for row in cells)))
    if schema.relations:
        rows = [
            [
                f"<b>{escape(relation.name)}</b>",
                escape(relation.target),
                badge("to_many" if relation.to_many else "to_one"),
                escape(relation.description),
            ]
            for relation in schema.relations.values()
        ]
        relations = table(("relation", "target", "kind", "description"), rows)
        parts.append(details(f"Relations ({len(rows)})", relations, open=True))
    filters = [
        [escape(name), escape(", ".join(lookups))] for name, lookups in schema.filters.items()
    ]
    parts.append(details(f"Filters ({len(filters)})", table(("filter", "lookups"), filters)))
    return view("".join(parts))


def manager_schema_markdown(schema: ManagerSchema) -> str:
    """A manager's schema as Markdown: its name, description and a table of fields."""
    lines = [f"**{md_escape(schema.name)}**"]
    if schema.description:
        lines.append(md_escape(schema.description))
    lines.append(md_table(FIELD_HEADERS, _field_cells(schema)))
    if schema.relations:
        rows = [
            [r.name, r.target, "to_many" if r.to_many else "to_one"]
            for r in schema.relations.values()
        ]
        lines.append(md_table(("relation", "target", "kind"), rows))
    return "\n\n".join(lines)


def manager_schema_text(schema: ManagerSchema) -> str:
    """A manager's schema as text: one line for the fields, one per relation."""
    fields = ", ".join(f"{name}: {spec.type}" for name, spec in schema.fields.items())
    lines = [f"ManagerSchema {schema.name}({fields})"]
    lines += [
        f"  {r.name} -> {r.target}{'[]' if r.to_many else ''}" for r in schema.relations.values()
    ]
    return "\n".join(lines)


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def _cells(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[list[str]]:
    return [
        [value_text(row[column]) if column in row else "" for column in columns]
        for row in rows[:MAX_ROWS]
    ]


def _more(shown: int, total: int) -> str:
    return f"{total - shown} more not shown" if total > shown else ""


def _rows_html(caption: str, rows: Sequence[Mapping[str, Any]], total: int) -> str:
    columns = _columns(rows)
    cells = [[escape(cell) for cell in row] for row in _cells(rows, columns)]
    more = _more(len(cells), total)
    note = f'<div class="cm-muted">{escape(more)}</div>' if more else ""
    body = table(columns, cells) if rows else '<div class="cm-muted">no rows</div>'
    return view(f"<div><b>{escape(caption)}</b></div>{body}{note}")


def _rows_markdown(caption: str, rows: Sequence[Mapping[str, Any]], total: int) -> str:
    columns = _columns(rows)
    lines = [f"**{md_escape(caption)}**"]
    if rows:
        lines.append(md_table(columns, _cells(rows, columns)))
    more = _more(min(len(rows), MAX_ROWS), total)
    if more:
        lines.append(md_escape(more))
    return "\n\n".join(lines)


def _page_caption(page: QueryPage) -> str:
    return f"{len(page.rows)} of {page.total_count} rows"


def query_page_html(page: QueryPage) -> str:
    """A query page as a scoped HTML table."""
    return _rows_html(_page_caption(page), page.rows, page.total_count)


def query_page_markdown(page: QueryPage) -> str:
    """A query page as a Markdown table."""
    return _rows_markdown(_page_caption(page), page.rows, page.total_count)


def query_page_text(page: QueryPage) -> str:
    """A query page as text: the count, then one line per row."""
    lines = [f"QueryPage {_page_caption(page)}"]
    lines += [f"  {value_text(row)}" for row in page.rows[:MAX_ROWS]]
    more = _more(min(len(page.rows), MAX_ROWS), len(page.rows))
    return "\n".join([*lines, f"  {more}"] if more else lines)


def _group_rows(page: AggregatePage) -> list[dict[str, Any]]:
    return [{**group.get("group", {}), **group.get("values", {})} for group in page.groups]


def _groups_caption(page: AggregatePage) -> str:
    return f"{len(page.groups)} groups" + (" (more exist)" if page.has_more else "")


def aggregate_page_html(page: AggregatePage) -> str:
    """An aggregate's groups as a scoped HTML table (group keys, then values)."""
    rows = _group_rows(page)
    return _rows_html(_groups_caption(page), rows, len(rows))


def aggregate_page_markdown(page: AggregatePage) -> str:
    """An aggregate's groups as a Markdown table."""
    rows = _group_rows(page)
    return _rows_markdown(_groups_caption(page), rows, len(rows))


def aggregate_page_text(page: AggregatePage) -> str:
    """An aggregate's groups as text, one line per group."""
    lines = [f"AggregatePage {_groups_caption(page)}"]
    lines += [f"  {value_text(row)}" for row in _group_rows(page)[:MAX_ROWS]]
    return "\n".join(lines)
