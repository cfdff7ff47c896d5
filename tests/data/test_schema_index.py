"""The schema index: exposed managers only, their schemas, and the relation graph."""

from __future__ import annotations

import pytest

from chatomon.data import DataError, Manager, ManagerRegistry, RelationSpec
from chatomon.data.fixtures import toy_registry
from tests.data.catalog import records_catalog, wide_registry


def test_names_and_schemas_of_the_exposed_managers() -> None:
    index = records_catalog().registry.schema_index()
    assert index.names == ("MaterialManager", "PartManager", "ProjectManager")
    part = index.get("PartManager")
    assert list(part.relations) == ["material", "projects"]
    assert "supplier" not in part.filters
    assert part.summary()["relations"] == ["material", "projects"]
    assert index.graph["PartManager"] == (
        ("material", "MaterialManager"),
        ("projects", "ProjectManager"),
    )


def test_get_refuses_unknown_names_with_a_data_error() -> None:
    index = toy_registry().schema_index()
    with pytest.raises(DataError) as caught:
        index.get("PartManagr")
    assert caught.value.code == "unknown_manager"
    assert "did you mean 'PartManager'" in str(caught.value)
    with pytest.raises(DataError, match="no manager '3'"):
        index.get(3)


def test_find_path_and_its_lookup_prefix() -> None:
    index = toy_registry().schema_index()
    path = index.find_path("ProjectManager", "MaterialManager")
    assert path is not None
    assert path.relations == ("parts", "material")
    assert path.lookup_prefix == "parts__material__"
    assert index.find_path("MaterialManager", "ProjectManager") is None
    same = index.find_path("PartManager", "PartManager")
    assert same is not None
    assert (same.relations, same.lookup_prefix) == ((), "")


def test_a_relation_into_a_hidden_manager_is_dropped_and_paths_avoid_it() -> None:
    hidden = Manager.from_records(
        "HubManager",
        records=[{"name": "h", "b": 1}],
        relations={"b": RelationSpec("BManager", to_many=False)},
        chat_exposed=False,
    )
    a = Manager.from_records(
        "AManager",
        records=[{"name": "a", "hub": 1}],
        relations={"hub": RelationSpec("HubManager", to_many=False)},
    )
    b = Manager.from_records("BManager", records=[{"name": "b"}])
    index = ManagerRegistry([hidden, a, b]).schema_index()
    assert index.get("AManager").relations == {}
    assert index.find_path("AManager", "BManager") is None


def test_a_wide_registry_indexes_every_manager_and_field() -> None:
    index = wide_registry(200, 20).schema_index()
    assert len(index.names) == 200
    assert all(len(schema.fields) == 21 for schema in index.managers.values())  # 20 + id
    path = index.find_path("Wide000Manager", "Wide005Manager")
    assert path is not None
    assert path.relations == ("next",) * 5
    assert index.search_index.search("Wide007", 10)[0].name == "Wide007Manager"
