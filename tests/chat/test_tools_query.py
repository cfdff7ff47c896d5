"""The query tool, one suite for both backends: selection, filters, ordering, pages, scope."""

from __future__ import annotations

from typing import Any

import pytest

from chatomon.chat.tools import ToolSettings
from tests.data.catalog import BACKENDS, Catalog, open_catalog


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest) -> Catalog:
    return open_catalog(request)


def names(result: dict[str, Any]) -> list[str]:
    assert "data" in result, result
    return [row["name"] for row in result["data"]]


def query(catalog: Catalog, **args: Any) -> Any:
    return catalog.call("query", {"manager": "PartManager", **args})


def test_default_fields_are_every_scalar_field_with_id_first(catalog: Catalog) -> None:
    result = query(catalog, filters={"name": "Bolt"})
    assert result["total_count"] == 1
    assert result["has_more"] is False
    (row,) = result["data"]
    assert list(row) == [
        "id",
        "name",
        "unit_cost",
        "weight_kg",
        "status",
        "in_stock",
        "released_on",
        "created_at",
        "quantity",
    ]
    assert row["id"] == catalog.id_of("PartManager", "Bolt")


def test_values_are_serialized_exactly(catalog: Catalog) -> None:
    (row,) = query(catalog, filters={"name": "Bearing"})["data"]
    assert row["unit_cost"] == "12.50"
    assert row["weight_kg"] == pytest.approx(0.2)
    assert row["status"] == "active"
    assert row["in_stock"] is True
    assert row["released_on"] == "2023-06-01"
    assert row["created_at"] == "2024-02-20T12:30:00+00:00"
    assert row["quantity"] == 40


def test_empty_values_are_null(catalog: Catalog) -> None:
    (row,) = query(catalog, filters={"name": "Gear"}, fields=["weight_kg", "released_on"])["data"]
    assert row == {
        "id": catalog.id_of("PartManager", "Gear"),
        "weight_kg": None,
        "released_on": None,
    }


def test_selected_fields_and_nested_to_one_relation(catalog: Catalog) -> None:
    result = query(catalog, fields=["name", {"material": ["name", "density"]}], order_by=["name"])
    steel = catalog.id_of("MaterialManager", "Steel")
    assert result["data"][1] == {
        "id": catalog.id_of("PartManager", "Bolt"),
        "name": "Bolt",
        "material": {"id": steel, "name": "Steel", "density": pytest.approx(7.8)},
    }


def test_relation_named_alone_selects_the_related_default_fields(catalog: Catalog) -> None:
    (row,) = query(catalog, filters={"name": "Gear"}, fields=["material"])["data"]
    assert set(row["material"]) == {"id", "name", "density"}
    assert row["material"]["name"] == "Cobalt"


def test_nested_to_many_and_three_levels(catalog: Catalog) -> None:
    result = catalog.call(
        "query",
        {
            "manager": "ProjectManager",
            "fields": ["name", {"parts": ["name", {"material": ["name"]}]}],
            "order_by": ["name"],
        },
    )
    assert [
        (p["name"], [(q["name"], q["material"]["name"]) for q in p["parts"]])
        for p in result["data"]
    ] == [("Apollo", [("Gear", "Cobalt")]), ("Mercury", [("Bearing", "Aluminum")])]
    deep = catalog.call(
        "query",
        {"manager": "ProjectManager", "fields": [{"parts": [{"projects": [{"parts": ["name"]}]}]}]},
    )
    assert "data" in deep
    too_deep = catalog.call(
        "query",
        {
            "manager": "ProjectManager",
            "fields": [{"parts": [{"projects": [{"parts": [{"material": ["name"]}]}]}]}],
        },
    )
    assert too_deep["code"] == "invalid_value"
    assert "at most 3" in too_deep["message"]


def test_relation_paths_in_fields_read_as_nested_selections(catalog: Catalog) -> None:
    def projects(fields: list[Any]) -> Any:
        args = {"manager": "ProjectManager", "fields": fields, "order_by": ["name"]}
        return catalog.call("query", args)

    nested = projects(["name", {"parts": ["name", {"material": ["name"]}]}])
    # Paths through one relation join one selection, where the first of them stood.
    assert projects(["name", "parts__name", "parts__material__name"]) == nested
    assert projects(["parts__name", "name", "parts__material__name"])["data"][0] == {
        "id": catalog.id_of("ProjectManager", "Apollo"),
        "parts": [
            {
                "id": catalog.id_of("PartManager", "Gear"),
                "name": "Gear",
                "material": {"id": catalog.id_of("MaterialManager", "Cobalt"), "name": "Cobalt"},
            }
        ],
        "name": "Apollo",
    }
    # A path that is no relation here is still named as the unknown field it is.
    wrong = projects(["material__name"])
    assert wrong["code"] == "unknown_field"
    assert "'material__name'" in wrong["message"]
    # One relation selected twice (a path and an object) is refused, not half-kept.
    twice = projects(["parts__name", {"parts": ["id"]}])
    assert twice["code"] == "invalid_value"
    assert "the relation 'parts' twice" in twice["message"]
    misspelled = projects(["parts__nme"])
    assert misspelled["code"] == "unknown_field"
    assert "did you mean 'name'" in misspelled["message"]


def test_to_many_nested_lists_are_in_id_order_and_empty_lists_stay(catalog: Catalog) -> None:
    result = query(catalog, fields=["name", {"projects": ["name"]}], order_by=["name"])
    assert [(r["name"], [p["name"] for p in r["projects"]]) for r in result["data"]] == [
        ("Bearing", ["Mercury"]),
        ("Bolt", []),
        ("Gear", ["Apollo"]),
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"name": "Bolt"}, ["Bolt"]),
        ({"name__exact": "Bolt"}, ["Bolt"]),
        ({"name__iexact": "bOLT"}, ["Bolt"]),
        ({"name__contains": "ea"}, ["Bearing", "Gear"]),
        ({"name__icontains": "EA"}, ["Bearing", "Gear"]),
        ({"name__startswith": "Be"}, ["Bearing"]),
        ({"name__in": ["Bolt", "Gear", "Nope"]}, ["Bolt", "Gear"]),
        ({"unit_cost__gt": "0.25"}, ["Bearing", "Gear"]),
        ({"unit_cost__gte": 12.5}, ["Bearing", "Gear"]),
        ({"unit_cost__lt": 12.5}, ["Bolt"]),
        ({"unit_cost__lte": "12.50"}, ["Bearing", "Bolt"]),
        ({"unit_cost__range": ["0.25", 12.5]}, ["Bearing", "Bolt"]),
        ({"weight_kg__isnull": True}, ["Gear"]),
        ({"weight_kg__isnull": False}, ["Bearing", "Bolt"]),
        ({"weight_kg": None}, ["Gear"]),
        ({"weight_kg__gt": 0.1}, ["Bearing"]),
        ({"status": "draft"}, ["Gear"]),
        ({"status__in": ["active", "retired"]}, ["Bearing", "Bolt"]),
        ({"in_stock": False}, ["Gear"]),
        ({"in_stock": "true"}, ["Bearing", "Bolt"]),
        ({"released_on__lt": "2023-03-01"}, ["Bolt"]),
        ({"released_on__range": ["2023-01-01", "2023-12-31"]}, ["Bearing", "Bolt"]),
        ({"created_at__gte": "2024-02-20T12:30:00Z"}, ["Bearing", "Gear"]),
        ({"created_at__gt": "2024-02-20T13:30:00+01:00"}, ["Gear"]),
        ({"created_at__lt": "2024-02-01T00:00:00"}, ["Bolt"]),
        ({"name__icontains": "e", "in_stock": True}, ["Bearing"]),
    ],
)
def test_filters_by_field_and_lookup(
    catalog: Catalog, filters: dict[str, Any], expected: list[str]
) -> None:
    assert sorted(names(query(catalog, filters=filters))) == expected


def test_filters_by_id(catalog: Catalog) -> None:
    bolt, gear = catalog.id_of("PartManager", "Bolt"), catalog.id_of("PartManager", "Gear")
    assert names(query(catalog, filters={"id": bolt})) == ["Bolt"]
    assert sorted(names(query(catalog, filters={"id__in": [bolt, str(gear)]}))) == ["Bolt", "Gear"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"material__name": "Steel"}, ["Bolt"]),
        ({"material__name__in": ["Steel", "Cobalt"]}, ["Bolt", "Gear"]),
        ({"material__density__gt": 5}, ["Bolt", "Gear"]),
        ({"material__isnull": False}, ["Bearing", "Bolt", "Gear"]),
        ({"material__isnull": True}, []),
        ({"projects__name": "Apollo"}, ["Gear"]),
        ({"projects__isnull": True}, ["Bolt"]),
        ({"projects__isnull": False}, ["Bearing", "Gear"]),
        ({"projects__parts__material__name": "Cobalt"}, ["Gear"]),
    ],
)
def test_filters_through_relations(
    catalog: Catalog, filters: dict[str, Any], expected: list[str]
) -> None:
    assert sorted(names(query(catalog, filters=filters))) == expected


def test_relation_filters_compare_related_ids(catalog: Catalog) -> None:
    steel = catalog.id_of("MaterialManager", "Steel")
    cobalt = catalog.id_of("MaterialManager", "Cobalt")
    assert names(query(catalog, filters={"material": steel})) == ["Bolt"]
    assert sorted(names(query(catalog, filters={"material__in": [steel, cobalt]}))) == [
        "Bolt",
        "Gear",
    ]
    assert names(query(catalog, filters={"material__id": cobalt})) == ["Gear"]


def test_conditions_through_one_to_many_relation_hold_for_one_related_row(catalog: Catalog) -> None:
    apollo = catalog.call(
        "query",
        {
            "manager": "ProjectManager",
            "filters": {"parts__name": "Gear", "parts__material__name": "Cobalt"},
        },
    )
    assert names(apollo) == ["Apollo"]
    none = catalog.call(
        "query",
        {
            "manager": "ProjectManager",
            "filters": {"parts__name": "Gear", "parts__material__name": "Steel"},
        },
    )
    assert names(none) == []


def test_to_many_filters_do_not_duplicate_rows(catalog: Catalog) -> None:
    catalog.add_private_project("Gemini", catalog.actor, ["Gear"])
    result = catalog.call(
        "query",
        {"manager": "PartManager", "filters": {"projects__isnull": False}},
        actor=catalog.actor,
    )
    assert sorted(names(result)) == ["Bearing", "Gear"]
    assert result["total_count"] == 2


def test_order_by_ascending_descending_and_nulls_last(catalog: Catalog) -> None:
    assert names(query(catalog, order_by=["name"])) == ["Bearing", "Bolt", "Gear"]
    assert names(query(catalog, order_by=["-unit_cost"])) == ["Gear", "Bearing", "Bolt"]
    assert names(query(catalog, order_by=["weight_kg"])) == ["Bolt", "Bearing", "Gear"]
    assert names(query(catalog, order_by=["-weight_kg"])) == ["Bearing", "Bolt", "Gear"]
    assert names(query(catalog, order_by=["status", "-name"])) == ["Bolt", "Bearing", "Gear"]


def test_default_order_is_by_id(catalog: Catalog) -> None:
    ids = [row["id"] for row in query(catalog)["data"]]
    assert ids == sorted(ids)


def test_pages_with_limit_offset_total_and_has_more(catalog: Catalog) -> None:
    first = query(catalog, order_by=["name"], limit=2)
    assert names(first) == ["Bearing", "Bolt"]
    assert (first["total_count"], first["has_more"]) == (3, True)
    second = query(catalog, order_by=["name"], limit=2, offset=2)
    assert names(second) == ["Gear"]
    assert (second["total_count"], second["has_more"]) == (3, False)
    beyond = query(catalog, offset=10)
    assert (beyond["data"], beyond["total_count"], beyond["has_more"]) == ([], 3, False)


def test_limit_defaults_to_50_and_is_capped_by_max_results(catalog: Catalog) -> None:
    settings = ToolSettings(max_results=2)
    capped = catalog.call("query", {"manager": "PartManager"}, settings=settings)
    assert len(capped["data"]) == 2
    assert capped["has_more"] is True
    over = catalog.call("query", {"manager": "PartManager", "limit": 3}, settings=settings)
    assert over["status"] == "error"
    assert over["code"] == "limit_exceeded"
    assert "at most 2" in over["message"]
    assert query(catalog, limit=200)["total_count"] == 3
    assert query(catalog, limit=201)["code"] == "limit_exceeded"


def test_scope_of_the_queried_manager(catalog: Catalog) -> None:
    catalog.add_private_project("Gemini", catalog.actor, ["Bolt"])
    anonymous = catalog.call("query", {"manager": "ProjectManager"})
    owner = catalog.call("query", {"manager": "ProjectManager"}, actor=catalog.actor)
    other = catalog.call("query", {"manager": "ProjectManager"}, actor=catalog.other_actor)
    assert sorted(names(anonymous)) == ["Apollo", "Mercury"]
    assert sorted(names(owner)) == ["Apollo", "Gemini", "Mercury"]
    assert sorted(names(other)) == ["Apollo", "Mercury"]


def test_scope_of_related_managers_in_selections_and_filters(catalog: Catalog) -> None:
    catalog.add_private_project("Gemini", catalog.actor, ["Bolt", "Gear"])
    selection = {
        "manager": "PartManager",
        "fields": ["name", {"projects": ["name"]}],
        "order_by": ["name"],
    }
    hidden = catalog.call("query", selection)
    shown = catalog.call("query", selection, actor=catalog.actor)
    assert [[p["name"] for p in r["projects"]] for r in hidden["data"]] == [
        ["Mercury"],
        [],
        ["Apollo"],
    ]
    assert [[p["name"] for p in r["projects"]] for r in shown["data"]] == [
        ["Mercury"],
        ["Gemini"],
        ["Apollo", "Gemini"],
    ]
    through = {"manager": "PartManager", "filters": {"projects__name": "Gemini"}}
    assert names(catalog.call("query", through)) == []
    assert sorted(names(catalog.call("query", through, actor=catalog.actor))) == ["Bolt", "Gear"]


def test_hidden_relation_cannot_be_selected_or_filtered(catalog: Catalog) -> None:
    selected = query(catalog, fields=["supplier"])
    assert selected["code"] == "unknown_field"
    assert "supplier" not in selected["allowed"]
    assert "Supplier" not in str(selected)
    filtered = query(catalog, filters={"supplier__name": "Acme"})
    assert filtered["code"] == "unknown_filter"
    assert "Supplier" not in str(filtered).replace("'supplier'", "")
    assert catalog.call("query", {"manager": "SupplierManager"})["code"] == "unknown_manager"


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ({"manager": "PartManagr"}, "unknown_manager", "did you mean 'PartManager'"),
        ({"manager": "PartManager", "fields": ["nmae"]}, "unknown_field", "did you mean 'name'"),
        (
            {"manager": "PartManager", "fields": [{"materal": ["name"]}]},
            "unknown_field",
            "material",
        ),
        (
            {"manager": "PartManager", "fields": [{"material": ["densty"]}]},
            "unknown_field",
            "density",
        ),
        ({"manager": "PartManager", "fields": [3]}, "invalid_value", "field name"),
        ({"manager": "PartManager", "order_by": ["-nmae"]}, "unknown_field", "did you mean 'name'"),
        ({"manager": "PartManager", "order_by": ["material"]}, "unknown_field", "relations cannot"),
        (
            {"manager": "PartManager", "filters": {"nmae": "Bolt"}},
            "unknown_filter",
            "did you mean 'name'",
        ),
        ({"manager": "PartManager", "filters": {"quantity__gt": 1}}, "unknown_filter", "quantity"),
        ({"manager": "PartManager", "filters": {"name__gt": "B"}}, "unknown_filter", "icontains"),
        (
            {"manager": "PartManager", "filters": {"name__icontain": "B"}},
            "unknown_filter",
            "icontains",
        ),
        ({"manager": "PartManager", "filters": {"material__nmae": "x"}}, "unknown_filter", "name"),
        (
            {"manager": "PartManager", "filters": {"name__exact__in": "x"}},
            "unknown_filter",
            "lookups",
        ),
        (
            {"manager": "PartManager", "filters": {"unit_cost__gt": "cheap"}},
            "invalid_value",
            "decimal",
        ),
        ({"manager": "PartManager", "filters": {"status": "lost"}}, "invalid_value", "'draft'"),
        (
            {"manager": "PartManager", "filters": {"created_at__gt": "yesterday"}},
            "invalid_value",
            "ISO 8601",
        ),
        (
            {"manager": "PartManager", "filters": {"released_on": "2023-02-30"}},
            "invalid_value",
            "ISO date",
        ),
        (
            {"manager": "PartManager", "filters": {"in_stock": "maybe"}},
            "invalid_value",
            "true or false",
        ),
        ({"manager": "PartManager", "filters": {"name__in": []}}, "invalid_value", "list of 1"),
        ({"manager": "PartManager", "filters": {"name__in": "Bolt"}}, "invalid_value", "list of 1"),
        (
            {"manager": "PartManager", "filters": {"unit_cost__range": [1]}},
            "invalid_value",
            "two values",
        ),
        (
            {"manager": "PartManager", "filters": {"weight_kg__isnull": "x"}},
            "invalid_value",
            "true or false",
        ),
        (
            {"manager": "PartManager", "filters": {"name__contains": None}},
            "invalid_value",
            "isnull",
        ),
        ({"manager": "PartManager", "filters": {"name": 5}}, "invalid_value", "a string"),
        ({"manager": "PartManager", "filters": {"id": "abc"}}, "invalid_value", "integer"),
        ({"manager": "PartManager", "filters": {"quantity": 2**70}}, "unknown_filter", "quantity"),
        ({"manager": "PartManager", "filters": {"id": 2**70}}, "invalid_value", "integer"),
        ({"manager": "PartManager", "filters": {"name": "a\x00b"}}, "invalid_value", "string"),
        ({"manager": "PartManager", "filters": {"__": 1}}, "unknown_filter", "cannot be filtered"),
        ({"manager": "PartManager", "limit": 0}, "invalid_value", "at least 1"),
        ({"manager": "PartManager", "offset": -1}, "invalid_value", "at least 0"),
        ({"manager": "PartManager", "limit": "ten"}, "invalid_value", "integer"),
        ({"manager": "PartManager", "order_by": "name"}, "invalid_value", "a list"),
        ({"manager": "PartManager", "lmit": 5}, "invalid_value", "did you mean 'limit'"),
        ({}, "invalid_value", "needs 'manager'"),
    ],
)
def test_mistakes_are_error_results_with_a_code(
    catalog: Catalog, args: dict[str, Any], code: str, fragment: str
) -> None:
    result = catalog.call("query", args)
    assert result["status"] == "error", result
    assert result["code"] == code, result
    assert fragment in result["message"] + str(result.get("allowed", "")), result
