"""The mutate tool and execute_mutation, one suite for both backends."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from chatomon.chat.tools import ToolSettings, execute_mutation
from chatomon.chat.tools.toolset import Toolset
from chatomon.data import SimpleActor, aexecute_mutation
from tests.data.catalog import BACKENDS, Catalog, open_catalog

ALL = ("createPart", "updatePartCost", "assignPartToProject")


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest) -> Catalog:
    return open_catalog(request)


def mutate(catalog: Catalog, name: str, data: Any, *, actor: Any = "owner", **settings: Any) -> Any:
    settings.setdefault("allowed_mutations", ALL)
    who = catalog.actor if actor == "owner" else actor
    return catalog.call(
        "mutate", {"mutation": name, "input": data}, actor=who, settings=ToolSettings(**settings)
    )


def test_mutate_is_offered_only_when_a_mutation_is_allowed(catalog: Catalog) -> None:
    closed = catalog.toolset(ToolSettings())
    assert "mutate" not in [d.name for d in closed.definitions]
    assert closed.is_mutation("mutate") is True
    assert closed.is_mutation("query") is False
    assert catalog.call("mutate", {"mutation": "createPart", "input": {}})["code"] == "unknown_tool"
    opened = catalog.toolset(ToolSettings(allowed_mutations=["createPart"]))
    (definition,) = [d for d in opened.definitions if d.name == "mutate"]
    assert (
        "createPart(name: string, material_id?: integer, unit_cost?: number|string)"
        in definition.description
    )
    assert "updatePartCost" not in definition.description


def test_an_allowed_mutation_runs_and_returns_the_object(catalog: Catalog) -> None:
    steel = catalog.id_of("MaterialManager", "Steel")
    result = mutate(
        catalog, "createPart", {"name": "Nut", "material_id": steel, "unit_cost": "0.10"}
    )
    assert result["status"] == "executed"
    assert result["mutation"] == "createPart"
    created = result["result"]
    assert created["name"] == "Nut"
    assert created["unit_cost"] == "0.10"
    assert set(created) == {
        "id",
        "name",
        "unit_cost",
        "weight_kg",
        "status",
        "in_stock",
        "released_on",
        "created_at",
        "quantity",
    }
    stored = catalog.stored_part("Nut")
    assert stored["id"] == created["id"]
    assert stored["material"] == steel
    found = catalog.call("query", {"manager": "PartManager", "filters": {"name": "Nut"}})
    assert found["total_count"] == 1


def test_update_runs_and_changes_the_stored_value(catalog: Catalog) -> None:
    bolt = catalog.id_of("PartManager", "Bolt")
    result = mutate(catalog, "updatePartCost", {"part_id": bolt, "unit_cost": 0.3})
    assert result["status"] == "executed"
    assert result["result"]["unit_cost"] == "0.30"
    assert catalog.stored_part("Bolt")["unit_cost"] == Decimal("0.30")


@pytest.mark.parametrize(
    ("name", "allowed", "hint"),
    [
        ("createPrt", ALL, "did you mean 'createPart'"),
        ("updatePartCost", ("createPart",), None),
        ("updatePartCst", ("createPart",), None),
        ("dropTables", ALL, None),
    ],
)
def test_names_outside_allowed_mutations_are_refused(
    catalog: Catalog, name: str, allowed: tuple[str, ...], hint: str | None
) -> None:
    result = mutate(catalog, name, {}, allowed_mutations=allowed)
    assert result["status"] == "error"
    assert result["code"] == "mutation_not_allowed"
    assert result["allowed"] == list(allowed)
    if hint:
        assert hint in result["message"]
    else:
        assert "did you mean" not in result["message"]
    assert (
        "updatePartCost" not in str(result)
        or "updatePartCost" in allowed
        or name == "updatePartCost"
    )


@pytest.mark.parametrize("actor", [None, SimpleActor(id=None, is_authenticated=False), object()])
def test_mutations_need_an_authenticated_actor(catalog: Catalog, actor: Any) -> None:
    result = mutate(catalog, "createPart", {"name": "Nut"}, actor=actor)
    assert result["code"] == "not_authenticated"
    assert "log in" in result["message"]
    assert (
        catalog.call("query", {"manager": "PartManager", "filters": {"name": "Nut"}})["total_count"]
        == 0
    )


def test_invalid_input_lists_errors_per_field(catalog: Catalog) -> None:
    result = mutate(catalog, "updatePartCost", {"unit_cost": "-1"})
    assert result["code"] == "invalid_input"
    assert {e["field"] for e in result["errors"]} == {"part_id", "unit_cost"}
    assert "updatePartCost(part_id: integer, unit_cost: number|string)" in result["message"]
    not_object = catalog.call(
        "mutate",
        {"mutation": "createPart", "input": "Nut"},
        actor=catalog.actor,
        settings=ToolSettings(allowed_mutations=ALL),
    )
    assert not_object["code"] == "invalid_value"


def test_confirm_mutations_stage_an_update_with_a_preview(catalog: Catalog) -> None:
    bearing = catalog.id_of("PartManager", "Bearing")
    result = mutate(
        catalog,
        "updatePartCost",
        {"part_id": bearing, "unit_cost": "13.5"},
        confirm_mutations=["updatePartCost"],
    )
    assert result == {
        "status": "confirmation_required",
        "mutation": "updatePartCost",
        "input": {"part_id": bearing, "unit_cost": "13.5"},
        "preview": {
            "action": "update",
            "manager": "PartManager",
            "id": bearing,
            "changes": [{"field": "unit_cost", "before": "12.50", "after": "13.50"}],
        },
        "approver": "client",
    }
    assert catalog.stored_part("Bearing")["unit_cost"] == Decimal("12.50")


def test_staff_approval_mutations_stage_a_create_with_its_values(catalog: Catalog) -> None:
    result = mutate(catalog, "createPart", {"name": "Nut"}, staff_approval_mutations=["createPart"])
    assert result["status"] == "confirmation_required"
    assert result["approver"] == "staff"
    assert result["preview"] == {
        "action": "create",
        "values": {"name": "Nut", "material_id": None, "unit_cost": "0.00"},
        "manager": "PartManager",
    }
    assert (
        catalog.call("query", {"manager": "PartManager", "filters": {"name": "Nut"}})["total_count"]
        == 0
    )


def test_a_custom_preview(catalog: Catalog) -> None:
    bolt, apollo = catalog.id_of("PartManager", "Bolt"), catalog.id_of("ProjectManager", "Apollo")
    result = mutate(
        catalog,
        "assignPartToProject",
        {"part_id": bolt, "project_id": apollo},
        confirm_mutations=["assignPartToProject"],
    )
    assert result["preview"] == {"action": "assign", "part": "Bolt", "project": "Apollo"}
    assert catalog.project_parts("Apollo") == ["Gear"]


def test_the_update_preview_needs_an_object_the_actor_can_see(catalog: Catalog) -> None:
    result = mutate(
        catalog,
        "updatePartCost",
        {"part_id": 999999, "unit_cost": "1"},
        confirm_mutations=["updatePartCost"],
    )
    assert result["code"] == "invalid_input"
    assert "no object with id 999999" in result["message"]


def test_no_argument_lets_the_model_confirm_its_own_mutation(catalog: Catalog) -> None:
    bearing = catalog.id_of("PartManager", "Bearing")
    settings = ToolSettings(allowed_mutations=ALL, confirm_mutations=["updatePartCost"])
    (definition,) = [d for d in catalog.toolset(settings).definitions if d.name == "mutate"]
    assert set(definition.parameters["properties"]) == {"mutation", "input"}
    for extra in ({"confirmed": True}, {"approved": True, "confirmation_id": "x"}):
        result = catalog.call(
            "mutate",
            {
                "mutation": "updatePartCost",
                "input": {"part_id": bearing, "unit_cost": "1"},
                **extra,
            },
            actor=catalog.actor,
            settings=settings,
        )
        assert result["code"] == "invalid_value"
    staged = catalog.call(
        "mutate",
        {
            "mutation": "updatePartCost",
            "input": {"part_id": bearing, "unit_cost": "1", "confirmed": True},
        },
        actor=catalog.actor,
        settings=settings,
    )
    assert staged["status"] == "confirmation_required"
    assert catalog.stored_part("Bearing")["unit_cost"] == Decimal("12.50")


def test_execute_mutation_runs_an_approved_mutation(catalog: Catalog) -> None:
    bearing = catalog.id_of("PartManager", "Bearing")
    staged = mutate(
        catalog,
        "updatePartCost",
        {"part_id": bearing, "unit_cost": "13.5"},
        confirm_mutations=["updatePartCost"],
    )
    result = execute_mutation(catalog.registry, staged["mutation"], staged["input"], catalog.actor)
    assert result["status"] == "executed"
    assert result["result"]["unit_cost"] == "13.50"
    assert catalog.stored_part("Bearing")["unit_cost"] == Decimal("13.50")


def test_execute_mutation_checks_actor_input_and_name_again(catalog: Catalog) -> None:
    registry = catalog.registry
    assert (
        execute_mutation(registry, "createPart", {"name": "Nut"}, None)["code"]
        == "not_authenticated"
    )
    assert (
        execute_mutation(registry, "createPart", {"name": ""}, catalog.actor)["code"]
        == "invalid_input"
    )
    unknown = execute_mutation(registry, "createPrt", {}, catalog.actor)
    assert unknown["code"] == "mutation_not_allowed"
    by_mapping = execute_mutation(
        dict(registry.mutations), "createPart", {"name": "Nut"}, catalog.actor
    )
    assert by_mapping["status"] == "executed"
    assert by_mapping["result"]["id"] == catalog.stored_part("Nut")["id"]


def test_aexecute_mutation_runs_in_a_worker_thread(catalog: Catalog) -> None:
    result = async_to_sync(aexecute_mutation)(
        list(catalog.registry.mutations.values()), "createPart", {"name": "Washer"}, catalog.actor
    )
    assert result["status"] == "executed"
    assert catalog.stored_part("Washer")["name"] == "Washer"


def test_permission_denied_raised_by_a_mutation_is_a_result(catalog: Catalog) -> None:
    private = catalog.add_private_project("Gemini", catalog.actor, [])
    bolt = catalog.id_of("PartManager", "Bolt")
    refused = mutate(
        catalog,
        "assignPartToProject",
        {"part_id": bolt, "project_id": private},
        actor=catalog.other_actor,
    )
    assert refused["code"] == "permission_denied"
    done = mutate(catalog, "assignPartToProject", {"part_id": bolt, "project_id": private})
    assert done["status"] == "executed"
    assert catalog.project_parts("Gemini") == ["Bolt"]


def test_mutations_are_audited_with_labels_only(catalog: Catalog) -> None:
    events: list[tuple[str, Any]] = []
    settings = ToolSettings(allowed_mutations=ALL, confirm_mutations=["updatePartCost"])
    toolset = Toolset(catalog.registry, settings)
    context = toolset.context(
        catalog.actor, audit=lambda kind, payload: events.append((kind, payload))
    )
    call = async_to_sync(toolset.call)
    call("mutate", {"mutation": "createPart", "input": {"name": "Nut"}}, context)
    bolt = catalog.id_of("PartManager", "Bolt")
    call(
        "mutate",
        {"mutation": "updatePartCost", "input": {"part_id": bolt, "unit_cost": "2"}},
        context,
    )
    call("mutate", {"mutation": "nope", "input": {}}, context)
    assert [kind for kind, _ in events] == [
        "mutation_executed",
        "tool_called",
        "mutation_confirmation_required",
        "tool_called",
        "tool_called",
    ]
    assert events[0][1] == {"mutation": "createPart", "status": "executed"}
    assert events[2][1] == {"mutation": "updatePartCost", "approver": "client"}
    assert events[4][1]["code"] == "mutation_not_allowed"
    assert "Nut" not in str(events)
