"""The test app's chat declarations: Django-backed managers and three mutations.

Imported by `chatomon.data.autodiscover()`, this module registers everything in the default
registry; tests build their own registries from the same classes with `build_registry()`.
"""

# Manager declares fields, relations and filters as ClassVars; ruff cannot see inherited ones.
# ruff: noqa: RUF012

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from chatomon.data import Manager, ManagerRegistry, PermissionDeniedError, mutation, registry
from chatomon.data.fields import FieldSpec

from .inputs import AssignPartInput, CreatePartInput, UpdatePartCostInput
from .models import Material, Part, Project, Supplier


class MaterialManager(Manager):
    """Materials parts are made of."""

    model = Material
    description = "Materials that parts are made of."
    fields = ["name", "density"]
    chat_exposed = True


class SupplierManager(Manager):
    """Suppliers: not exposed to the assistant."""

    model = Supplier
    fields = ["name"]
    chat_exposed = False


class PartManager(Manager):
    """Parts, with their material, projects and (hidden) supplier."""

    model = Part
    description = "Designed or purchased components."
    fields = {
        "name": FieldSpec(),
        "unit_cost": FieldSpec(),
        "weight_kg": FieldSpec(description="Weight in kilograms."),
        "status": FieldSpec(),
        "in_stock": FieldSpec(),
        "released_on": FieldSpec(),
        "created_at": FieldSpec(),
        "quantity": FieldSpec(),
    }
    relations = {
        "material": "MaterialManager",
        "projects": "ProjectManager",
        "supplier": "SupplierManager",
    }
    filters = [
        "name",
        "unit_cost",
        "weight_kg",
        "status",
        "in_stock",
        "released_on",
        "created_at",
        "material",
        "projects",
        "supplier",
    ]
    chat_exposed = True


class ProjectManager(Manager):
    """Projects: public ones, plus the actor's own private ones."""

    model = Project
    description = "Projects and the parts they use."
    fields = ["name", "is_public"]
    relations = {"parts": "PartManager"}
    chat_exposed = True

    def get_queryset(self, actor: Any) -> QuerySet[Project]:
        visible = Q(is_public=True)
        if actor is not None and getattr(actor, "is_authenticated", False):
            visible |= Q(owner_id=actor.id)
        return Project.objects.filter(visible)


@mutation(name="createPart", input=CreatePartInput, manager="PartManager")
def create_part(actor: Any, data: CreatePartInput) -> Part:
    """Create a part."""
    return Part.objects.create(
        name=data.name,
        material_id=data.material_id,
        unit_cost=data.unit_cost,
        created_at=timezone.now(),
    )


@mutation(name="updatePartCost", input=UpdatePartCostInput, manager="PartManager")
def update_part_cost(actor: Any, data: UpdatePartCostInput) -> Part:
    """Change the unit cost of a part."""
    part = Part.objects.get(pk=data.part_id)
    part.unit_cost = data.unit_cost
    part.save(update_fields=["unit_cost"])
    return part


def _assignment_preview(actor: Any, data: AssignPartInput) -> dict[str, Any]:
    part = Part.objects.filter(pk=data.part_id).values_list("name", flat=True).first()
    project = ProjectManager().get_queryset(actor).filter(pk=data.project_id).first()
    return {"action": "assign", "part": part, "project": project.name if project else None}


@mutation(
    name="assignPartToProject",
    input=AssignPartInput,
    manager="ProjectManager",
    preview=_assignment_preview,
)
def assign_part_to_project(actor: Any, data: AssignPartInput) -> Project:
    """Add a part to a project."""
    project = ProjectManager().get_queryset(actor).filter(pk=data.project_id).first()
    if project is None:
        raise PermissionDeniedError("you cannot change that project")
    project.parts.add(data.part_id)
    return project


MANAGERS = (MaterialManager, SupplierManager, PartManager, ProjectManager)
MUTATIONS = (create_part, update_part_cost, assign_part_to_project)


def build_registry() -> ManagerRegistry:
    """A fresh registry with the test app's managers and mutations."""
    return ManagerRegistry([*MANAGERS, *MUTATIONS])


for _item in (*MANAGERS, *MUTATIONS):
    registry.register(_item)
