"""The built-in fixtures the packaged datasets run against (`--fixture toy|large`).

An `EvalFixture` is what a run needs from a fixture: a fresh registry per case (so a
write in one case never shows in the next) and the `ToolSettings` that allow and confirm
the fixture's mutations. Calling it returns the registry, like the plain registry
functions of `chatomon.data.fixtures`.

The toy fixture adds two writes to `toy_registry()`, both confirmed by the client:
`setPartMaterial(part_id, material_id)` and `renameProject(project_id, name)`. The large
fixture is `large_registry()` as it is, read-only.

>>> toy = FIXTURES["toy"]
>>> sorted(toy().mutations)
['renameProject', 'setPartMaterial']
>>> toy.settings.confirm_mutations
('setPartMaterial', 'renameProject')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

from chatomon.chat.tools.context import ToolSettings
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.errors import DataError
from chatomon.data.fixtures import large_registry, toy_registry
from chatomon.data.mutations import mutation
from chatomon.data.registration import ManagerRegistry

__all__ = ["FIXTURES", "TOY_MUTATIONS", "EvalFixture", "eval_toy_registry"]

TOY_MUTATIONS = ("setPartMaterial", "renameProject")
"""The toy fixture's writes, each confirmed by the client before it runs."""


class SetPartMaterial(BaseModel):
    """Input of setPartMaterial."""

    part_id: int = Field(description="The part to change.")
    material_id: int = Field(description="The material it is made of from now on.")


class RenameProject(BaseModel):
    """Input of renameProject."""

    project_id: int = Field(description="The project to rename.")
    name: str = Field(min_length=1, max_length=80, description="Its new name.")


def _row(registry: ManagerRegistry, manager: str, record_id: int) -> dict[str, Any]:
    for row in registry.managers[manager].records or []:
        if row["id"] == record_id:
            return row
    raise DataError(
        f"{manager} has no record with id {record_id}",
        code="invalid_input",
        details={"errors": [{"field": "id", "message": "no such object"}]},
    )


def eval_toy_registry() -> ManagerRegistry:
    """`toy_registry()` with the writes setPartMaterial and renameProject registered."""
    registry = toy_registry()

    @mutation(name="setPartMaterial", input=SetPartMaterial, manager="PartManager")
    def set_part_material(actor: Any, data: SetPartMaterial) -> dict[str, Any]:
        """Change the material a part is made of."""
        _row(registry, "MaterialManager", data.material_id)  # the material must exist
        row = _row(registry, "PartManager", data.part_id)
        row["material"] = data.material_id
        return row

    @mutation(name="renameProject", input=RenameProject, manager="ProjectManager")
    def rename_project(actor: Any, data: RenameProject) -> dict[str, Any]:
        """Give a project a new name."""
        row = _row(registry, "ProjectManager", data.project_id)
        row["name"] = data.name
        return row

    registry.register(set_part_material)
    registry.register(rename_project)
    return registry


@dataclass(frozen=True)
class EvalFixture:
    """A built-in fixture: how to build its registry, and the tool settings of a run.

    Attributes:
        name: "toy" or "large".
        build: Returns a fresh registry (one per case).
        settings: The ToolSettings a case runs with (the fixture's mutations allowed and
            confirmed).
    """

    name: str
    build: Callable[[], ManagerRegistry] = field(repr=False)
    settings: ToolSettings = field(default_factory=ToolSettings)

    def __call__(self) -> ManagerRegistry:
        """A fresh registry of this fixture."""
        return self.build()

    def toolset(self) -> Toolset:
        """A Toolset over a fresh registry, with the fixture's settings."""
        return Toolset(self.build(), self.settings)


FIXTURES: Mapping[str, EvalFixture] = MappingProxyType(
    {
        "toy": EvalFixture(
            "toy",
            eval_toy_registry,
            ToolSettings(allowed_mutations=TOY_MUTATIONS, confirm_mutations=TOY_MUTATIONS),
        ),
        "large": EvalFixture("large", large_registry),
    }
)
"""The built-in fixtures by name."""
