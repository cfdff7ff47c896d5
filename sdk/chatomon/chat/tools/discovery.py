"""The discovery tools: search_managers, get_manager_schema and find_path.

They read only the schema index (no data), so they run inline; the index holds only
exposed managers, so nothing they return can name a hidden one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatomon.data.schema import SchemaIndex

__all__ = ["SEARCH_LIMIT", "find_path", "get_manager_schema", "search_managers"]

SEARCH_LIMIT = 10


def search_managers(index: SchemaIndex, args: Mapping[str, Any]) -> dict[str, Any]:
    """`{"managers": [summary, ...]}`, best match first, at most 10."""
    found = index.search_index.search(str(args.get("query", "")), SEARCH_LIMIT)
    result: dict[str, Any] = {"managers": [schema.summary() for schema in found]}
    if not found:
        result["message"] = (
            "no manager matches; try other words, or an empty query to list managers"
        )
    return result


def get_manager_schema(index: SchemaIndex, args: Mapping[str, Any]) -> dict[str, Any]:
    """The manager's fields, relations and filters (see ManagerSchema.to_json)."""
    return index.get(args.get("manager")).to_json()


def find_path(index: SchemaIndex, args: Mapping[str, Any]) -> dict[str, Any]:
    """`{"from_manager", "to_manager", "path": [relation, ...] | None, "via": [manager, ...]}`."""
    start, goal = args.get("from_manager"), args.get("to_manager")
    path = index.find_path(start, goal)  # type: ignore[arg-type]
    result: dict[str, Any] = {"from_manager": start, "to_manager": goal}
    if path is None:
        result["path"] = None
        result["message"] = f"no relation path leads from {start} to {goal}"
    else:
        result["path"] = list(path.relations)
        result["via"] = list(path.managers)
    return result
