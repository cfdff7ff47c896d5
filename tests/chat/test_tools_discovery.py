"""search_managers, get_manager_schema and find_path; hidden managers are never named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatomon.chat.tools import Toolset, ToolSettings
from chatomon.chat.tools.discovery import data_catalogue
from chatomon.data import Manager, ManagerRegistry, RelationSpec
from chatomon.data.fixtures import large_registry, toy_registry
from tests.data.catalog import BACKENDS, Catalog, open_catalog, records_catalog


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest) -> Catalog:
    return open_catalog(request)


def call(registry: ManagerRegistry, name: str, args: dict[str, Any], **settings: Any) -> Any:
    toolset = Toolset(registry, ToolSettings(**settings))
    return toolset.call_sync(name, args, toolset.context())


def found(registry: ManagerRegistry, query: str) -> list[str]:
    return [m["name"] for m in call(registry, "search_managers", {"query": query})["managers"]]


def test_search_summaries_hold_name_description_fields_and_relations() -> None:
    result = call(toy_registry(), "search_managers", {"query": "part"})
    assert result["managers"][0] == {
        "name": "PartManager",
        "description": "Designed or purchased components.",
        "fields": ["name"],
        "relations": ["material"],
    }


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("parts", "PartManager"),
        ("Which projects use aluminum parts?", "ProjectManager"),
        ("material density", "MaterialManager"),
        ("densities", "MaterialManager"),
        ("PartManager", "PartManager"),
        ("mat", "MaterialManager"),
    ],
)
def test_search_ranks_by_name_then_members_then_description(query: str, first: str) -> None:
    assert found(toy_registry(), query)[0] == first


@pytest.mark.parametrize("query", ["unitCost", "unit cost", "unit_cost", "UNIT COSTS"])
def test_search_splits_camel_case_and_snake_case(query: str) -> None:
    assert found(records_catalog().registry, query)[0] == "PartManager"


def test_search_with_no_meaningful_word_lists_managers_and_unknown_words_find_none() -> None:
    assert found(toy_registry(), "") == ["MaterialManager", "PartManager", "ProjectManager"]
    assert found(toy_registry(), "show me all") == [
        "MaterialManager",
        "PartManager",
        "ProjectManager",
    ]
    nothing = call(toy_registry(), "search_managers", {"query": "zebra"})
    assert nothing["managers"] == []
    assert "other words" in nothing["message"]


def test_search_returns_at_most_ten_best_first() -> None:
    registry = large_registry()
    results = found(registry, "warehouse")
    assert len(results) == 10
    assert all(name.startswith("Warehouse") for name in results)
    assert results == sorted(results)
    assert found(registry, "clinic invoices")[0] == "ClinicInvoiceManager"


def test_schema_lists_fields_filters_and_relations(catalog: Catalog) -> None:
    schema = catalog.call("get_manager_schema", {"manager": "PartManager"})
    assert schema["name"] == "PartManager"
    assert schema["description"] == "Designed or purchased components."
    assert schema["fields"]["unit_cost"] == {
        "type": "decimal",
        "description": "Cost per unit in EUR.",
    }
    assert schema["fields"]["weight_kg"] == {
        "type": "float",
        "description": "Weight in kilograms.",
        "nullable": True,
    }
    assert schema["fields"]["status"] == {"type": "enum", "choices": ["draft", "active", "retired"]}
    assert {name: spec["type"] for name, spec in schema["fields"].items()} == {
        "id": "integer",
        "name": "string",
        "unit_cost": "decimal",
        "weight_kg": "float",
        "status": "enum",
        "in_stock": "boolean",
        "released_on": "date",
        "created_at": "datetime",
        "quantity": "integer",
    }
    assert schema["relations"] == [
        {"name": "material", "target": "MaterialManager", "kind": "to_one"},
        {"name": "projects", "target": "ProjectManager", "kind": "to_many"},
    ]
    assert schema["filters"]["name"] == [
        "exact",
        "iexact",
        "contains",
        "icontains",
        "startswith",
        "in",
        "isnull",
    ]
    assert schema["filters"]["unit_cost"] == [
        "exact",
        "in",
        "gt",
        "gte",
        "lt",
        "lte",
        "range",
        "isnull",
    ]
    assert schema["filters"]["in_stock"] == ["exact", "isnull"]
    assert schema["filters"]["status"] == ["exact", "in", "isnull"]
    assert schema["filters"]["material"] == ["exact", "in", "isnull"]
    assert schema["filters"]["id"] == ["exact", "in"]
    assert "quantity" not in schema["filters"]


def test_both_backends_describe_the_catalog_identically(catalog: Catalog) -> None:
    records = records_catalog()
    for manager in ("MaterialManager", "PartManager", "ProjectManager"):
        assert catalog.call("get_manager_schema", {"manager": manager}) == records.call(
            "get_manager_schema", {"manager": manager}
        )


def test_schema_of_an_unknown_manager_suggests_exposed_names(catalog: Catalog) -> None:
    result = catalog.call("get_manager_schema", {"manager": "PartManger"})
    assert result["code"] == "unknown_manager"
    assert "did you mean 'PartManager'" in result["message"]
    assert result["allowed"] == ["MaterialManager", "PartManager", "ProjectManager"]


@pytest.mark.parametrize(
    ("start", "goal", "path", "via"),
    [
        (
            "ProjectManager",
            "MaterialManager",
            ["parts", "material"],
            ["PartManager", "MaterialManager"],
        ),
        ("PartManager", "ProjectManager", ["projects"], ["ProjectManager"]),
        ("PartManager", "PartManager", [], []),
    ],
)
def test_find_path(
    catalog: Catalog, start: str, goal: str, path: list[str], via: list[str]
) -> None:
    result = catalog.call("find_path", {"from_manager": start, "to_manager": goal})
    assert result == {"from_manager": start, "to_manager": goal, "path": path, "via": via}


def test_find_path_is_null_when_no_relation_leads_there() -> None:
    result = call(
        toy_registry(),
        "find_path",
        {"from_manager": "MaterialManager", "to_manager": "PartManager"},
    )
    assert result["path"] is None
    assert "no relation path" in result["message"]


def test_find_path_errors_for_unknown_managers() -> None:
    result = call(
        toy_registry(), "find_path", {"from_manager": "PartManager", "to_manager": "Steel"}
    )
    assert result["code"] == "unknown_manager"


def test_find_path_over_the_longest_chain_of_the_large_registry() -> None:
    registry = large_registry()
    result = call(
        registry,
        "find_path",
        {"from_manager": "WarehouseOrderManager", "to_manager": "WarehouseAuditManager"},
    )
    assert result["path"] == ["next_item"] * 8
    assert result["via"][-1] == "WarehouseAuditManager"


def test_find_path_takes_the_shortest_path_and_breaks_ties_by_relation_name() -> None:
    def records(name: str, relations: dict[str, str]) -> type[Manager]:
        row = {"id": 1, "name": name, **dict.fromkeys(relations, 1)}
        return Manager.from_records(
            name,
            records=[row],
            relations={k: RelationSpec(v, to_many=False) for k, v in relations.items()},
        )

    registry = ManagerRegistry(
        [
            records("AManager", {"zulu": "BManager", "alpha": "CManager", "long": "DManager"}),
            records("BManager", {"to_goal": "GoalManager"}),
            records("CManager", {"to_goal": "GoalManager"}),
            records("DManager", {"step": "EManager"}),
            records("EManager", {"to_goal": "GoalManager"}),
            records("GoalManager", {}),
        ]
    )
    result = call(registry, "find_path", {"from_manager": "AManager", "to_manager": "GoalManager"})
    assert result["path"] == ["alpha", "to_goal"]
    assert result["via"] == ["CManager", "GoalManager"]


def hidden_registry() -> ManagerRegistry:
    secret = Manager.from_records(
        "SecretLedgerManager",
        records=[{"id": 1, "name": "Payroll", "part": 1}],
        relations={"part": RelationSpec("PartManager", to_many=False)},
        description="Salaries and parts.",
        chat_exposed=False,
    )
    part = Manager.from_records(
        "PartManager",
        records=[{"id": 1, "name": "Bolt", "ledger": 1}],
        relations={"ledger": RelationSpec("SecretLedgerManager", to_many=False)},
        description="Parts.",
    )
    return ManagerRegistry([secret, part])


def test_a_hidden_manager_is_never_named() -> None:
    registry = hidden_registry()
    unprompted = [
        call(registry, "search_managers", {"query": "secret ledger salaries parts"}),
        call(registry, "search_managers", {"query": ""}),
        call(registry, "get_manager_schema", {"manager": "PartManager"}),
        call(registry, "query", {"manager": "PartManager", "fields": ["ledgr"]}),
        call(registry, "query", {"manager": "PartManager", "filters": {"ledgr": 1}}),
        call(registry, "query", {"manager": "PartManager"}),
        call(registry, "query_part_manager", {}, tool_strategy="direct"),
    ]
    definitions = Toolset(registry, ToolSettings(tool_strategy="direct")).definitions
    shown = json.dumps(unprompted) + json.dumps(
        [[d.name, d.description, d.parameters] for d in definitions]
    )
    for word in ("Secret", "secret", "ledger", "Ledger", "Salaries", "Payroll"):
        assert word not in shown.replace('"secret ledger salaries parts"', ""), word
    assert unprompted[1]["managers"] == [
        {"name": "PartManager", "description": "Parts.", "fields": ["name"], "relations": []}
    ]
    assert unprompted[2]["relations"] == []
    assert "ledger" not in unprompted[2]["filters"]
    assert "ledger" not in unprompted[5]["data"][0]

    named = [
        call(registry, "get_manager_schema", {"manager": "SecretLedgerManager"}),
        call(
            registry,
            "find_path",
            {"from_manager": "PartManager", "to_manager": "SecretLedgerManager"},
        ),
        call(
            registry,
            "find_path",
            {"from_manager": "SecretLedgerManager", "to_manager": "PartManager"},
        ),
        call(registry, "query", {"manager": "SecretLedgerManager"}),
        call(registry, "query", {"manager": "PartManager", "fields": ["ledger"]}),
        call(registry, "query", {"manager": "PartManager", "fields": [{"ledger": ["name"]}]}),
        call(registry, "query", {"manager": "PartManager", "filters": {"ledger__name": "Payroll"}}),
        call(registry, "query", {"manager": "PartManager", "filters": {"ledger": 1}}),
        call(registry, "aggregate", {"manager": "PartManager", "group_by": ["ledger__name"]}),
        call(registry, "aggregate", {"manager": "SecretLedgerManager"}),
        call(registry, "get_manager_schema", {"manager": "SecretLedgerManagr"}),
        call(registry, "query_secret_ledger_manager", {}, tool_strategy="direct"),
    ]
    assert [result["code"] for result in named] == [
        "unknown_manager",
        "unknown_manager",
        "unknown_manager",
        "unknown_manager",
        "unknown_field",
        "unknown_field",
        "unknown_filter",
        "unknown_filter",
        "unknown_field",
        "unknown_manager",
        "unknown_manager",
        "unknown_tool",
    ]
    for result in named:
        assert "Salaries" not in json.dumps(result)
        assert all(
            "Secret" not in item and "ledger" not in item for item in result.get("allowed", [])
        )
        assert "did you mean" not in result["message"]


def test_a_small_schema_is_listed_for_the_system_prompt() -> None:
    assert Toolset(toy_registry()).catalogue.splitlines() == [
        "The data sets (exact manager names, their fields, and relations; filter across a "
        "relation with relation__field):",
        "- MaterialManager: id, name, density",
        "- PartManager: id, name; relations: material -> MaterialManager (e.g. material__name)",
        "- ProjectManager: id, name; relations: parts -> PartManager (e.g. parts__name)",
    ]


def test_a_large_schema_is_left_to_search_managers() -> None:
    assert Toolset(large_registry()).catalogue == ""
    assert data_catalogue(toy_registry().schema_index(), max_managers=2) == ""


def test_the_catalogue_never_names_a_hidden_manager() -> None:
    catalogue = Toolset(hidden_registry()).catalogue
    assert catalogue.splitlines()[1:] == ["- PartManager: id, name"]
    assert "ledger" not in catalogue.lower() and "secret" not in catalogue.lower()


def test_the_catalogue_follows_the_registry() -> None:
    registry = toy_registry()
    toolset = Toolset(registry)
    assert "SupplierManager" not in toolset.catalogue
    registry.register(Manager.from_records("SupplierManager", records=[], description="x."))
    assert "- SupplierManager: id" in toolset.catalogue


def test_the_catalogue_suggests_only_filters_the_query_accepts() -> None:
    notes = Manager.from_records(
        "NoteManager",
        records=[{"id": 1, "title": "x", "body": "y"}],
        description="Notes.",
        filters=["body"],  # the first field, title, is not filterable
    )
    tagged = Manager.from_records(
        "TagManager",
        records=[{"id": 1, "label": "a", "note": 1}],
        relations={"note": RelationSpec("NoteManager", to_many=False)},
        description="Tags.",
    )
    unfilterable = Manager.from_records(
        "PinManager",
        records=[{"id": 1, "note": 1}],
        relations={"note": RelationSpec("NoteManager", to_many=False)},
        description="Pins.",
        filters=["id"],  # the relation cannot be filtered: no example across it
    )
    lines = Toolset(ManagerRegistry([notes, tagged, unfilterable])).catalogue.splitlines()
    assert "- TagManager: id, label; relations: note -> NoteManager (e.g. note__body)" in lines
    assert "- PinManager: id; relations: note -> NoteManager" in lines
