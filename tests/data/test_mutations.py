"""@mutation declarations, signatures, targets and execute_mutation's error results."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from chatomon.data import (
    DataError,
    Manager,
    ManagerRegistry,
    Mutation,
    PermissionDeniedError,
    SimpleActor,
    execute_mutation,
    mutation,
)
from chatomon.data.mutation_runs import json_ready
from chatomon.data.mutations import mutations_of, validate_input
from chatomon.errors import ConfigurationError

ADA = SimpleActor(id=1)


class RenameInput(BaseModel):
    id: int
    name: str
    note: str | None = None


class MoveInput(BaseModel):
    widget_id: int
    shelf: int


def widgets() -> tuple[type[Manager], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = [{"id": 1, "name": "cog", "shelf": 3}]
    return Manager.from_records("WidgetManager", records=rows, fields=["name", "shelf"]), rows


def test_the_decorator_builds_a_mutation() -> None:
    @mutation(name="renameWidget", input=RenameInput, manager="WidgetManager")
    def rename(actor: Any, data: RenameInput) -> str:
        """Rename a widget.

        Longer text the model does not need.
        """
        return data.name.upper()

    assert isinstance(rename, Mutation)
    assert rename.description == "Rename a widget."
    assert rename(ADA, RenameInput(id=1, name="x")) == "X"
    assert rename.signature() == "renameWidget(id: integer, name: string, note?: string)"
    assert rename.target_field == "id"
    explicit = mutation(name="m", input=RenameInput, description="Given.")(lambda a, d: None)
    assert explicit.description == "Given."


def test_update_targets() -> None:
    move = mutation(name="moveWidget", input=MoveInput, manager="WidgetManager")(lambda a, d: None)
    assert move.target_field == "widget_id"
    plain = mutation(name="moveWidget", input=MoveInput)(lambda a, d: None)
    assert plain.target_field is None
    chosen = mutation(name="moveWidget", input=MoveInput, target_id="shelf")(lambda a, d: None)
    assert chosen.target_field == "shelf"


@pytest.mark.parametrize("name", ["", "1st", "drop table", None])
def test_bad_names_are_refused(name: Any) -> None:
    with pytest.raises(ConfigurationError, match="must start with a letter"):
        mutation(name=name, input=RenameInput)


def test_the_input_must_be_a_pydantic_model_and_the_function_plain() -> None:
    with pytest.raises(ConfigurationError, match="pydantic BaseModel class"):
        mutation(name="m", input=dict)

    async def coroutine(actor: Any, data: Any) -> None:
        return None

    with pytest.raises(ConfigurationError, match="must be a plain function"):
        mutation(name="m", input=RenameInput)(coroutine)


def test_validate_input_lists_each_field() -> None:
    definition = mutation(name="m", input=RenameInput)(lambda a, d: None)
    with pytest.raises(DataError) as caught:
        validate_input(definition, {"id": "x"})
    assert caught.value.code == "invalid_input"
    assert [e["field"] for e in caught.value.details["errors"]] == ["id", "name"]
    with pytest.raises(DataError, match="must be an object"):
        validate_input(definition, [1])


def test_execute_mutation_shows_the_manager_fields_of_what_it_returns() -> None:
    manager, rows = widgets()

    @mutation(name="renameWidget", input=RenameInput, manager="WidgetManager")
    def rename(actor: Any, data: RenameInput) -> dict[str, Any]:
        rows[0]["name"] = data.name
        return rows[0]

    registry = ManagerRegistry([manager, rename])
    assert execute_mutation(registry, "renameWidget", {"id": 1, "name": "gear"}, ADA) == {
        "status": "executed",
        "mutation": "renameWidget",
        "result": {"id": 1, "name": "gear", "shelf": 3},
    }


def test_execute_mutation_turns_data_errors_into_results() -> None:
    def refuse(actor: Any, data: Any) -> None:
        raise PermissionDeniedError("only the owner may rename")

    def clash(actor: Any, data: Any) -> None:
        raise DataError("that name is taken", code="invalid_input")

    for function, code in ((refuse, "permission_denied"), (clash, "invalid_input")):
        definition = mutation(name="m", input=RenameInput)(function)
        result = execute_mutation([definition], "m", {"id": 1, "name": "x"}, ADA)
        assert result["status"] == "error"
        assert result["code"] == code


def test_a_crashing_mutation_is_not_hidden() -> None:
    def crash(actor: Any, data: Any) -> None:
        raise RuntimeError("bug")

    with pytest.raises(RuntimeError, match="bug"):
        execute_mutation(
            [mutation(name="m", input=RenameInput)(crash)], "m", {"id": 1, "name": "x"}, ADA
        )


def test_mutations_of_accepts_registries_mappings_and_lists() -> None:
    definition = mutation(name="m", input=RenameInput)(lambda a, d: None)
    assert mutations_of([definition]) == {"m": definition}
    assert mutations_of({"m": definition}) == {"m": definition}
    assert mutations_of(ManagerRegistry([definition])) == {"m": definition}


def test_returned_values_become_json() -> None:
    class Shown(BaseModel):
        size: int

    assert json_ready({"a": (1, 2), "b": Shown(size=3), 4: {5}}) == {
        "a": [1, 2],
        "b": {"size": 3},
        "4": [5],
    }
    assert json_ready(None) is None
