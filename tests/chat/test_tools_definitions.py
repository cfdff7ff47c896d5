"""Tool definitions: closed schemas every provider accepts, short texts, the direct strategy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chatomon.chat.tools import Toolset, ToolSettings, direct_query_name
from chatomon.chat.tools.definitions import discovery_definitions
from chatomon.data import DataConfigurationError, Manager, ManagerRegistry
from chatomon.data.fixtures import large_registry, toy_registry
from chatomon.providers.base import ToolDefinition
from tests.data.catalog import records_catalog

DISCOVERY = ["search_managers", "get_manager_schema", "find_path", "query", "aggregate"]


def subschemas(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from subschemas(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from subschemas(item)


def definitions(registry: ManagerRegistry, **settings: Any) -> list[ToolDefinition]:
    return Toolset(registry, ToolSettings(**settings)).definitions


def size(defs: list[ToolDefinition]) -> int:
    return len(
        json.dumps(
            [
                {"name": d.name, "description": d.description, "parameters": d.parameters}
                for d in defs
            ]
        )
    )


def test_the_discovery_strategy_offers_the_stable_tool_set() -> None:
    assert [d.name for d in definitions(toy_registry())] == DISCOVERY
    catalog = records_catalog()
    assert [d.name for d in definitions(catalog.registry, allowed_mutations=["createPart"])] == [
        *DISCOVERY,
        "mutate",
    ]


@pytest.mark.parametrize("strategy", ["discovery", "direct"])
def test_schemas_are_closed_objects_without_refs_or_unions(strategy: str) -> None:
    catalog = records_catalog()
    defs = definitions(
        catalog.registry, tool_strategy=strategy, allowed_mutations=["createPart", "updatePartCost"]
    )
    for definition in defs:
        parameters = definition.parameters
        assert parameters["type"] == "object"
        assert parameters["additionalProperties"] is False
        assert set(parameters["required"]) <= set(parameters["properties"])
        for sub in subschemas(parameters):
            assert not {"$ref", "$defs", "oneOf", "anyOf", "allOf", "definitions"} & set(sub), (
                definition.name
            )
            if sub.get("type") == "object" and "properties" in sub:
                assert sub["additionalProperties"] is False, definition.name
        # mutate lists each allowed mutation's signature; every other text has a fixed bound.
        if definition.name != "mutate":
            assert len(definition.description) <= 320, definition.name
        json.dumps(parameters)


def test_the_toy_toolset_definitions_stay_small() -> None:
    toy = definitions(toy_registry())
    assert size(toy) < 3800  # with the manager arguments' enum of its three names
    direct = definitions(toy_registry(), tool_strategy="direct")
    assert size(direct) < 6800


def test_the_direct_strategy_adds_one_query_tool_per_exposed_manager() -> None:
    defs = definitions(records_catalog().registry, tool_strategy="direct")
    names = [d.name for d in defs]
    assert names == [
        *DISCOVERY,
        "query_material_manager",
        "query_part_manager",
        "query_project_manager",
    ]
    part = next(d for d in defs if d.name == "query_part_manager")
    assert "manager" not in part.parameters["properties"]
    assert part.parameters["required"] == []
    assert "Fields: name, unit_cost" in part.description
    assert "relations: material, projects." in part.description


def test_a_direct_tool_queries_its_manager() -> None:
    toolset = Toolset(toy_registry(), ToolSettings(tool_strategy="direct"))
    result = toolset.call_sync(
        "query_part_manager", {"filters": {"material__name": "Steel"}}, toolset.context()
    )
    assert [row["name"] for row in result["data"]] == ["Bolt"]
    refused = toolset.call_sync(
        "query_part_manager", {"manager": "MaterialManager"}, toolset.context()
    )
    assert refused["code"] == "invalid_value"


@pytest.mark.parametrize(
    ("manager", "tool"),
    [
        ("PartManager", "query_part_manager"),
        ("HTTPLogManager", "query_http_log_manager"),
        ("Items", "query_items"),
        ("order_lines", "query_order_lines"),
    ],
)
def test_direct_tool_names_are_snake_case(manager: str, tool: str) -> None:
    assert direct_query_name(manager) == tool


def test_direct_tool_name_clashes_are_configuration_errors() -> None:
    clash = ManagerRegistry(
        [
            Manager.from_records("PartManager", records=[{"name": "a"}]),
            Manager.from_records("Part_Manager", records=[{"name": "a"}]),
        ]
    )
    with pytest.raises(DataConfigurationError, match="query_part_manager is taken"):
        Toolset(clash, ToolSettings(tool_strategy="direct"))


def test_definitions_follow_registry_changes() -> None:
    registry = toy_registry()
    toolset = Toolset(registry, ToolSettings(tool_strategy="direct"))
    assert len(toolset.definitions) == 8
    registry.register(Manager.from_records("ToolManager", records=[{"name": "hammer"}]))
    assert "query_tool_manager" in [d.name for d in toolset.definitions]


def test_a_large_registry_keeps_discovery_definitions_the_same_size() -> None:
    # Beyond MANAGER_ENUM_LIMIT managers no name is listed: the size does not grow.
    unnamed = discovery_definitions(ToolSettings().max_results)
    assert size(definitions(large_registry())) == size(unnamed)
