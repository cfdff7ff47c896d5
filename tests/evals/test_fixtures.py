import pytest

from chatomon.data.actor import SimpleActor
from chatomon.data.mutations import execute_mutation
from chatomon.evals.fixtures import FIXTURES, TOY_MUTATIONS, EvalFixture

ACTOR = SimpleActor(id=1, is_authenticated=True)


def test_the_fixtures_by_name():
    assert set(FIXTURES) == {"toy", "large"}
    assert all(isinstance(fixture, EvalFixture) for fixture in FIXTURES.values())
    assert len(FIXTURES["large"]().managers) == 150
    with pytest.raises(TypeError):
        FIXTURES["other"] = FIXTURES["toy"]


def test_the_toy_writes_are_allowed_and_confirmed_and_large_has_none():
    toy = FIXTURES["toy"]
    assert toy.settings.allowed_mutations == TOY_MUTATIONS
    assert toy.settings.approver("setPartMaterial") == "client"
    assert toy.settings.approver("renameProject") == "client"
    assert "mutate" in toy.toolset().tools
    assert "mutate" not in FIXTURES["large"].toolset().tools


def test_each_registry_is_fresh():
    toy = FIXTURES["toy"]
    changed = toy()
    changed.mutations["renameProject"](
        ACTOR, changed.mutations["renameProject"].input(project_id=1, name="Artemis")
    )
    assert changed.managers["ProjectManager"].records[0]["name"] == "Artemis"
    assert toy().managers["ProjectManager"].records[0]["name"] == "Apollo"


def test_set_part_material_runs_once_confirmed_through_the_toolset():
    toolset = FIXTURES["toy"].toolset()
    context = toolset.context(ACTOR)
    args = {"mutation": "setPartMaterial", "input": {"part_id": 1, "material_id": 3}}
    staged = toolset.call_sync("mutate", args, context)
    assert staged["status"] == "confirmation_required"
    done = execute_mutation(toolset.registry, "setPartMaterial", args["input"], ACTOR)
    assert done == {
        "status": "executed",
        "mutation": "setPartMaterial",
        "result": {"id": 1, "name": "Bolt"},
    }
    read = toolset.call_sync(
        "query",
        {"manager": "PartManager", "filters": {"id": 1}, "fields": [{"material": ["name"]}]},
        context,
    )
    assert read["data"][0]["material"]["name"] == "Cobalt"


@pytest.mark.parametrize(
    ("name", "data", "field"),
    [
        (
            "setPartMaterial",
            {"part_id": 1, "material_id": 99},
            "MaterialManager has no record with id 99",
        ),
        (
            "setPartMaterial",
            {"part_id": 9, "material_id": 1},
            "PartManager has no record with id 9",
        ),
        ("renameProject", {"project_id": 5, "name": "X"}, "ProjectManager has no record with id 5"),
    ],
)
def test_unknown_ids_are_invalid_input(name, data, field):
    registry = FIXTURES["toy"]()
    result = execute_mutation(registry, name, data, ACTOR)
    assert result["status"] == "error"
    assert result["code"] == "invalid_input"
    assert field in result["message"]
