"""The demo's chat declarations: four Django-backed managers and three mutations.

`chatomon.data.autodiscover()` (run by the chatomon app) imports this module, which
registers everything in the default registry. The settings decide who confirms what:
createPart runs at once, updatePartCost waits for staff, assignPartToProject for the user.
"""

# Manager declares fields, relations and filters as ClassVars; ruff cannot see inherited ones.
# ruff: noqa: RUF012

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from chatomon.data import Manager, mutation, registry
from chatomon.data.errors import DataError
from chatomon.data.fields import FieldSpec

from .inputs import AssignPartInput, CreatePartInput, UpdatePartCostInput
from .models import Material, Part, Project, Supplier

CENT = Decimal("0.01")
"""Costs are stored to the cent."""


class MaterialManager(Manager):
    """Materials parts are made of."""

    model = Material
    description = "Materials that parts are made of, with density and price per kilogram."
    fields = ["name", "category", "density", "cost_per_kg"]
    chat_exposed = True


class SupplierManager(Manager):
    """Suppliers, without their contact addresses."""

    model = Supplier
    description = "Companies the parts are bought from: country, rating and lead time."
    fields = ["name", "country", "rating", "lead_time_days"]
    relations = {"parts": "PartManager"}
    chat_exposed = True


class PartManager(Manager):
    """Parts, with their material, supplier and projects."""

    model = Part
    description = "Designed or purchased components: number, cost, weight, stock, status."
    fields = {
        "number": FieldSpec(),
        "name": FieldSpec(),
        "unit_cost": FieldSpec(),
        "weight_kg": FieldSpec(description="Weight in kilograms."),
        "status": FieldSpec(),
        "quantity": FieldSpec(),
        "released_on": FieldSpec(),
        "created_at": FieldSpec(),
    }
    relations = {
        "material": "MaterialManager",
        "supplier": "SupplierManager",
        "projects": "ProjectManager",
    }
    chat_exposed = True


class ProjectManager(Manager):
    """Customer projects: public ones, plus the actor's own private ones."""

    model = Project
    description = "Customer projects, their budget, dates and the parts they use."
    fields = ["code", "name", "customer", "status", "budget", "starts_on", "due_on", "is_public"]
    relations = {"parts": "PartManager"}
    chat_exposed = True

    def get_queryset(self, actor: Any) -> QuerySet[Project]:
        """Public projects, and the private projects `actor` owns."""
        visible = Q(is_public=True)
        if actor is not None and getattr(actor, "is_authenticated", False):
            visible |= Q(owner_id=actor.id)
        return Project.objects.filter(visible)


def next_part_number() -> str:
    """The part number after the highest one in use (P-1001 when there is none)."""
    numbers = [
        int(match.group(1))
        for value in Part.objects.values_list("number", flat=True)
        if (match := re.fullmatch(r"P-(\d+)", value))
    ]
    return f"P-{max(numbers, default=1000) + 1}"


def _no_such(kind: str, pk: int | str, field: str, *, scope: str = "") -> DataError:
    """The input error of an id (or number, or code) naming no row, at the input field."""
    named = f"with id {pk}" if _is_id(pk) else repr(pk)
    return DataError(
        f"there is no {kind} {named}{scope}",
        code="invalid_input",
        details={"errors": [{"field": field, "message": "no such object"}]},
    )


def _name_of(model: type[Material] | type[Supplier], pk: int | None, field: str) -> str | None:
    if pk is None:
        return None
    name: str | None = model.objects.filter(pk=pk).values_list("name", flat=True).first()
    if name is None:
        raise _no_such(model.__name__.lower(), pk, field)
    return name


def _is_id(reference: int | str) -> bool:
    """Whether an input names a row by its id: an integer, or decimal digits."""
    # isdecimal, not isdigit: "²" is a digit that int() refuses.
    return isinstance(reference, int) or reference.strip().isdecimal()


def _by_reference(reference: int | str, natural_key: str) -> Q:
    """The row an input names: by id (`_is_id`) or by its natural key."""
    if _is_id(reference):
        return Q(pk=int(reference))
    return Q(**{f"{natural_key}__iexact": str(reference).strip()})


def _visible_project(actor: Any, project_id: int | str) -> Project:
    visible = ProjectManager().get_queryset(actor)
    project = visible.filter(_by_reference(project_id, "code")).first()
    if project is None:
        # One answer for a project that does not exist and one the actor cannot see, so
        # that a guessed code or id tells nobody which private projects exist.
        raise _no_such("project", project_id, "project_id", scope=" that you can change")
    return project


def _part(part_id: int | str) -> Part:
    part = Part.objects.select_related("material").filter(_by_reference(part_id, "number")).first()
    if part is None:
        raise _no_such("part", part_id, "part_id")
    return part


def _create_preview(actor: Any, data: CreatePartInput) -> dict[str, Any]:
    return {
        "action": "create",
        "manager": "PartManager",
        "values": {"number": next_part_number(), **data.model_dump(mode="json")},
        "material": _name_of(Material, data.material_id, "material_id"),
        "supplier": _name_of(Supplier, data.supplier_id, "supplier_id"),
    }


@mutation(name="createPart", input=CreatePartInput, manager="PartManager", preview=_create_preview)
def create_part(actor: Any, data: CreatePartInput) -> Part:
    """Create a part; it gets the next free part number."""
    _name_of(Material, data.material_id, "material_id")
    _name_of(Supplier, data.supplier_id, "supplier_id")
    return Part.objects.create(
        number=next_part_number(),
        name=data.name,
        material_id=data.material_id,
        supplier_id=data.supplier_id,
        unit_cost=data.unit_cost,
        weight_kg=data.weight_kg,
        status=Part.Status.DRAFT,
        created_at=timezone.now(),
    )


def _cost_preview(actor: Any, data: UpdatePartCostInput) -> dict[str, Any]:
    part = _part(data.part_id)
    # Written as the column stores it (14.5 → "14.50"), so a cost the part already has
    # reads as no change and nobody is asked to approve it.
    after = data.unit_cost.quantize(CENT)
    return {
        "action": "update",
        "manager": "PartManager",
        "id": part.pk,
        "part": str(part),
        "changes": [{"field": "unit_cost", "before": str(part.unit_cost), "after": str(after)}],
    }


@mutation(
    name="updatePartCost",
    input=UpdatePartCostInput,
    manager="PartManager",
    preview=_cost_preview,
)
def update_part_cost(actor: Any, data: UpdatePartCostInput) -> Part:
    """Change the unit cost of a part."""
    part = _part(data.part_id)
    part.unit_cost = data.unit_cost
    part.save(update_fields=["unit_cost"])
    return part


def _assignment_preview(actor: Any, data: AssignPartInput) -> dict[str, Any]:
    part = _part(data.part_id)
    project = _visible_project(actor, data.project_id)
    already = project.parts.filter(pk=part.pk).exists()
    shown: dict[str, Any] = {
        "action": "assign",
        "manager": "ProjectManager",
        "id": project.pk,
        "part": str(part),
        "project": str(project),
        "already_assigned": already,
    }
    if already:
        # The mutate tool then asks nobody and tells the model why (unchanged_reason).
        reason = f"part {part.number} is already assigned to project {project.code}"
        shown |= {"unchanged": True, "reason": reason}
    return shown


@mutation(
    name="assignPartToProject",
    input=AssignPartInput,
    manager="ProjectManager",
    preview=_assignment_preview,
)
def assign_part_to_project(actor: Any, data: AssignPartInput) -> Project:
    """Add a part to a project the actor can see."""
    part = _part(data.part_id)
    project = _visible_project(actor, data.project_id)
    project.parts.add(part)
    return project


MANAGERS = (MaterialManager, SupplierManager, PartManager, ProjectManager)
MUTATIONS = (create_part, update_part_cost, assign_part_to_project)

for _item in (*MANAGERS, *MUTATIONS):
    registry.register(_item)
