"""The demo's three mutations and their previews, run in a demo process on seeded data."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.demo.process import manage

# Runs inside `manage shell`: prints one JSON object with what the test checks.
SCRIPT = """
import json
from django.contrib.auth.models import User
from chatomon.data import autodiscover, execute_mutation
from chatomon.data.mutation_runs import preview_mutation, unchanged_reason
from chatomon.demo.models import Part, Project

registry = autodiscover()
registry.validate()
owner = User.objects.create(username="owner")
other = User.objects.create(username="other")
private = Project.objects.filter(is_public=False).first()
private.owner = owner
private.save()
public = Project.objects.filter(is_public=True).exclude(parts__number="P-1002").first()
part = Part.objects.get(number="P-1002")

def preview(name, data, actor):
    definition = registry.mutations[name]
    return preview_mutation(
        registry.schema_index(), definition, definition.input.model_validate(data), actor
    )

out = {
    "managers": sorted(registry.managers),
    "mutations": sorted(registry.mutations),
    "cost_preview": preview("updatePartCost", {"part_id": part.pk, "unit_cost": "14.50"}, owner),
    "cost_before": str(part.unit_cost),
    "cost": execute_mutation(
        registry, "updatePartCost", {"part_id": part.pk, "unit_cost": "14.50"}, owner
    ),
    "cost_after": str(Part.objects.get(pk=part.pk).unit_cost),
    "assign_preview": preview(
        "assignPartToProject", {"part_id": part.pk, "project_id": public.pk}, owner
    ),
    "assign": execute_mutation(
        registry, "assignPartToProject", {"part_id": part.pk, "project_id": public.pk}, owner
    ),
    "assigned": public.parts.filter(pk=part.pk).exists(),
    "assign_again_preview": preview(
        "assignPartToProject", {"part_id": part.pk, "project_id": public.pk}, owner
    ),
    "public_code": public.code,
    "same_cost": unchanged_reason(
        preview("updatePartCost", {"part_id": part.pk, "unit_cost": "14.5"}, owner)
    ),
    "private_by_owner": execute_mutation(
        registry, "assignPartToProject", {"part_id": part.pk, "project_id": private.pk}, owner
    )["status"],
    "private_by_other": execute_mutation(
        registry, "assignPartToProject", {"part_id": part.pk, "project_id": private.pk}, other
    ),
    "by_number": execute_mutation(
        registry, "updatePartCost", {"part_id": "p-1003", "unit_cost": "3.25"}, owner
    ),
    "by_number_cost": str(Part.objects.get(number="P-1003").unit_cost),
    "assign_by_code": execute_mutation(
        registry, "assignPartToProject", {"part_id": "P-1004", "project_id": public.code}, owner
    ),
    "assigned_by_code": public.parts.filter(number="P-1004").exists(),
    "by_code_preview": preview(
        "assignPartToProject", {"part_id": "P-1004", "project_id": public.code}, owner
    ),
    "digits": execute_mutation(
        registry, "updatePartCost", {"part_id": str(part.pk), "unit_cost": "14.50"}, owner
    )["status"],
    "unknown_number": execute_mutation(
        registry, "updatePartCost", {"part_id": "P-9999", "unit_cost": "1.00"}, owner
    ),
    "unknown_code": execute_mutation(
        registry, "assignPartToProject", {"part_id": "P-1004", "project_id": "PRJ-999"}, owner
    ),
    "private_code_by_other": execute_mutation(
        registry, "assignPartToProject", {"part_id": "P-1004", "project_id": private.code}, other
    ),
    "highest": max(Part.objects.values_list("number", flat=True)),
    "create_preview": preview("createPart", {"name": "Gizmo", "material_id": 1}, owner),
    "create": execute_mutation(registry, "createPart", {"name": "Gizmo", "material_id": 1}, owner),
    "created_number": Part.objects.get(name="Gizmo").number,
    "unknown_material": execute_mutation(
        registry, "createPart", {"name": "Nothing", "material_id": 999999}, owner
    ),
    "unknown_part": execute_mutation(
        registry, "updatePartCost", {"part_id": 999999, "unit_cost": "1.00"}, owner
    ),
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data_dir = tmp_path_factory.mktemp("demo")
    manage(data_dir, "migrate", "--verbosity", "0", "--skip-checks")
    manage(data_dir, "demo_seed", "--skip-checks")
    result: dict[str, Any] = json.loads(
        manage(data_dir, "shell", "-c", SCRIPT).stdout.splitlines()[-1]
    )
    return result


def test_four_managers_and_three_mutations_are_registered(outcome: dict[str, Any]) -> None:
    assert outcome["managers"] == [
        "MaterialManager",
        "PartManager",
        "ProjectManager",
        "SupplierManager",
    ]
    assert outcome["mutations"] == ["assignPartToProject", "createPart", "updatePartCost"]


def test_update_part_cost_previews_before_and_after_then_writes(outcome: dict[str, Any]) -> None:
    preview = outcome["cost_preview"]
    assert preview["action"] == "update"
    assert preview["part"].startswith("P-1002 ")
    assert preview["changes"] == [
        {"field": "unit_cost", "before": outcome["cost_before"], "after": "14.50"}
    ]
    assert outcome["cost"]["status"] == "executed"
    assert outcome["cost_after"] == "14.50"


def test_assign_part_previews_names_and_respects_private_projects(outcome: dict[str, Any]) -> None:
    preview = outcome["assign_preview"]
    assert preview["action"] == "assign"
    assert preview["part"].startswith("P-1002 ")
    assert preview["project"].startswith("PRJ-")
    assert preview["already_assigned"] is False
    assert "unchanged" not in preview
    assert outcome["assign"]["status"] == "executed"
    assert outcome["assigned"] is True
    assert outcome["private_by_owner"] == "executed"
    # Another user's private project reads as one that does not exist.
    hidden = outcome["private_by_other"]
    assert (hidden["code"], hidden["errors"][0]["field"]) == ("invalid_input", "project_id")
    assert hidden["message"].endswith(" that you can change")


def test_create_part_takes_the_next_free_number(outcome: dict[str, Any]) -> None:
    expected = f"P-{int(outcome['highest'].removeprefix('P-')) + 1}"
    assert outcome["create_preview"]["values"]["number"] == expected
    assert outcome["create_preview"]["material"] == "Steel S235"
    assert outcome["create"]["status"] == "executed"
    assert outcome["created_number"] == expected


def test_an_unknown_material_or_part_is_an_input_error(outcome: dict[str, Any]) -> None:
    for key, kind, field in [
        ("unknown_material", "material", "material_id"),
        ("unknown_part", "part", "part_id"),
    ]:
        error = outcome[key]
        assert error["code"] == "invalid_input"
        assert f"no {kind} with id 999999" in error["message"]
        assert error["errors"] == [{"field": field, "message": "no such object"}]


def test_previews_of_writes_that_change_nothing_say_why(outcome: dict[str, Any]) -> None:
    again = outcome["assign_again_preview"]
    assert again["already_assigned"] is True and again["unchanged"] is True
    assert again["reason"] == f"part P-1002 is already assigned to project {outcome['public_code']}"
    # 14.5 is the cost the part has (14.50) since the update above.
    assert (
        outcome["same_cost"]
        == f"PartManager #{outcome['cost']['result']['id']} already has unit_cost 14.50"
    )


def test_parts_and_projects_are_named_by_id_number_or_code(outcome: dict[str, Any]) -> None:
    # A model asked about "part P-1003" sends the number as part_id: it names the part.
    assert outcome["by_number"]["status"] == "executed"
    assert outcome["by_number"]["result"]["number"] == "P-1003"
    assert outcome["by_number_cost"] == "3.25"
    assert outcome["assign_by_code"]["status"] == "executed"
    assert outcome["assigned_by_code"] is True
    assert outcome["by_code_preview"]["reason"] == (
        f"part P-1004 is already assigned to project {outcome['public_code']}"
    )
    assert outcome["digits"] == "executed"
    for key, message, field in [
        ("unknown_number", "there is no part 'P-9999'", "part_id"),
        ("unknown_code", "there is no project 'PRJ-999' that you can change", "project_id"),
    ]:
        error = outcome[key]
        assert (error["code"], error["message"]) == ("invalid_input", message)
        assert error["errors"] == [{"field": field, "message": "no such object"}]
    # A private code of someone else's answers as an unknown one: a guess learns nothing.
    private = outcome["private_code_by_other"]
    assert (private["code"], private["errors"]) == (
        "invalid_input",
        outcome["unknown_code"]["errors"],
    )
    assert private["message"].endswith("' that you can change")
