"""A mutation preview as people read it: one before → after renderer for every surface.

A confirmation's `preview` (see chatomon.data.mutation_runs) is `{"action": "update",
"manager", "id", "changes": [{"field", "before", "after"}]}`, `{"action": "create",
"values": {...}}`, or whatever a mutation's own preview returns. `parse_preview` reads it
into rows; `preview_html` draws the Field / Before / After table (before struck through,
after underlined, "(new)" where nothing was before); `preview_text` is the same as text.
The staff console's approvals, the notebook's ChatWidget and its static copy all show
previews through these, so a change reads the same wherever it is decided.

Redaction is the caller's: pass a preview already reduced by `chatomon.redaction` (the
`confirm_mutation` event's is; the console applies its configured rule first).

```python
from chatomon.preview import preview_html, preview_text

print(preview_text({"action": "update", "manager": "MaterialManager", "id": 1,
                    "changes": [{"field": "name", "before": "Steel", "after": "Iron"}]}))
# Update MaterialManager #1
#   name: Steel → Iron
```
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

__all__ = [
    "COLUMNS",
    "ParsedPreview",
    "PreviewRow",
    "parse_preview",
    "preview_html",
    "preview_table",
    "preview_text",
    "value_text",
]


COLUMNS = ("Field", "Before", "After")
"""The preview table's column headings, on every surface."""


@dataclass(frozen=True)
class PreviewRow:
    """One field of the preview: its value before and after the write."""

    field: str
    before: Any
    after: Any
    has_before: bool


@dataclass(frozen=True)
class ParsedPreview:
    """A preview read into parts.

    Attributes:
        action: "create", "update", or what the mutation's own preview says ("change").
        manager: The manager written to, when the preview names it.
        target_id: The id of the object changed, when the preview names one.
        rows: The field changes, in the preview's order.
        rest: What else the preview holds (a custom preview), or None.
    """

    action: str
    manager: str | None
    target_id: Any
    rows: tuple[PreviewRow, ...]
    rest: Any

    @property
    def caption(self) -> str:
        """The table's caption: "Update MaterialManager #1", "Create PartManager"."""
        caption = self.action[:1].upper() + self.action[1:]
        if self.manager:
            caption += f" {self.manager}"
        if self.target_id is not None:
            caption += f" #{self.target_id}"
        return caption


def parse_preview(preview: Any) -> ParsedPreview:
    """The action, manager, target, field rows and the rest of a mutation preview."""
    if not isinstance(preview, dict):
        return ParsedPreview("change", None, None, (), preview)
    action = str(preview.get("action", "change"))
    manager = preview.get("manager")
    target_id = preview.get("id")
    known: tuple[str, ...]
    if isinstance(preview.get("changes"), list):
        rows = tuple(
            PreviewRow(str(c.get("field")), c.get("before"), c.get("after"), has_before=True)
            for c in preview["changes"]
            if isinstance(c, dict)
        )
        known = ("action", "manager", "changes")
    elif isinstance(preview.get("values"), dict):
        rows = tuple(
            PreviewRow(str(k), None, v, has_before=False) for k, v in preview["values"].items()
        )
        known = ("action", "manager", "values")
    else:
        rows, known = (), ("action", "manager")
    rest = {k: v for k, v in preview.items() if k not in known}
    if rows:
        rest.pop("id", None)  # shown in the caption
    return ParsedPreview(
        action, str(manager) if manager is not None else None, target_id, rows, rest or None
    )


def value_text(value: Any) -> str:
    """A value as text: strings and numbers as written, other values as compact JSON.

    The notebook's tables and cards write their cells with it too (`chatomon.notebook.markup`).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure: its repr still tells what it is
        return repr(value)


def _escape(value: Any) -> str:
    return html.escape(value_text(value), quote=True)


def preview_html(
    preview: Any | ParsedPreview,
    *,
    table_class: str = "",
    muted_class: str = "",
    extra_class: str = "",
    with_rest: bool = True,
) -> str:
    """The preview as a Field / Before / After table, then the rest of it as JSON.

    Every value is escaped here. The class arguments let each surface style the table with
    its own style sheet (the console's `cc-` classes, the notebook's `cm-` ones);
    `with_rest=False` leaves the rest out, for a surface that shows it elsewhere.
    """
    parsed = preview if isinstance(preview, ParsedPreview) else parse_preview(preview)
    muted = f' class="{html.escape(muted_class)}"' if muted_class else ""
    body = "".join(
        f'<tr><th scope="row">{html.escape(row.field)}</th><td>'
        + (f"<del>{_escape(row.before)}</del>" if row.has_before else f"<span{muted}>(new)</span>")
        + f"</td><td><ins>{_escape(row.after)}</ins></td></tr>"
        for row in parsed.rows
    )
    if not body:
        body = '<tr><td colspan="3">No field-level preview.</td></tr>'
    table_attr = f' class="{html.escape(table_class)}"' if table_class else ""
    head = "".join(f'<th scope="col">{html.escape(column)}</th>' for column in COLUMNS)
    markup = (
        f"<table{table_attr}><caption>{html.escape(parsed.caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
    if parsed.rest and with_rest:
        extra_attr = f' class="{html.escape(extra_class)}"' if extra_class else ""
        markup += f"<pre{extra_attr}>{html.escape(_rest_json(parsed.rest))}</pre>"
    return markup


def _rest_json(rest: Any) -> str:
    """The preview's keys beyond its rows, as the indented JSON every surface shows."""
    return json.dumps(rest, indent=2, sort_keys=True, default=str)


def preview_table(preview: Any | ParsedPreview) -> dict[str, Any]:
    """The preview as a JSON-ready table, for a client that only draws it (the chat widget).

    `{"caption", "columns": ["Field", "Before", "After"], "rows": [{"field", "before",
    "after"}], "rest"}`: cells are `value_text` strings, `before` is None for a new value
    (drawn "(new)"), `rest` the rest of the preview as indented JSON text, or None.

    Examples:
        >>> preview_table({"action": "create", "manager": "PartManager", "values": {"n": 2}})
        ... # doctest: +NORMALIZE_WHITESPACE
        {'caption': 'Create PartManager', 'columns': ['Field', 'Before', 'After'],
         'rows': [{'field': 'n', 'before': None, 'after': '2'}], 'rest': None}
    """
    parsed = preview if isinstance(preview, ParsedPreview) else parse_preview(preview)
    rows = [
        {
            "field": row.field,
            "before": value_text(row.before) if row.has_before else None,
            "after": value_text(row.after),
        }
        for row in parsed.rows
    ]
    rest = _rest_json(parsed.rest) if parsed.rest else None
    return {"caption": parsed.caption, "columns": list(COLUMNS), "rows": rows, "rest": rest}


def preview_text(preview: Any | ParsedPreview) -> str:
    """The preview as lines of text: the caption, then "field: before → after" rows."""
    parsed = preview if isinstance(preview, ParsedPreview) else parse_preview(preview)
    lines = [parsed.caption]
    for row in parsed.rows:
        before = value_text(row.before) if row.has_before else "(new)"
        lines.append(f"  {row.field}: {before} → {value_text(row.after)}")
    if parsed.rest:
        lines.append("  " + value_text(parsed.rest))
    return "\n".join(lines)
