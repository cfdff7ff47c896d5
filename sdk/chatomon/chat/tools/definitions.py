"""The tools' definitions: names, descriptions for the model, and argument schemas.

They are sent on every provider round, so descriptions are short and say only what the
model needs to call the tool right. The schemas are closed (`additionalProperties: false`)
and use no `$ref`, `oneOf`, `anyOf` or `allOf`, so every provider accepts them; the one
place that takes two shapes (a fields entry: a name or `{relation: [fields]}`) leaves its
items untyped and says so in the description.

They give no sample values (no manager, field or search words): small models copy a
sample into their calls ("e.g. PartManager" became the manager of unrelated questions),
so the descriptions say where a value comes from instead, and point to search_managers
whenever the manager's exact name is not known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from chatomon.data.aggregate import OPS
from chatomon.data.mutations import Mutation
from chatomon.data.query import MAX_OFFSET
from chatomon.data.schema import ManagerSchema
from chatomon.providers.base import ToolDefinition

__all__ = [
    "MANAGER_ENUM_LIMIT",
    "aggregate_definition",
    "direct_query_definition",
    "direct_query_name",
    "discovery_definitions",
    "find_path_definition",
    "get_manager_schema_definition",
    "mutate_definition",
    "query_definition",
    "search_managers_definition",
]

_MANAGER = {
    "type": "string",
    "description": "Exact name from search_managers.",
}
MANAGER_ENUM_LIMIT = 30
"""Up to this many exposed managers, the manager arguments are an enum of their names."""


def _manager(managers: Sequence[str]) -> dict[str, Any]:
    """A manager argument: an enum of the exposed names when there are few.

    The names are the real ones, not samples: a model constrained by the schema (the
    local grammar) can only name an existing manager; Qwen2.5-Coder-1.5B, shown only a
    placeholder, sent "manager", "project" or "Apollo" as the manager.
    """
    if 0 < len(managers) <= MANAGER_ENUM_LIMIT:
        return {**_MANAGER, "enum": list(managers)}
    return dict(_MANAGER)


_FILTERS = {
    "type": "object",
    "description": (
        "{field__lookup: value}; lookups exact (default, ignores case), icontains, contains, "
        "startswith, in [..], gt, gte, lt, lte, range [low, high], isnull bool. Related "
        "fields: relation__field__lookup (a relation alone compares ids)."
    ),
}


def _object(properties: dict[str, Any], required: Iterable[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def search_managers_definition() -> ToolDefinition:
    """search_managers(query)."""
    return ToolDefinition(
        name="search_managers",
        description=(
            "Find the managers (data sets) a question is about: their exact names, fields "
            "and relations, up to 10. Call it first whenever you do not know the exact "
            "manager name."
        ),
        parameters=_object(
            {"query": {"type": "string", "description": "Words from the user's question."}},
            ["query"],
        ),
    )


def get_manager_schema_definition(managers: Sequence[str] = ()) -> ToolDefinition:
    """get_manager_schema(manager)."""
    return ToolDefinition(
        name="get_manager_schema",
        description="A manager's fields (type, description, choices), filters with lookups, "
        "and relations.",
        parameters=_object({"manager": _manager(managers)}, ["manager"]),
    )


def find_path_definition(managers: Sequence[str] = ()) -> ToolDefinition:
    """find_path(from_manager, to_manager)."""
    return ToolDefinition(
        name="find_path",
        description=(
            "Relation path between two managers: relation names to join with __ into a "
            "filter or fields prefix. [] for the same manager, null when unrelated."
        ),
        parameters=_object(
            {"from_manager": _manager(managers), "to_manager": _manager(managers)},
            ["from_manager", "to_manager"],
        ),
    )


def _query_properties(max_results: int) -> dict[str, Any]:
    return {
        "filters": _FILTERS,
        "fields": {
            "type": "array",
            "description": (
                "Field names; a relation name, a path relation__field, or {relation: "
                "[fields]}, up to 3 deep. "
                "Default: all fields."
            ),
            "items": {},
        },
        "order_by": {
            "type": "array",
            "description": "Field names, '-' prefix for descending.",
            "items": {"type": "string"},
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Rows per page, default 50, max {max_results}.",
        },
        "offset": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
    }


_QUERY_RESULT = "Returns {data: rows with id, total_count, has_more}."


def query_definition(max_results: int, managers: Sequence[str] = ()) -> ToolDefinition:
    """query(manager, filters, fields, order_by, limit, offset)."""
    return ToolDefinition(
        name="query",
        description=f"Read a manager's rows. {_QUERY_RESULT}",
        parameters=_object(
            {"manager": _manager(managers), **_query_properties(max_results)}, ["manager"]
        ),
    )


def aggregate_definition(managers: Sequence[str] = ()) -> ToolDefinition:
    """aggregate(manager, filters, group_by, metrics)."""
    metric = _object(
        {"op": {"type": "string", "enum": list(OPS)}, "field": {"type": "string"}}, ["op"]
    )
    return ToolDefinition(
        name="aggregate",
        description=(
            "Count, sum, avg, min, max computed by the database, optionally per group. "
            "Returns {groups: [{group: {key: value}, values: {count, <op>_<field>}}], "
            "has_more}; decimals are strings."
        ),
        parameters=_object(
            {
                "manager": _manager(managers),
                "filters": _FILTERS,
                "group_by": {
                    "type": "array",
                    "description": (
                        "Fields to group by, also across to-one relations "
                        "(relation__field); none for one total."
                    ),
                    "items": {"type": "string"},
                },
                "metrics": {
                    "type": "array",
                    "description": "Default [{op: count}].",
                    "items": metric,
                },
            },
            ["manager"],
        ),
    )


def mutate_definition(mutations: Iterable[Mutation]) -> ToolDefinition:
    """mutate(mutation, input), describing the allowed mutations' inputs.

    The mutation argument is an enum of the allowed names: a model constrained by its
    schema (the local grammar, vendors' structured calls) can then only name one of them
    (SmolLM2 and Qwen2.5-Coder 1.5B both wrote "mutation" itself, copied from a sample).
    """
    listed = list(mutations)
    signatures = "; ".join(
        f"{m.signature()}{': ' + m.description if m.description else ''}" for m in listed
    )
    return ToolDefinition(
        name="mutate",
        description=(
            f"Change data with one mutation. Allowed: {signatures}. Call it alone. Returns "
            "executed with the result, unchanged when nothing would change (tell the user "
            "why), or confirmation_required: a person must approve, so tell the user and wait. "
            "A rejected change is final: do not send it again."
        ),
        parameters=_object(
            {
                "mutation": {
                    "type": "string",
                    "enum": [m.name for m in listed],
                    "description": "Mutation name.",
                },
                "input": {"type": "object", "description": "The mutation's input fields."},
            },
            ["mutation", "input"],
        ),
    )


def discovery_definitions(max_results: int, managers: Sequence[str] = ()) -> list[ToolDefinition]:
    """The discovery tools, in the order the model should think of them.

    `managers`: the exposed manager names (an enum of the manager arguments when there
    are at most MANAGER_ENUM_LIMIT).
    """
    return [
        search_managers_definition(),
        get_manager_schema_definition(managers),
        find_path_definition(managers),
        query_definition(max_results, managers),
        aggregate_definition(managers),
    ]


def direct_query_name(manager: str) -> str:
    """The direct tool name of a manager: PartManager → query_part_manager."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", manager).lower()
    return f"query_{snake}"


def direct_query_definition(schema: ManagerSchema, max_results: int) -> ToolDefinition:
    """query_<manager>: the query tool with the manager fixed."""
    fields = ", ".join(name for name in schema.fields if name != "id")
    relations = ", ".join(schema.relations) or "none"
    about = f" {schema.description}" if schema.description else ""
    return ToolDefinition(
        name=direct_query_name(schema.name),
        description=(
            f"Read {schema.name} rows.{about} Fields: {fields}; relations: {relations}. "
            f"{_QUERY_RESULT}"
        ),
        parameters=_object(_query_properties(max_results), []),
    )
