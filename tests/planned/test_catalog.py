"""The manager catalog: sources, validation against the schema index, normalization, fingerprint."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from chatomon.data.fixtures import toy_registry
from chatomon.data.schema import SchemaIndex
from chatomon.errors import ChatConfigurationError
from chatomon.planned.catalog import (
    ManagerCatalog,
    ManagerCatalogEntry,
    load_manager_catalog,
    normalize_match_text,
)

PART = {
    "domain": "manufacturing",
    "aliases": ["Part", "component!", "item", "PART"],
    "use_when": "The question concerns designed or purchased components.",
    "distinguish_from": ["MaterialManager"],
}
CATALOG = {"PartManager": PART, "MaterialManager": {"aliases": ["raw material"]}}


def get_manager_catalog() -> dict[str, Any]:
    """A catalog callable, as planned.catalog may name by dotted path."""
    return CATALOG


NOT_CALLABLE: dict[str, Any] = {"PartManager": {}}


@pytest.fixture
def index() -> SchemaIndex:
    return toy_registry().schema_index()


def refused(source: Any, index: SchemaIndex) -> ChatConfigurationError:
    with pytest.raises(ChatConfigurationError) as caught:
        load_manager_catalog(source, index)
    assert caught.value.key == "planned.catalog"
    return caught.value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Part-Number!", "part number"),
        ("  Raw   MATERIAL\t", "raw material"),
        ("unit_cost", "unit cost"),
        ("Größe (cm³)", "grösse cm³"),  # casefolded: ß compares as ss
        ("!!", ""),
    ],
)
def test_normalize_match_text(text: str, expected: str) -> None:
    assert normalize_match_text(text) == expected


def test_a_mapping_becomes_normalized_entries_sorted_by_manager(index: SchemaIndex) -> None:
    catalog = load_manager_catalog(CATALOG, index)
    assert list(catalog.entries) == ["MaterialManager", "PartManager"]
    assert catalog.entries["PartManager"] == ManagerCatalogEntry(
        manager="PartManager",
        domain="manufacturing",
        aliases=("part", "component", "item"),
        use_when="The question concerns designed or purchased components.",
        distinguish_from=("MaterialManager",),
    )
    assert catalog.get("MaterialManager") == ManagerCatalogEntry(
        "MaterialManager", aliases=("raw material",)
    )
    assert catalog.get("ProjectManager") is None


def test_none_is_the_empty_catalog(index: SchemaIndex) -> None:
    catalog = load_manager_catalog(None, index)
    assert catalog == ManagerCatalog.empty()
    assert dict(catalog.entries) == {}
    assert catalog.summary_lines() == []


def test_a_callable_and_a_dotted_path_give_the_same_catalog(index: SchemaIndex) -> None:
    from_mapping = load_manager_catalog(CATALOG, index)
    assert load_manager_catalog(get_manager_catalog, index) == from_mapping
    assert load_manager_catalog(f"{__name__}.get_manager_catalog", index) == from_mapping
    assert load_manager_catalog(lambda: None, index) == ManagerCatalog.empty()


def test_the_fingerprint_is_canonical_content(index: SchemaIndex) -> None:
    catalog = load_manager_catalog(CATALOG, index)
    assert len(catalog.fingerprint) == 64
    reordered = {
        "MaterialManager": {"aliases": ["Raw Material"]},
        "PartManager": {**PART, "aliases": ["part", "COMPONENT", "item"]},
    }
    assert load_manager_catalog(reordered, index).fingerprint == catalog.fingerprint
    changed = {**CATALOG, "PartManager": {**PART, "domain": "assembly"}}
    assert load_manager_catalog(changed, index).fingerprint != catalog.fingerprint
    assert ManagerCatalog.empty().fingerprint != catalog.fingerprint


def test_summary_lines_are_compact(index: SchemaIndex) -> None:
    assert load_manager_catalog(CATALOG, index).summary_lines() == [
        "MaterialManager; aliases: raw material",
        "PartManager (manufacturing); aliases: part, component, item; use when: The question "
        "concerns designed or purchased components.; not: MaterialManager",
    ]


def test_the_catalog_is_immutable(index: SchemaIndex) -> None:
    catalog = load_manager_catalog(CATALOG, index)
    with pytest.raises(TypeError):
        catalog.entries["ProjectManager"] = catalog.entries["PartManager"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        catalog.entries["PartManager"].domain = "x"
    CATALOG["PartManager"]["domain"] = "changed later"
    try:
        assert catalog.entries["PartManager"].domain == "manufacturing"
    finally:
        CATALOG["PartManager"]["domain"] = "manufacturing"


def test_an_entry_for_a_manager_outside_the_schema_index_is_refused(index: SchemaIndex) -> None:
    error = refused({"PartManagr": {}}, index)
    assert (
        "names 'PartManagr', which is not a chat-exposed manager; did you mean 'PartManager'?"
        in (str(error))
    )
    assert error.suggestion == "PartManager"
    hidden = refused({"SalaryManager": {}}, index)
    assert "which is not a chat-exposed manager" in str(hidden)
    assert hidden.suggestion is None


def test_distinguish_from_may_only_name_exposed_managers(index: SchemaIndex) -> None:
    """A hidden name there would reach the planner prompt through summary_lines."""
    error = refused({"PartManager": {"distinguish_from": ["SalaryManager"]}}, index)
    assert "PartManager.distinguish_from names 'SalaryManager'" in str(error)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ({"PartManager": {"alias": []}}, "PartManager.alias is unknown; did you mean 'aliases'?"),
        ({"PartManager": {"aliases": "part"}}, "PartManager.aliases must be a list of strings"),
        ({"PartManager": {"domain": 3}}, "planned.catalog.PartManager.domain must be a string"),
        ({"PartManager": "parts"}, "planned.catalog.PartManager"),
        ({"PartManager": {"aliases": ["!!"]}}, "alias without a letter or digit"),
        (42, "must be None, a mapping, a callable returning a mapping or a dotted path"),
        (lambda: ["PartManager"], "a callable returning a mapping or a dotted path to one, got"),
        ("nowhere.at_all.catalog", "names 'nowhere.at_all.catalog', which cannot be imported"),
        (f"{__name__}.missing", "which cannot be imported"),
        (f"{__name__}.NOT_CALLABLE", "which is not a callable"),
    ],
)
def test_malformed_catalogs_are_refused_naming_the_problem(
    source: Any, expected: str, index: SchemaIndex
) -> None:
    assert expected in str(refused(source, index))


def test_loading_does_not_change_the_schema_index(index: SchemaIndex) -> None:
    before = index.names
    load_manager_catalog(CATALOG, index)
    assert index.names == before
    assert [schema.description for schema in index.managers.values()] == [
        "Materials that parts are made of.",
        "Designed or purchased components.",
        "Projects and the parts they use.",
    ]
