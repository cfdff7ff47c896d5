"""The read tools: query and aggregate (and the direct strategy's query_<manager>).

Arguments are validated against the schema index into a spec (no data touched on a
mistake), then the manager's backend executes it within the context's limits.

A read that finds nothing while text filters narrowed it carries a `hint`: a model told
only `total_count: 0` answers "there is none" with confidence, when the name was written
differently ("Apollo project" for Apollo, a part of a word). The hint names the
case-insensitive substring filter to try instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatomon.chat.tools.context import ToolContext
from chatomon.data.aggregate import parse_aggregate
from chatomon.data.hints import example, shaped_field
from chatomon.data.query import Condition, parse_query
from chatomon.data.schema import ManagerSchema, SchemaIndex

__all__ = ["aggregate", "query"]


def query(index: SchemaIndex, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    """`{"data": [...], "total_count": int, "has_more": bool}`."""
    spec = parse_query(
        index,
        args.get("manager"),
        filters=args.get("filters"),
        fields=args.get("fields"),
        order_by=args.get("order_by"),
        limit=args.get("limit"),
        offset=args.get("offset"),
        max_results=context.settings.max_results,
    )
    page = spec.schema.backend.run_query(
        spec, context.actor, context.settings.query_timeout_seconds
    )
    result: dict[str, Any] = {
        "data": page.rows,
        "total_count": page.total_count,
        "has_more": spec.offset + len(page.rows) < page.total_count,
    }
    hint = empty_text_hint(spec.conditions, spec.schema) if page.total_count == 0 else None
    if hint is not None:
        result["hint"] = hint
    return result


def aggregate(index: SchemaIndex, args: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
    """`{"groups": [{"group": {...}, "values": {...}}], "has_more": bool}`."""
    spec = parse_aggregate(
        index,
        args.get("manager"),
        filters=args.get("filters"),
        group_by=args.get("group_by"),
        metrics=args.get("metrics"),
        max_groups=context.settings.max_results,
    )
    page = spec.schema.backend.run_aggregate(
        spec, context.actor, context.settings.query_timeout_seconds
    )
    result: dict[str, Any] = {"groups": page.groups, "has_more": page.has_more}
    empty = not page.groups or (
        not spec.group_by and page.groups[0].get("values", {}).get("count") == 0
    )
    hint = empty_text_hint(spec.conditions, spec.schema) if empty else None
    if hint is not None:
        result["hint"] = hint
    return result


_NARROWING = ("exact", "iexact", "contains", "startswith", "in")
"""Text lookups that miss a value written differently (icontains is the forgiving one)."""


def empty_text_hint(
    conditions: tuple[Condition, ...], schema: ManagerSchema | None = None
) -> str | None:
    """What to try when text filters matched nothing, or None when no text filter did.

    `schema` is the manager queried: a value with the form of another field's codes
    ("P-1002" asked of a part's name, whose number reads "such as P-1001") points there.
    """
    for condition in conditions:
        if condition.field.type != "string" or condition.on_relation:
            continue
        if condition.lookup not in _NARROWING:
            continue
        base = (
            condition.key.rsplit("__", 1)[0]
            if condition.key.endswith(tuple(f"__{lookup}" for lookup in _NARROWING))
            else condition.key
        )
        value = condition.value[0] if isinstance(condition.value, tuple) else condition.value
        owner = condition.hops[-1].target if condition.hops else schema
        shaped = shaped_field(owner, value) if owner is not None else None
        if owner is not None and shaped is not None and shaped != condition.field.name:
            key = base.removesuffix(condition.field.name) + shaped
            return (
                f"no row has {condition.key} = {value!r}; {value!r} has the form of "
                f"{owner.name}.{shaped}: {example(key, value)}"
            )
        shown = example(f"{base}__icontains", _word(value))
        return (
            f"no row has {condition.key} = {value!r}. If it may be written differently, "
            f"try one distinctive word, ignoring case: {shown}"
            "; otherwise the answer is that there is none."
        )
    return None


def _word(value: str) -> str:
    """The word of a name most likely to be in the stored one: a proper noun or a code."""
    words = value.split() or [value]
    marked = [w for w in words if w[:1].isupper() or any(c.isdigit() for c in w)]
    return (marked or [max(words, key=len)])[0]
