"""Fuzzing the read tools: any JSON arguments give a result or a tool error, never a raise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatomon.chat.tools import ERROR_CODES, Toolset, ToolSettings
from tests.data.catalog import django_catalog, django_mark, records_catalog

NAMES = [
    "id",
    "name",
    "unit_cost",
    "weight_kg",
    "status",
    "in_stock",
    "released_on",
    "created_at",
    "quantity",
    "material",
    "projects",
    "supplier",
    "parts",
    "density",
    "is_public",
    "nmae",
    "",
]
LOOKUPS = [
    "",
    "exact",
    "iexact",
    "contains",
    "icontains",
    "startswith",
    "in",
    "gt",
    "gte",
    "lt",
    "lte",
    "range",
    "isnull",
    "regex",
    "x",
]
MANAGERS = ["PartManager", "MaterialManager", "ProjectManager", "SupplierManager", "Nope"]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(
        ["2024-01-10", "2024-01-10T08:00:00Z", "12.50", "active", "true", "1e999", "NaN"]
    )
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
filter_keys = st.builds(
    lambda parts, lookup: "__".join([*parts, lookup] if lookup else parts),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
    st.sampled_from(LOOKUPS),
) | st.text(max_size=10)
field_items = st.recursive(
    st.sampled_from(NAMES) | json_values,
    lambda inner: st.dictionaries(st.sampled_from(NAMES), st.lists(inner, max_size=3), max_size=2),
    max_leaves=6,
)
query_arguments = st.fixed_dictionaries(
    {},
    optional={
        "manager": st.sampled_from(MANAGERS) | json_values,
        "filters": st.dictionaries(filter_keys, json_values, max_size=4) | json_values,
        "fields": st.lists(field_items, max_size=4) | json_values,
        "order_by": st.lists(st.sampled_from([*NAMES, "-name", "-unit_cost", "-"]), max_size=3)
        | json_values,
        "limit": st.integers(min_value=-5, max_value=300) | json_values,
        "offset": st.integers(min_value=-5, max_value=2**70) | json_values,
        "group_by": st.lists(filter_keys, max_size=3) | json_values,
        "metrics": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "op": st.sampled_from(["count", "sum", "avg", "min", "max", "x"]),
                    "field": st.sampled_from(NAMES) | json_values,
                },
            ),
            max_size=3,
        )
        | json_values,
        "junk": json_values,
    },
)


def check(result: Any) -> None:
    json.dumps(result)
    assert isinstance(result, dict)
    if result.get("status") == "error":
        assert result["code"] in ERROR_CODES
        assert isinstance(result["message"], str)
        assert result["message"]


RECORDS = Toolset(records_catalog().registry, ToolSettings(tool_strategy="direct"))


@settings(max_examples=400, deadline=None)
@given(tool=st.sampled_from(["query", "aggregate", "query_part_manager"]), args=query_arguments)
def test_records_read_tools_never_raise(tool: str, args: dict[str, Any]) -> None:
    check(RECORDS.call_sync(tool, args, RECORDS.context()))


@settings(max_examples=200, deadline=None)
@given(args=json_values)
def test_any_json_as_the_whole_arguments_is_a_result(args: Any) -> None:
    for tool in ("query", "aggregate", "search_managers", "get_manager_schema", "find_path"):
        check(RECORDS.call_sync(tool, args, RECORDS.context()))


@django_mark()
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tool=st.sampled_from(["query", "aggregate"]), args=query_arguments)
def test_django_read_tools_never_raise(db: Any, tool: str, args: dict[str, Any]) -> None:
    toolset = Toolset(django_catalog_registry(), ToolSettings())
    check(toolset.call_sync(tool, args, toolset.context()))


_DJANGO: dict[str, Any] = {}


def django_catalog_registry() -> Any:
    # One catalog per test run: its rows live in the test transaction of the first example,
    # and the registry only reads them.
    if "registry" not in _DJANGO:
        _DJANGO["registry"] = django_catalog().registry
    return _DJANGO["registry"]


@pytest.fixture(autouse=True)
def _fresh_django_catalog() -> Any:
    _DJANGO.clear()
    yield
    _DJANGO.clear()
