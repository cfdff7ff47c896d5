"""The shared test catalog: the test app's data, as records managers and as Django models.

`records_catalog()` and `django_catalog()` return the same managers (names, fields,
descriptions, relations, scopes), mutations and rows, so one suite runs against both
backends through the `catalog` fixture (`open_catalog`). Rows are the toy data (Steel,
Aluminum, Cobalt; Bolt, Bearing, Gear; Apollo, Mercury) with the extra part fields the
tools need to show types, plus a hidden supplier (Acme, of the Bolt).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from chatomon.chat.tools import Toolset, ToolSettings
from chatomon.data import (
    FieldSpec,
    Manager,
    ManagerRegistry,
    PermissionDeniedError,
    RelationSpec,
    SimpleActor,
    mutation,
)
from tests.testapp.inputs import AssignPartInput, CreatePartInput, UpdatePartCostInput

MATERIALS = [("Steel", 7.8), ("Aluminum", 2.7), ("Cobalt", 8.9)]
PARTS: list[dict[str, Any]] = [
    {
        "name": "Bolt",
        "material": "Steel",
        "supplier": "Acme",
        "unit_cost": Decimal("0.25"),
        "weight_kg": 0.01,
        "status": "active",
        "in_stock": True,
        "released_on": date(2023, 1, 15),
        "created_at": datetime(2024, 1, 10, 8, 0, tzinfo=UTC),
        "quantity": 500,
    },
    {
        "name": "Bearing",
        "material": "Aluminum",
        "supplier": None,
        "unit_cost": Decimal("12.50"),
        "weight_kg": 0.2,
        "status": "active",
        "in_stock": True,
        "released_on": date(2023, 6, 1),
        "created_at": datetime(2024, 2, 20, 12, 30, tzinfo=UTC),
        "quantity": 40,
    },
    {
        "name": "Gear",
        "material": "Cobalt",
        "supplier": None,
        "unit_cost": Decimal("40.00"),
        "weight_kg": None,
        "status": "draft",
        "in_stock": False,
        "released_on": None,
        "created_at": datetime(2024, 3, 5, 16, 45, tzinfo=UTC),
        "quantity": 0,
    },
]
PROJECTS = [("Apollo", ["Gear"]), ("Mercury", ["Bearing"])]
PART_FIELDS = [
    "name",
    "unit_cost",
    "weight_kg",
    "status",
    "in_stock",
    "released_on",
    "created_at",
    "quantity",
]
PART_FILTERS = [
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


@dataclass
class Catalog:
    """One backend's copy of the catalog, and how to reach into it from a test."""

    kind: str
    registry: ManagerRegistry
    ids: dict[tuple[str, str], Any]
    actor: Any
    other_actor: Any
    add_private_project: Callable[[str, Any, list[str]], Any]
    stored_part: Callable[[str], dict[str, Any]]
    project_parts: Callable[[str], list[str]]
    toolsets: dict[ToolSettings, Toolset] = field(default_factory=dict)

    def id_of(self, manager: str, name: str) -> Any:
        return self.ids[(manager, name)]

    def toolset(self, settings: ToolSettings | None = None) -> Toolset:
        settings = settings or ToolSettings()
        if settings not in self.toolsets:
            self.toolsets[settings] = Toolset(self.registry, settings)
        return self.toolsets[settings]

    def call(
        self,
        name: str,
        args: Any,
        *,
        actor: Any = None,
        settings: ToolSettings | None = None,
        audit: Any = None,
    ) -> Any:
        """Run a tool through the async `Toolset.call`, from this (the test's) thread.

        async_to_sync sends the toolset's thread-sensitive database work back to this
        thread, where the test transaction and the query counter live.
        """
        toolset = self.toolset(settings)
        context = toolset.context(actor, audit)
        return async_to_sync(toolset.call)(name, args, context)


# -- records --------------------------------------------------------------------------


def _project_scope(actor: Any, rows: Any) -> Iterator[Any]:
    for row in rows:
        owned = actor is not None and actor.is_authenticated and row.get("owner") == actor.id
        if row["is_public"] or owned:
            yield row


def records_catalog() -> Catalog:
    """The catalog as records managers (fresh lists each call)."""
    materials = [{"id": n, "name": name, "density": d} for n, (name, d) in enumerate(MATERIALS, 1)]
    material_ids = {row["name"]: row["id"] for row in materials}
    suppliers = [{"id": 1, "name": "Acme"}]
    parts = []
    for number, part in enumerate(PARTS, 1):
        row = {k: v for k, v in part.items() if k not in ("material", "supplier")}
        row["id"] = number
        row["material"] = material_ids[part["material"]]
        row["supplier"] = 1 if part["supplier"] else None
        row["projects"] = []
        parts.append(row)
    part_ids = {row["name"]: row["id"] for row in parts}
    projects = []
    for number, (name, members) in enumerate(PROJECTS, 1):
        projects.append(
            {
                "id": number,
                "name": name,
                "is_public": True,
                "owner": None,
                "parts": [part_ids[m] for m in members],
            }
        )
        for member in members:
            parts[part_ids[member] - 1]["projects"].append(number)

    material_manager = Manager.from_records(
        "MaterialManager",
        records=materials,
        description="Materials that parts are made of.",
        fields={
            "name": FieldSpec("string", description="Material name."),
            "density": FieldSpec("float", description="Density in g/cm³."),
        },
    )
    supplier_manager = Manager.from_records(
        "SupplierManager", records=suppliers, fields={"name": "string"}, chat_exposed=False
    )
    part_manager = Manager.from_records(
        "PartManager",
        records=parts,
        description="Designed or purchased components.",
        fields={
            "name": FieldSpec("string", description="Part name."),
            "unit_cost": FieldSpec(
                "decimal", description="Cost per unit in EUR.", decimal_places=2, nullable=False
            ),
            "weight_kg": FieldSpec("float", description="Weight in kilograms.", nullable=True),
            "status": FieldSpec("enum", choices=("draft", "active", "retired"), nullable=False),
            "in_stock": FieldSpec("boolean", nullable=False),
            "released_on": FieldSpec("date", nullable=True),
            "created_at": FieldSpec("datetime", nullable=False),
            "quantity": FieldSpec("integer", nullable=False),
        },
        relations={
            "material": RelationSpec("MaterialManager", to_many=False),
            "projects": RelationSpec("ProjectManager", to_many=True),
            "supplier": RelationSpec("SupplierManager", to_many=False),
        },
        filters=PART_FILTERS,
    )
    project_manager = Manager.from_records(
        "ProjectManager",
        records=projects,
        description="Projects and the parts they use.",
        fields={
            "name": FieldSpec("string", description="Project name."),
            "is_public": FieldSpec("boolean", nullable=False),
        },
        relations={"parts": RelationSpec("PartManager", to_many=True)},
        scope=_project_scope,
    )
    part_rows = part_manager.records or []
    project_rows = project_manager.records or []

    @mutation(name="createPart", input=CreatePartInput, manager="PartManager")
    def create_part(actor: Any, data: CreatePartInput) -> dict[str, Any]:
        """Create a part."""
        row = {
            "id": max(r["id"] for r in part_rows) + 1,
            "name": data.name,
            "material": data.material_id,
            "supplier": None,
            "projects": [],
            "unit_cost": data.unit_cost,
            "weight_kg": None,
            "status": "active",
            "in_stock": True,
            "released_on": None,
            "created_at": datetime.now(UTC),
            "quantity": 0,
        }
        part_rows.append(row)
        return row

    @mutation(name="updatePartCost", input=UpdatePartCostInput, manager="PartManager")
    def update_part_cost(actor: Any, data: UpdatePartCostInput) -> dict[str, Any]:
        """Change the unit cost of a part."""
        row = next(r for r in part_rows if r["id"] == data.part_id)
        row["unit_cost"] = data.unit_cost
        return row

    def preview_assignment(actor: Any, data: AssignPartInput) -> dict[str, Any]:
        part = next((r["name"] for r in part_rows if r["id"] == data.part_id), None)
        visible = _project_scope(actor, project_rows)
        project = next((r["name"] for r in visible if r["id"] == data.project_id), None)
        return {"action": "assign", "part": part, "project": project}

    @mutation(
        name="assignPartToProject",
        input=AssignPartInput,
        manager="ProjectManager",
        preview=preview_assignment,
    )
    def assign_part_to_project(actor: Any, data: AssignPartInput) -> Any:
        """Add a part to a project."""
        visible = _project_scope(actor, project_rows)
        project = next((r for r in visible if r["id"] == data.project_id), None)
        if project is None:
            raise PermissionDeniedError("you cannot change that project")
        project["parts"].append(data.part_id)
        next(r for r in part_rows if r["id"] == data.part_id)["projects"].append(project["id"])
        return project

    def add_private_project(name: str, owner: Any, members: list[str]) -> Any:
        number = max(r["id"] for r in project_rows) + 1
        project_rows.append(
            {
                "id": number,
                "name": name,
                "is_public": False,
                "owner": owner.id,
                "parts": [part_ids[m] for m in members],
            }
        )
        for member in members:
            part_rows[part_ids[member] - 1]["projects"].append(number)
        return number

    def stored_part(name: str) -> Any:
        return next(r for r in part_rows if r["name"] == name)

    def project_parts(name: str) -> list[str]:
        project = next(r for r in project_rows if r["name"] == name)
        names = {r["id"]: r["name"] for r in part_rows}
        return sorted(names[i] for i in project["parts"])

    ids = {("MaterialManager", r["name"]): r["id"] for r in materials}
    ids |= {("PartManager", r["name"]): r["id"] for r in parts}
    ids |= {("ProjectManager", r["name"]): r["id"] for r in projects}
    registry = ManagerRegistry(
        [
            material_manager,
            supplier_manager,
            part_manager,
            project_manager,
            create_part,
            update_part_cost,
            assign_part_to_project,
        ]
    )
    return Catalog(
        kind="records",
        registry=registry,
        ids=ids,
        actor=SimpleActor(id=101),
        other_actor=SimpleActor(id=202),
        add_private_project=add_private_project,
        stored_part=stored_part,
        project_parts=project_parts,
    )


# -- Django ---------------------------------------------------------------------------


def load_django_rows() -> dict[tuple[str, str], Any]:
    """Create the catalog rows in the test database; returns their ids by (manager, name)."""
    # Django modules load only when a Django test runs (records tests need no settings).
    from tests.testapp.models import Material, Part, Project, Supplier  # noqa: PLC0415

    materials = {name: Material.objects.create(name=name, density=d) for name, d in MATERIALS}
    acme = Supplier.objects.create(name="Acme")
    parts = {}
    for part in PARTS:
        values = {k: v for k, v in part.items() if k not in ("material", "supplier")}
        parts[part["name"]] = Part.objects.create(
            material=materials[part["material"]],
            supplier=acme if part["supplier"] else None,
            **values,
        )
    projects = {}
    for name, members in PROJECTS:
        projects[name] = Project.objects.create(name=name, is_public=True)
        projects[name].parts.set([parts[m] for m in members])
    ids = {("MaterialManager", n): m.pk for n, m in materials.items()}
    ids |= {("PartManager", n): p.pk for n, p in parts.items()}
    ids |= {("ProjectManager", n): p.pk for n, p in projects.items()}
    return ids


def django_catalog() -> Catalog:
    """The catalog as the test app's Django-backed managers (needs database access)."""
    from django.contrib.auth.models import User  # noqa: PLC0415

    from tests.testapp.chat import build_registry  # noqa: PLC0415
    from tests.testapp.models import Part, Project  # noqa: PLC0415

    ids = load_django_rows()
    actor = User.objects.create(username="ada")
    other = User.objects.create(username="bob")

    def add_private_project(name: str, owner: Any, members: list[str]) -> Any:
        project = Project.objects.create(name=name, is_public=False, owner_id=owner.id)
        project.parts.set(Part.objects.filter(name__in=members))
        return project.pk

    def stored_part(name: str) -> dict[str, Any]:
        part = Part.objects.get(name=name)
        return {
            "id": part.pk,
            "name": part.name,
            "unit_cost": part.unit_cost,
            "material": part.material_id,
        }

    def project_parts(name: str) -> list[str]:
        project = Project.objects.get(name=name)
        return sorted(project.parts.values_list("name", flat=True))

    return Catalog(
        kind="django",
        registry=build_registry(),
        ids=ids,
        actor=actor,
        other_actor=other,
        add_private_project=add_private_project,
        stored_part=stored_part,
        project_parts=project_parts,
    )


def _django_configured() -> bool:
    # pytest-django sets Django up before any test module is collected, when it has settings.
    if "pytest_django.plugin" not in sys.modules:
        return False
    from django.conf import settings  # noqa: PLC0415 - only once pytest-django is loaded

    return settings.configured


PYTEST_DJANGO = _django_configured()
"""Whether this session runs the Django tests (pytest-django with Django settings)."""


def django_mark(**options: Any) -> Any:
    """`django_db(**options)` under pytest-django; without it, a skip saying what to run."""
    if PYTEST_DJANGO:
        return pytest.mark.django_db(**options)
    return pytest.mark.skip(
        reason="needs pytest-django with Django settings (--ds=tests.django_settings)"
    )


BACKENDS = ["records", pytest.param("django", marks=django_mark())]
"""Parameters of a fixture that runs a test once per backend."""


def open_catalog(request: pytest.FixtureRequest) -> Catalog:
    """The catalog for a fixture parametrized with BACKENDS."""
    return records_catalog() if request.param == "records" else django_catalog()


def wide_registry(managers: int = 200, fields: int = 20) -> ManagerRegistry:
    """`managers` records managers of `fields` declared fields each, linked in a ring."""
    kinds = ("string", "integer", "decimal", "float", "boolean", "date", "datetime")
    items = []
    for number in range(managers):
        declared = {
            f"field_{column:02d}": FieldSpec(
                kinds[column % len(kinds)], description=f"Column {column}.", decimal_places=2
            )
            for column in range(fields - 1)
        }
        declared["status"] = FieldSpec("enum", choices=("on", "off"))
        items.append(
            Manager.from_records(
                f"Wide{number:03d}Manager",
                records=[{"id": 1, "next": 1}],
                fields=declared,
                relations={
                    "next": RelationSpec(f"Wide{(number + 1) % managers:03d}Manager", to_many=False)
                },
                description=f"Synthetic data set number {number}.",
            )
        )
    return ManagerRegistry(items)
