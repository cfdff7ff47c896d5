"""The ready-made registries: the toy data exactly, and the large synthetic one."""

from __future__ import annotations

from typing import Any

from chatomon.chat.tools import Toolset
from chatomon.data.fixtures import CHAIN_LENGTH, large_registry, toy_registry


def rows(registry: Any, manager: str) -> Any:
    toolset = Toolset(registry)
    return toolset.call_sync(
        "query", {"manager": manager, "fields": [], "limit": 200}, toolset.context()
    )["data"]


def test_toy_registry_holds_the_toy_data() -> None:
    registry = toy_registry()
    assert [(r["name"], r["density"]) for r in rows(registry, "MaterialManager")] == [
        ("Steel", 7.8),
        ("Aluminum", 2.7),
        ("Cobalt", 8.9),
    ]
    toolset = Toolset(registry)
    parts = toolset.call_sync(
        "query",
        {"manager": "PartManager", "fields": ["name", {"material": ["name"]}]},
        toolset.context(),
    )["data"]
    assert [(p["name"], p["material"]["name"]) for p in parts] == [
        ("Bolt", "Steel"),
        ("Bearing", "Aluminum"),
        ("Gear", "Cobalt"),
    ]
    projects = toolset.call_sync(
        "query",
        {"manager": "ProjectManager", "fields": ["name", {"parts": ["name"]}]},
        toolset.context(),
    )["data"]
    assert [(p["name"], [q["name"] for q in p["parts"]]) for p in projects] == [
        ("Apollo", ["Gear"]),
        ("Mercury", ["Bearing"]),
    ]


def test_each_call_returns_a_fresh_registry() -> None:
    one, two = toy_registry(), toy_registry()
    (one.managers["MaterialManager"].records or []).append({"id": 4, "name": "Tin", "density": 7.3})
    assert len(rows(one, "MaterialManager")) == 4
    assert len(rows(two, "MaterialManager")) == 3


def test_large_registry_has_150_managers_with_chains_of_eight() -> None:
    index = large_registry().schema_index()
    assert len(index.names) == 150
    for schema in index.managers.values():
        assert list(schema.fields) == ["id", "name", "code", "status"]
        assert schema.fields["status"].choices == ("active", "paused", "archived")
    longest = 0
    for name in index.names:
        length, current = 0, name
        while index.managers[current].relations:
            current = index.managers[current].relations["next_item"].target
            length += 1
        longest = max(longest, length)
    assert longest == CHAIN_LENGTH
    first = rows(large_registry(), "WarehouseOrderManager")[0]
    assert first == {"id": 1, "name": "Warehouse order 1", "code": "WARORD-001", "status": "paused"}
