"""The aggregate tool, one suite for both backends: exact values, groups, scope, errors."""

from __future__ import annotations

from typing import Any

import pytest

from chatomon.chat.tools import ToolSettings
from tests.data.catalog import BACKENDS, Catalog, open_catalog


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest) -> Catalog:
    return open_catalog(request)


def aggregate(catalog: Catalog, manager: str = "PartManager", **args: Any) -> Any:
    return catalog.call("aggregate", {"manager": manager, **args})


def test_count_is_the_default_metric(catalog: Catalog) -> None:
    assert aggregate(catalog) == {
        "groups": [{"group": {}, "values": {"count": 3}}],
        "has_more": False,
    }


def test_decimal_sums_averages_minima_maxima_are_exact_strings(catalog: Catalog) -> None:
    metrics = [{"op": op, "field": "unit_cost"} for op in ("sum", "avg", "min", "max", "count")]
    (group,) = aggregate(catalog, metrics=metrics)["groups"]
    assert group["values"] == {
        "sum_unit_cost": "52.75",
        "avg_unit_cost": "17.583333",
        "min_unit_cost": "0.25",
        "max_unit_cost": "40.00",
        "count_unit_cost": 3,
    }


def test_integer_float_date_and_datetime_metrics(catalog: Catalog) -> None:
    metrics = [
        {"op": "sum", "field": "quantity"},
        {"op": "avg", "field": "quantity"},
        {"op": "avg", "field": "weight_kg"},
        {"op": "count", "field": "weight_kg"},
        {"op": "min", "field": "released_on"},
        {"op": "max", "field": "created_at"},
    ]
    (group,) = aggregate(catalog, metrics=metrics)["groups"]
    values = group["values"]
    assert values["sum_quantity"] == 540
    assert isinstance(values["sum_quantity"], int)
    assert values["avg_quantity"] == pytest.approx(180.0)
    assert values["avg_weight_kg"] == pytest.approx(0.105)
    assert values["count_weight_kg"] == 2
    assert values["min_released_on"] == "2023-01-15"
    assert values["max_created_at"] == "2024-03-05T16:45:00+00:00"


def test_group_by_own_field_sorted_by_key(catalog: Catalog) -> None:
    result = aggregate(
        catalog, group_by=["status"], metrics=[{"op": "count"}, {"op": "sum", "field": "unit_cost"}]
    )
    assert result == {
        "groups": [
            {"group": {"status": "active"}, "values": {"count": 2, "sum_unit_cost": "12.75"}},
            {"group": {"status": "draft"}, "values": {"count": 1, "sum_unit_cost": "40.00"}},
        ],
        "has_more": False,
    }


def test_group_by_relation_field_and_two_keys(catalog: Catalog) -> None:
    by_material = aggregate(catalog, group_by=["material__name"])
    assert [
        (g["group"]["material__name"], g["values"]["count"]) for g in by_material["groups"]
    ] == [
        ("Aluminum", 1),
        ("Cobalt", 1),
        ("Steel", 1),
    ]
    two = aggregate(catalog, group_by=["in_stock", "material__density"])
    assert [tuple(g["group"].values()) for g in two["groups"]] == [
        (False, pytest.approx(8.9)),
        (True, pytest.approx(2.7)),
        (True, pytest.approx(7.8)),
    ]


def test_empty_group_keys_sort_last(catalog: Catalog) -> None:
    result = aggregate(catalog, group_by=["weight_kg"])
    assert [g["group"]["weight_kg"] for g in result["groups"]] == [
        pytest.approx(0.01),
        pytest.approx(0.2),
        None,
    ]


def test_filters_narrow_the_rows(catalog: Catalog) -> None:
    result = aggregate(
        catalog, filters={"material__density__gt": 5}, metrics=[{"op": "sum", "field": "unit_cost"}]
    )
    assert result["groups"][0]["values"] == {"sum_unit_cost": "40.25"}
    nothing = aggregate(
        catalog,
        filters={"name": "Nope"},
        metrics=[
            {"op": "count"},
            {"op": "sum", "field": "unit_cost"},
            {"op": "avg", "field": "unit_cost"},
            {"op": "max", "field": "created_at"},
        ],
    )
    assert nothing["groups"] == [
        {
            "group": {},
            "values": {
                "count": 0,
                "sum_unit_cost": None,
                "avg_unit_cost": None,
                "max_created_at": None,
            },
        }
    ]
    assert aggregate(catalog, filters={"name": "Nope"}, group_by=["status"])["groups"] == []


def test_to_many_filters_do_not_count_a_row_twice(catalog: Catalog) -> None:
    catalog.add_private_project("Gemini", catalog.actor, ["Gear", "Bearing"])
    result = catalog.call(
        "aggregate",
        {
            "manager": "PartManager",
            "filters": {"projects__isnull": False},
            "metrics": [{"op": "count"}, {"op": "sum", "field": "unit_cost"}],
        },
        actor=catalog.actor,
    )
    assert result["groups"][0]["values"] == {"count": 2, "sum_unit_cost": "52.50"}


def test_scope_applies_to_aggregates_and_relation_group_keys(catalog: Catalog) -> None:
    catalog.add_private_project("Gemini", catalog.actor, ["Bolt"])
    assert aggregate(catalog, manager="ProjectManager")["groups"][0]["values"]["count"] == 2
    owner = catalog.call("aggregate", {"manager": "ProjectManager"}, actor=catalog.actor)
    assert owner["groups"][0]["values"]["count"] == 3


def test_groups_are_capped_by_max_results(catalog: Catalog) -> None:
    result = catalog.call(
        "aggregate",
        {"manager": "PartManager", "group_by": ["name"]},
        settings=ToolSettings(max_results=2),
    )
    assert [g["group"]["name"] for g in result["groups"]] == ["Bearing", "Bolt"]
    assert result["has_more"] is True


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ({"manager": "Nope"}, "unknown_manager", "no manager"),
        ({"metrics": [{"op": "median", "field": "unit_cost"}]}, "invalid_value", "median"),
        ({"metrics": [{"op": "sum"}]}, "invalid_value", "needs a field"),
        ({"metrics": [{"op": "sum", "field": "name"}]}, "invalid_value", "integer, decimal, float"),
        ({"metrics": [{"op": "min", "field": "in_stock"}]}, "invalid_value", "boolean"),
        ({"metrics": [{"op": "sum", "field": "cost"}]}, "unknown_field", "unit_cost"),
        ({"metrics": [{"op": "sum", "field": "unit_cost", "extra": 1}]}, "invalid_value", "extra"),
        ({"metrics": [{"field": "unit_cost"}]}, "invalid_value", "needs 'op'"),
        ({"group_by": ["colour"]}, "unknown_field", "has no field 'colour'"),
        ({"group_by": ["material"]}, "unknown_field", "material__name"),
        ({"group_by": ["material__colour"]}, "unknown_field", "MaterialManager"),
        ({"group_by": ["projects__name"]}, "invalid_value", "to-many"),
        ({"group_by": ["supplier__name"]}, "unknown_field", "has no relation"),
        ({"group_by": "status"}, "invalid_value", "a list"),
        ({"filters": {"nmae": "Bolt"}}, "unknown_filter", "name"),
        ({"group_by": ["status"] * 6}, "invalid_value", "at most 5"),
    ],
)
def test_mistakes_are_error_results(
    catalog: Catalog, args: dict[str, Any], code: str, fragment: str
) -> None:
    result = catalog.call("aggregate", {"manager": "PartManager", **args})
    assert result["status"] == "error", result
    assert result["code"] == code, result
    assert fragment in result["message"] + str(result.get("allowed", "")), result
    assert "Supplier" not in result["message"]
