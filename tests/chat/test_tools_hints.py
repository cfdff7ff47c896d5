"""Tool errors say what would work, and text filters forgive case: on both backends.

The mistakes are the ones small models make on the toy data: a relation compared with a
name, a related manager's field asked of the wrong manager, another query language's
lookup, a manager named in the plural, a name in the user's spelling.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.data.catalog import BACKENDS, Catalog, open_catalog


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest) -> Catalog:
    return open_catalog(request)


def names(result: dict[str, Any]) -> list[str]:
    assert "data" in result, result
    return sorted(row["name"] for row in result["data"])


def query(catalog: Catalog, manager: str = "PartManager", **args: Any) -> Any:
    return catalog.call("query", {"manager": manager, **args})


def copied_filter(message: str) -> dict[str, Any]:
    """The filter object a message offers to copy (its last `{...}`)."""
    start = message.rindex("{")
    value = json.loads(message[start:])
    assert isinstance(value, dict)
    return value


def test_a_relation_compared_with_a_name_gives_the_filter_on_its_label(catalog: Catalog) -> None:
    result = query(catalog, filters={"material": "Steel"})
    assert result["code"] == "invalid_value"
    assert "MaterialManager" in result["message"]
    offered = copied_filter(result["message"])
    assert offered == {"material__name": "Steel"}
    assert names(query(catalog, filters=offered)) == ["Bolt"]


def test_the_relation_hint_keeps_the_path_through_earlier_relations(catalog: Catalog) -> None:
    result = query(catalog, "ProjectManager", filters={"parts__material": "Cobalt"})
    offered = copied_filter(result["message"])
    assert offered == {"parts__material__name": "Cobalt"}
    assert names(query(catalog, "ProjectManager", filters=offered)) == ["Apollo"]


def test_a_relation_by_id_still_works_and_isnull_errors_stay_as_they_were(
    catalog: Catalog,
) -> None:
    steel = catalog.id_of("MaterialManager", "Steel")
    assert names(query(catalog, filters={"material": steel})) == ["Bolt"]
    wrong = query(catalog, filters={"material__isnull": "perhaps"})
    assert wrong["code"] == "invalid_value"
    assert "true or false" in wrong["message"]


def test_a_misspelled_relation_suggests_it_with_a_filter_on_its_label(catalog: Catalog) -> None:
    result = query(catalog, "ProjectManager", filters={"part": "Gear"})
    assert result["code"] == "unknown_filter"
    assert "did you mean 'parts'" in result["message"]
    offered = copied_filter(result["message"])
    assert offered == {"parts__name": "Gear"}
    assert names(query(catalog, "ProjectManager", filters=offered)) == ["Apollo"]


def test_a_misspelled_field_keeps_the_lookup_in_the_example(catalog: Catalog) -> None:
    result = query(catalog, filters={"nmae__icontains": "bea"})
    assert result["code"] == "unknown_filter"
    assert copied_filter(result["message"]) == {"name__icontains": "bea"}


def test_a_field_of_a_related_manager_is_offered_through_the_relation(catalog: Catalog) -> None:
    result = query(catalog, filters={"density__gt": 8})
    assert result["code"] == "unknown_filter"
    assert "MaterialManager" in result["message"]
    offered = copied_filter(result["message"])
    assert offered == {"material__density__gt": 8}
    assert names(query(catalog, filters=offered)) == ["Gear"]


def test_an_invented_field_lists_what_can_be_filtered(catalog: Catalog) -> None:
    result = query(catalog, filters={"colour": "red"})
    assert result["code"] == "unknown_filter"
    assert "filterable: id, name" in result["message"]
    assert "name" in result["allowed"]


def test_a_lookup_of_another_language_names_the_one_that_does_it(catalog: Catalog) -> None:
    result = query(catalog, filters={"name__like": "bea"})
    assert result["code"] == "unknown_filter"
    assert "use icontains" in result["message"]
    offered = copied_filter(result["message"])
    assert offered == {"name__icontains": "bea"}
    assert names(query(catalog, filters=offered)) == ["Bearing"]


def test_selecting_a_related_managers_field_shows_the_nested_selection(catalog: Catalog) -> None:
    result = query(catalog, fields=["name", "density"])
    assert result["code"] == "unknown_field"
    offered = json.loads(result["message"].rsplit("select ", 1)[1])
    assert offered == {"material": ["density"]}
    rows = query(catalog, fields=["name", offered], filters={"name": "Gear"})["data"]
    assert rows[0]["material"]["density"] == pytest.approx(8.9)


def test_an_invented_selected_field_lists_the_fields(catalog: Catalog) -> None:
    result = query(catalog, fields=["colour"])
    assert result["code"] == "unknown_field"
    assert "its fields and relations: id, name" in result["message"]


def test_an_unknown_manager_names_the_nearest_by_words(catalog: Catalog) -> None:
    result = query(catalog, "Parts")
    assert result["code"] == "unknown_manager"
    assert "the nearest: PartManager" in result["message"]
    assert "search_managers" in result["message"]


def test_a_group_by_relation_names_its_label_field() -> None:
    from chatomon.chat.tools import Toolset  # noqa: PLC0415 - toy registry only here
    from chatomon.data.fixtures import toy_registry  # noqa: PLC0415

    toolset = Toolset(toy_registry())
    result = toolset.call_sync(
        "aggregate", {"manager": "PartManager", "group_by": ["material"]}, toolset.context()
    )
    assert result["code"] == "unknown_field"
    assert "'material__name'" in result["message"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"name": "bolt"}, ["Bolt"]),
        ({"name__exact": "BEARING"}, ["Bearing"]),
        ({"material__name": "steel"}, ["Bolt"]),
        ({"name__in": ["bolt"]}, []),  # in keeps its case
    ],
)
def test_an_exact_text_match_ignores_case(
    catalog: Catalog, filters: dict[str, Any], expected: list[str]
) -> None:
    assert names(query(catalog, filters=filters)) == expected


def test_an_exact_match_through_two_relations_ignores_case(catalog: Catalog) -> None:
    found = query(catalog, "ProjectManager", filters={"parts__material__name": "cobalt"})
    assert names(found) == ["Apollo"]
    assert "hint" not in found


def test_an_empty_text_read_suggests_icontains_with_a_distinctive_word(catalog: Catalog) -> None:
    result = query(catalog, "ProjectManager", filters={"name": "Apollo project"})
    assert result["total_count"] == 0
    assert "there is none" in result["hint"]
    offered = copied_filter(result["hint"].split(". If", 1)[1].split("; otherwise")[0])
    assert offered == {"name__icontains": "Apollo"}
    assert names(query(catalog, "ProjectManager", filters=offered)) == ["Apollo"]


def test_an_empty_read_through_relations_keeps_the_path_in_the_hint(catalog: Catalog) -> None:
    result = query(catalog, filters={"material__name__contains": "Steel alloy"})
    assert result["total_count"] == 0
    assert '{"material__name__icontains": "Steel"}' in result["hint"]


@pytest.mark.parametrize(
    "filters",
    [
        {"name": "Bolt"},  # something matched
        {"unit_cost__gt": 1000},  # nothing matched, but no text filter narrowed it
        {"name__icontains": "zzz"},  # already the forgiving lookup
    ],
)
def test_no_hint_without_an_empty_text_match(catalog: Catalog, filters: dict[str, Any]) -> None:
    assert "hint" not in query(catalog, filters=filters)


def test_an_empty_aggregate_over_a_text_filter_has_the_hint(catalog: Catalog) -> None:
    args = {"manager": "PartManager", "filters": {"name__startswith": "Bolts"}}
    empty = catalog.call("aggregate", args)
    assert empty["groups"][0]["values"]["count"] == 0
    assert '{"name__icontains": "Bolts"}' in empty["hint"]
    counted = catalog.call("aggregate", {**args, "filters": {"name__startswith": "Bo"}})
    assert counted["groups"][0]["values"]["count"] == 1
    assert "hint" not in counted


def test_a_relation_that_only_leads_the_other_way_says_where_to_start(catalog: Catalog) -> None:
    result = query(catalog, filters={"project_id": 1})
    assert result["code"] == "unknown_filter"
    assert "ProjectManager.projects" not in result["message"]
    message = result["message"]
    assert "query ProjectManager with fields" in message or "did you mean 'projects'" in message


def test_the_reverse_hint_gives_the_selection_to_copy() -> None:
    from chatomon.chat.tools import Toolset  # noqa: PLC0415 - toy registry only here
    from chatomon.data.fixtures import toy_registry  # noqa: PLC0415

    toolset = Toolset(toy_registry())
    result = toolset.call_sync(
        "query", {"manager": "PartManager", "filters": {"project_id": 1}}, toolset.context()
    )
    assert 'query ProjectManager with fields [{"parts": ["name"]}]' in result["message"]
    rows = toolset.call_sync(
        "query",
        {"manager": "ProjectManager", "filters": {"id": 1}, "fields": [{"parts": ["name"]}]},
        toolset.context(),
    )["data"]
    assert rows[0]["parts"] == [{"id": 3, "name": "Gear"}]


@pytest.mark.parametrize(
    ("manager", "filters", "offered", "found"),
    [
        ("ProjectManager", {"project_id": "Apollo"}, {"name": "Apollo"}, ["Apollo"]),
        (
            "ProjectManager",
            {"partMaterial": "cobalt"},
            {"parts__material__name": "cobalt"},
            ["Apollo"],
        ),
    ],
)
def test_a_filter_naming_a_reachable_manager_gives_the_path_to_its_label(
    manager: str, filters: dict[str, Any], offered: dict[str, Any], found: list[str]
) -> None:
    from chatomon.chat.tools import Toolset  # noqa: PLC0415 - toy registry only here
    from chatomon.data.fixtures import toy_registry  # noqa: PLC0415

    toolset = Toolset(toy_registry())
    result = toolset.call_sync("query", {"manager": manager, "filters": filters}, toolset.context())
    assert result["code"] == "unknown_filter"
    assert copied_filter(result["message"]) == offered
    again = toolset.call_sync("query", {"manager": manager, "filters": offered}, toolset.context())
    assert names(again) == found


@pytest.mark.parametrize(
    ("filters", "offered", "found"),
    [
        ({"denser_than": 5}, {"density__gt": 5}, ["Cobalt", "Steel"]),
        ({"lighter_than": 5}, {"density__lt": 5}, ["Aluminum"]),
    ],
)
def test_a_comparative_filter_name_offers_the_comparison(
    catalog: Catalog, filters: dict[str, Any], offered: dict[str, Any], found: list[str]
) -> None:
    result = query(catalog, "MaterialManager", filters=filters)
    assert result["code"] == "unknown_filter"
    assert copied_filter(result["message"]) == offered
    assert names(query(catalog, "MaterialManager", filters=offered)) == found


def test_a_misspelled_relation_in_a_longer_path_keeps_the_rest_of_the_path(
    catalog: Catalog,
) -> None:
    key = "part__material__name"
    result = query(catalog, "ProjectManager", filters={key: "cobalt"})
    assert result["message"].startswith(f"{key}: ")
    offered = copied_filter(result["message"])
    assert offered == {"parts__material__name": "cobalt"}
    assert names(query(catalog, "ProjectManager", filters=offered)) == ["Apollo"]


# Selections a model writes as if they were stored, and operators written as values --------


def offered_json(message: str, after: str) -> Any:
    """The JSON a message offers after `after`."""
    return json.loads(message.rsplit(after, 1)[1])


@pytest.mark.parametrize(
    ("manager", "selected", "expected"),
    [
        ("PartManager", "count", {"manager": "PartManager", "metrics": [{"op": "count"}]}),
        (  # only parts lead to materials: parts grouped by the way back
            "MaterialManager",
            "parts__count",
            {
                "manager": "PartManager",
                "group_by": ["material__name"],
                "metrics": [{"op": "count"}],
            },
        ),
        (  # the rows a word names, as a relation would
            "MaterialManager",
            "part_count",
            {
                "manager": "PartManager",
                "group_by": ["material__name"],
                "metrics": [{"op": "count"}],
            },
        ),
        (
            "MaterialManager",
            "average",
            {"manager": "MaterialManager", "metrics": [{"op": "avg", "field": "density"}]},
        ),
    ],
)
def test_a_count_selected_as_a_field_gives_the_aggregate_call(
    catalog: Catalog, manager: str, selected: str, expected: dict[str, Any]
) -> None:
    result = query(catalog, manager, fields=["name", selected])
    assert result["code"] == "unknown_field"
    offered = offered_json(result["message"], "aggregate tool, ")
    assert offered == expected
    assert catalog.call("aggregate", offered)["groups"], offered


def test_total_count_selected_is_a_count(catalog: Catalog) -> None:
    result = query(catalog, "MaterialManager", fields=["name", "total_count"])
    offered = offered_json(result["message"], "aggregate tool, ")
    assert offered == {"manager": "MaterialManager", "metrics": [{"op": "count"}]}


@pytest.mark.parametrize("selected", ["total_weight", "part_number"])
def test_a_total_of_no_known_field_is_no_aggregate_guess(catalog: Catalog, selected: str) -> None:
    result = query(catalog, "ProjectManager", fields=["name", selected])
    assert result["code"] == "unknown_field"
    assert "aggregate" not in result["message"]


@pytest.mark.parametrize(
    ("selected", "path"),
    [("density", "parts__material__density"), ("material__name", "parts__material__name")],
)
def test_a_field_two_relations_away_gives_the_path_to_select(
    catalog: Catalog, selected: str, path: str
) -> None:
    result = query(catalog, "ProjectManager", fields=["name", selected])
    assert result["code"] == "unknown_field"
    assert offered_json(result["message"], "select ") == path
    rows = query(catalog, "ProjectManager", fields=["name", path], filters={"name": "Mercury"})
    (material,) = [part["material"] for part in rows["data"][0]["parts"]]
    assert path.rpartition("__")[2] in material  # the path selects the field asked for


def test_an_operator_given_as_a_value_names_the_key_that_compares(catalog: Catalog) -> None:
    result = query(catalog, "MaterialManager", filters={"density": "gt"})
    assert result["code"] == "invalid_value"
    assert result["message"].endswith('"density__gt"')
    assert names(query(catalog, "MaterialManager", filters={"density__gt": 5})) == [
        "Cobalt",
        "Steel",
    ]


def test_the_highest_given_as_a_value_offers_the_ordering(catalog: Catalog) -> None:
    result = query(catalog, "MaterialManager", filters={"density": "max"})
    assert result["code"] == "invalid_value"
    assert 'query this manager with "order_by": ["-density"], "limit": 1' in result["message"]
    ordered = query(catalog, "MaterialManager", order_by=["-density"], limit=1)
    assert names(ordered) == ["Cobalt"]
    through = query(catalog, "ProjectManager", filters={"parts__material__density": "lowest"})
    assert 'the manager that holds it with "order_by": ["density"]' in through["message"]
    # A key that names its lookup says nothing more: the value is the only mistake.
    plain = query(catalog, "MaterialManager", filters={"density__gt": "max"})
    assert plain["message"].endswith("use a number")


def test_a_name_that_belongs_to_another_manager_points_there(catalog: Catalog) -> None:
    result = query(catalog, "MaterialManager", filters={"name": "gear"})
    assert result["data"] == [] and "a PartManager row is named so" in result["hint"]
    assert result["found_in"] == "PartManager"  # a local model must make that call
    offered = copied_filter(result["hint"])
    assert offered == {"name__iexact": "gear"}
    assert names(query(catalog, "PartManager", filters=offered)) == ["Gear"]
    # A name no manager holds keeps the hint to try another spelling.
    nowhere = query(catalog, "MaterialManager", filters={"name": "Titanium"})
    assert "name__icontains" in nowhere["hint"] and "found_in" not in nowhere


def test_fields_asked_of_the_wrong_manager_are_selected_through_the_relation(
    catalog: Catalog,
) -> None:
    # "What is the gear made of?" read as a material: the gear is a part, and its
    # material's name and density are one to-one relation away.
    result = query(catalog, "MaterialManager", filters={"name": "gear"}, fields=["density"])
    hint = result["hint"]
    assert hint.endswith(' and fields ["name", {"material": ["name", "density"]}]')
    filters = json.loads(hint[hint.index("{") : hint.index(" and fields")])
    fields = json.loads(hint[hint.index(" and fields ") + len(" and fields ") :])
    (row,) = query(catalog, "PartManager", filters=filters, fields=fields)["data"]
    assert (row["material"]["name"], row["material"]["density"]) == ("Cobalt", 8.9)
    # No to-one relation leads back (projects hold many parts): the filter alone.
    projects = query(catalog, "PartManager", filters={"name": "Apollo"}, fields=["name"])
    assert "ProjectManager" in projects["hint"] and "and fields" not in projects["hint"]


def test_a_name_filtered_through_a_relation_may_name_the_queried_manager(
    catalog: Catalog,
) -> None:
    result = query(catalog, "ProjectManager", filters={"parts__name": "Apollo"})
    assert "a ProjectManager row is named so: filter on" in result["hint"]
    offered = copied_filter(result["hint"])
    assert names(query(catalog, "ProjectManager", filters=offered)) == ["Apollo"]


@pytest.mark.parametrize("operator", ["gt", "$gt", ">", "greater"])
def test_an_operator_object_as_the_value_gives_the_key_that_compares(
    catalog: Catalog, operator: str
) -> None:
    result = query(catalog, "MaterialManager", filters={"density": {operator: 5}})
    assert result["code"] == "invalid_value"
    offered = copied_filter(result["message"])
    assert offered == {"density__gt": 5}
    assert names(query(catalog, "MaterialManager", filters=offered)) == ["Cobalt", "Steel"]


def test_the_name_lookups_skip_a_manager_that_refuses_and_sensitive_labels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chatomon.chat.tools import Toolset  # noqa: PLC0415 - toy registry only here
    from chatomon.data.errors import PermissionDeniedError  # noqa: PLC0415
    from chatomon.data.fixtures import toy_registry  # noqa: PLC0415
    from chatomon.redaction import SENSITIVE_KEYS, Redaction  # noqa: PLC0415

    toolset = Toolset(toy_registry())
    parts = toolset.registry.schema_index().managers["PartManager"]

    read = parts.backend.run_query  # the records backend serves every toy manager

    def refused(spec: Any, *args: Any) -> Any:
        if spec.schema.name == "PartManager":
            raise PermissionDeniedError("staff only")
        return read(spec, *args)

    args = {"manager": "MaterialManager", "filters": {"name": "gear"}}
    monkeypatch.setattr(parts.backend, "run_query", refused)
    result = toolset.call_sync("query", args, toolset.context())
    assert result["data"] == [] and "name__icontains" in result["hint"]  # the usual hint
    monkeypatch.undo()

    # A label field the redaction rule keeps (here: every `name`) is never looked up.
    hidden = Toolset(toy_registry(), redaction=Redaction((*SENSITIVE_KEYS, "name")))
    result = hidden.call_sync("query", args, hidden.context())
    assert "PartManager" not in result["hint"]
    assert "PartManager" in toolset.call_sync("query", args, toolset.context())["hint"]
