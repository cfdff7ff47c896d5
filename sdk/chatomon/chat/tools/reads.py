"""The read tools: query and aggregate (and the direct strategy's query_<manager>).

Arguments are validated against the schema index into a spec (no data touched on a
mistake), then the manager's backend executes it within the context's limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatomon.chat.tools.context import ToolContext
from chatomon.data.aggregate import parse_aggregate
from chatomon.data.query import parse_query
from chatomon.data.schema import SchemaIndex

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
    return {
        "data": page.rows,
        "total_count": page.total_count,
        "has_more": spec.offset + len(page.rows) < page.total_count,
    }


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
    return {"groups": page.groups, "has_more": page.has_more}
