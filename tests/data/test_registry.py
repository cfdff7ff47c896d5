"""ManagerRegistry: registration, versions and the index cache, and declaration checks."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from chatomon.data import (
    DataConfigurationError,
    FieldSpec,
    Manager,
    ManagerRegistry,
    RelationSpec,
    mutation,
)
from chatomon.data.fixtures import toy_registry
from chatomon.errors import ConfigurationError


class NameInput(BaseModel):
    name: str


def records(name: str, rows: list[dict[str, Any]], **options: Any) -> type[Manager]:
    return Manager.from_records(name, records=rows, **options)


def problems(*items: Any) -> tuple[str, ...]:
    with pytest.raises(DataConfigurationError) as caught:
        ManagerRegistry(items).validate()
    assert isinstance(caught.value, ConfigurationError)
    return caught.value.problems


def test_register_as_call_and_as_decorator() -> None:
    registry = ManagerRegistry()

    @registry.register
    class ToolManager(Manager):
        records = [{"id": 1, "name": "hammer"}]  # noqa: RUF012
        chat_exposed = True

    @registry.register
    @mutation(name="createTool", input=NameInput, manager="ToolManager")
    def create_tool(actor: object, data: NameInput) -> None:
        """Create a tool."""

    assert registry.register(ToolManager) is ToolManager
    assert registry.managers == {"ToolManager": ToolManager}
    assert registry.mutations["createTool"] is create_tool
    assert create_tool.description == "Create a tool."
    assert registry.schema_index().names == ("ToolManager",)


def test_a_taken_name_is_refused_at_once() -> None:
    registry = toy_registry()
    other = records("PartManager", [{"name": "x"}])
    with pytest.raises(
        DataConfigurationError, match="a manager named 'PartManager' is already registered"
    ):
        registry.register(other)
    m = mutation(name="m", input=NameInput)(lambda a, d: None)
    registry.register(m)
    with pytest.raises(DataConfigurationError, match="a mutation named 'm'"):
        registry.register(mutation(name="m", input=NameInput)(lambda a, d: None))


def test_register_refuses_what_is_not_a_manager_or_mutation() -> None:
    for item in (object(), Manager, int):
        with pytest.raises(DataConfigurationError, match="takes a Manager subclass or a Mutation"):
            ManagerRegistry().register(item)  # type: ignore[type-var]
    with pytest.raises(DataConfigurationError, match="must be a Python identifier"):
        ManagerRegistry().register(records("Bad Name", [{"name": "x"}]))


def test_the_index_is_cached_per_version_and_rebuilt_on_change() -> None:
    registry = toy_registry()
    first = registry.schema_index()
    assert registry.schema_index() is first
    version = registry.version
    registry.register(records("ToolManager", [{"name": "hammer"}]))
    assert registry.version == version + 1
    second = registry.schema_index()
    assert second is not first
    assert "ToolManager" in second.names
    registry.unregister("ToolManager")
    assert "ToolManager" not in registry.schema_index().names
    with pytest.raises(KeyError):
        registry.unregister("ToolManager")


def test_registries_are_independent() -> None:
    one, two = toy_registry(), toy_registry()
    one.register(records("ToolManager", [{"name": "hammer"}]))
    assert "ToolManager" not in two.managers


def test_only_exposed_managers_are_indexed() -> None:
    hidden = records("VaultManager", [{"name": "gold"}], chat_exposed=False)
    registry = ManagerRegistry([hidden, records("ToolManager", [{"name": "hammer"}])])
    assert registry.schema_index().names == ("ToolManager",)
    assert set(registry.resolve()) == {"VaultManager", "ToolManager"}


def test_unknown_relation_targets_name_the_manager_relation_and_what_exists() -> None:
    (problem,) = problems(
        records(
            "PartManager",
            [{"name": "Bolt", "material": 1}],
            relations={"material": "MaterialManagr"},
        ),
        records("MaterialManager", [{"name": "Steel"}]),
    )
    assert problem == (
        "PartManager.relations['material']: no manager named 'MaterialManagr' is registered; "
        "did you mean 'MaterialManager'? (managers: MaterialManager, PartManager)"
    )


def test_unknown_fields_and_filters_suggest_what_exists() -> None:
    found = problems(
        records(
            "PartManager",
            [{"name": "Bolt", "weight_kg": 1.0}],
            fields=["name", "wieght_kg"],
            filters=["name", "nmae"],
        ),
    )
    assert found == (
        "PartManager.fields: no record has 'wieght_kg'; did you mean 'weight_kg'? "
        "(record keys: id, name, weight_kg); declare its type if it may be empty",
        "PartManager.filters: 'nmae' is not one of its fields or relations; did you mean 'name'? "
        "(fields and relations: id, name)",
    )


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(DataConfigurationError) as caught:
        ManagerRegistry(
            [
                records("AManager", [{"name": "x"}], filters=["nope"]),
                records("BManager", [{"name": "x"}], relations={"a": "ZManager"}),
            ]
        ).validate()
    assert len(caught.value.problems) == 2
    assert str(caught.value).startswith("2 problems:")
    assert caught.value.manager == "AManager"


@pytest.mark.parametrize(
    ("manager", "fragment"),
    [
        (records("AManager", [{"id": 1, "name": "x"}, {"name": "y"}]), "record #2 has no 'id'"),
        (
            records("AManager", [{"id": 1, "name": "x"}, {"id": 1, "name": "y"}]),
            "id 1 is used by two records",
        ),
        (
            records("AManager", [{"id": 1, "name": "x"}, {"id": "b", "name": "y"}]),
            "all integers or all strings",
        ),
        (records("AManager", [{"name": "x"}, {"name": 3}]), "mixed types integer, string"),
        (records("AManager", [{"name": None}]), "no values to infer a type from"),
        (records("AManager", [{"name": [1]}]), "unsupported type"),
        (records("AManager", [{"size": "big"}], fields={"size": "enum"}), "an enum needs choices"),
        (
            records(
                "AManager", [{"size": "huge"}], fields={"size": FieldSpec("enum", choices=("big",))}
            ),
            "size='huge' is not a valid enum value",
        ),
        (
            records("AManager", [{"n": "3"}], fields={"n": "integer"}),
            "n='3' is not a valid integer value",
        ),
        (
            records("AManager", [{"n": 1}], fields={"n": "colour"}),
            "neither a FieldSpec nor a field type",
        ),
        (records("AManager", [{"n": 1}], fields="n"), "must be a list of names, not a string"),
        (records("AManager", [{"n": 1}], filters="n"), "must be a list of names, not a string"),
        (
            records("AManager", [{"n": 1, "b": 1}], fields=["n", "b"], relations={"b": "AManager"}),
            "'b' is a relation; list it in relations only",
        ),
        (
            records(
                "AManager", [{"n": 1, "b": [1]}, {"n": 2, "b": 1}], relations={"b": "AManager"}
            ),
            "values must all be",
        ),
        (records("AManager", [{"n": 1}], relations={"b": 42}), "is not a manager name"),
    ],
)
def test_records_declaration_mistakes(manager: type[Manager], fragment: str) -> None:
    assert any(fragment in problem for problem in problems(manager)), problems(manager)


def test_a_manager_needs_exactly_one_source() -> None:
    class Empty(Manager):
        pass

    class Both(Manager):
        model = object
        records = []  # noqa: RUF012

    assert problems(Empty) == ("Empty: declare exactly one of model (Django) or records",)
    assert problems(Both) == ("Both: declare exactly one of model (Django) or records",)


def test_mutation_declarations_are_checked() -> None:
    found = problems(
        records("PartManager", [{"name": "Bolt"}]),
        mutation(name="a", input=NameInput, manager="PartManagr")(lambda actor, data: None),
        mutation(name="b", input=NameInput, target_id="part_id")(lambda actor, data: None),
    )
    assert found == (
        "mutation a: no manager named 'PartManagr'; did you mean 'PartManager'?",
        "mutation b: target_id 'part_id' is not a field of NameInput (fields: name)",
    )


def test_records_types_are_inferred_and_declared_types_checked() -> None:
    manager = records(
        "AManager",
        [
            {
                "id": "a",
                "n": 1,
                "x": 1.5,
                "d": Decimal("2.50"),
                "on": date(2024, 1, 1),
                "at": datetime(2024, 1, 1, tzinfo=UTC),
                "ok": True,
                "s": "x",
                "mix": 1,
            },
            {
                "id": "b",
                "n": 2,
                "x": 2,
                "d": 3,
                "on": None,
                "at": datetime(2024, 1, 2, tzinfo=UTC),
                "ok": False,
                "s": "y",
                "mix": 2.5,
            },
        ],
    )
    schema = ManagerRegistry([manager]).schema_index().get("AManager")
    assert {name: f.type for name, f in schema.fields.items()} == {
        "id": "string",
        "n": "integer",
        "x": "float",
        "d": "decimal",
        "on": "date",
        "at": "datetime",
        "ok": "boolean",
        "s": "string",
        "mix": "float",
    }
    assert schema.fields["d"].decimal_places == 2
    assert schema.fields["on"].nullable is True
    assert schema.fields["n"].nullable is False


def test_from_records_numbers_rows_without_ids_and_keeps_the_live_list() -> None:
    manager = records("AManager", [{"name": "x"}, {"name": "y"}])
    assert manager.records == [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}]
    assert manager.name == "AManager"
    assert manager.chat_exposed is True
    assert manager.has_custom_scope() is False
    scoped = records("BManager", [{"name": "x"}], scope=lambda actor, rows: rows)
    assert scoped.has_custom_scope() is True
    assert repr(manager()) == "<AManager 'AManager'>"


def test_relation_targets_may_be_given_as_classes() -> None:
    material = records("MaterialManager", [{"name": "Steel"}])
    part = records(
        "PartManager", [{"name": "Bolt", "material": 1}], relations={"material": material}
    )
    index = ManagerRegistry([material, part]).schema_index()
    assert index.get("PartManager").relations["material"].target == "MaterialManager"


def test_relation_shape_is_inferred_or_declared() -> None:
    target = records("TManager", [{"name": "t"}])
    many = records("AManager", [{"name": "a", "t": [1]}], relations={"t": "TManager"})
    one = records("BManager", [{"name": "b", "t": 1}], relations={"t": "TManager"})
    empty = records(
        "CManager", [{"name": "c"}], relations={"t": RelationSpec("TManager", to_many=True)}
    )
    index = ManagerRegistry([target, many, one, empty]).schema_index()
    assert index.get("AManager").relations["t"].to_many is True
    assert index.get("BManager").relations["t"].to_many is False
    assert index.get("CManager").relations["t"].to_many is True
    assert repr(ManagerRegistry([target])) == "<ManagerRegistry managers=1 mutations=0 version=1>"
