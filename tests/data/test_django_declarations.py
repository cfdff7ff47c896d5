"""Django-backed managers: types, descriptions and relations from the model; mistakes."""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import pytest

from chatomon.data import DataConfigurationError, Manager, ManagerRegistry, autodiscover, registry
from tests.data.catalog import PYTEST_DJANGO, django_mark

pytestmark = django_mark()

if PYTEST_DJANGO:
    from django.contrib.auth.models import User
    from django.db import models

    from chatomon.data.django_schema import model_field_type
    from tests.testapp import chat
    from tests.testapp.models import Gadget, Material, Part, Project


def problems(*items: Any) -> tuple[str, ...]:
    with pytest.raises(DataConfigurationError) as caught:
        ManagerRegistry(items).validate()
    return caught.value.problems


def test_types_descriptions_and_choices_come_from_the_model() -> None:
    schema = chat.build_registry().schema_index().get("PartManager")
    fields = schema.fields
    assert fields["id"].type == "integer"
    assert fields["name"].description == "Part name."
    assert fields["weight_kg"].description == "Weight in kilograms."
    assert fields["status"].choices == ("draft", "active", "retired")
    assert fields["unit_cost"].decimal_places == 2
    assert fields["released_on"].nullable is True
    assert fields["in_stock"].description == ""
    relations = schema.relations
    assert (relations["material"].to_many, relations["projects"].to_many) == (False, True)
    assert "supplier" not in relations


def test_undeclared_fields_default_to_the_concrete_model_fields() -> None:
    class Parts(Manager):
        model = Part
        chat_exposed = True

    schema = ManagerRegistry([Parts]).schema_index().get("Parts")
    assert list(schema.fields) == [
        "id",
        "name",
        "unit_cost",
        "weight_kg",
        "status",
        "in_stock",
        "released_on",
        "created_at",
        "quantity",
    ]
    assert schema.fields["weight_kg"].description == "weight in kilograms"
    assert set(schema.filters) == set(schema.fields)


def test_reverse_foreign_keys_and_integer_choices() -> None:
    class Materials(Manager):
        model = Material
        relations: ClassVar[dict[str, str]] = {"parts": "Parts"}
        chat_exposed = True

    class Parts(Manager):
        model = Part
        fields: ClassVar[list[str]] = ["name"]
        chat_exposed = True

    class Gadgets(Manager):
        model = Gadget
        fields: ClassVar[list[str]] = ["label", "code", "kind"]
        chat_exposed = True

    index = ManagerRegistry([Materials, Parts, Gadgets]).schema_index()
    parts = index.get("Materials").relations["parts"]
    assert (parts.to_many, parts.accessor) == (True, "parts")
    gadget = index.get("Gadgets").fields
    assert (gadget["code"].type, gadget["kind"].type, gadget["kind"].choices) == (
        "string",
        "enum",
        (1, 2),
    )


@pytest.mark.parametrize(
    ("declaration", "fragment"),
    [
        ({"fields": ["nmae"]}, "Part has no field 'nmae'; did you mean 'name'? (fields: "),
        ({"fields": ["material"]}, "'material' is a relation; list it in relations only"),
        (
            {"relations": {"materal": "MaterialManager"}},
            "Part has no relation 'materal'; did you mean 'material'?",
        ),
        ({"relations": {"name": "MaterialManager"}}, "Part.name is not a relation to a model"),
        (
            {"relations": {"material": "ProjectManager"}},
            "leads to Material rows, but ProjectManager manages Project",
        ),
        (
            {"filters": ["nmae"]},
            "'nmae' is not one of its fields or relations; did you mean 'name'?",
        ),
    ],
)
def test_declaration_mistakes_are_precise(declaration: dict[str, Any], fragment: str) -> None:
    broken = type("PartManager", (chat.PartManager,), {"name": "PartManager", **declaration})
    found = problems(chat.MaterialManager, chat.SupplierManager, broken, chat.ProjectManager)
    assert any(fragment in p and p.startswith("PartManager") for p in found), found


def test_unsupported_field_types_are_named() -> None:
    class Gadgets(Manager):
        model = Gadget
        fields: ClassVar[list[str]] = ["specs", "lead_time"]

    assert problems(Gadgets) == (
        "Gadgets.fields: Gadget.specs is a JSONField, which chat tools cannot read (supported: "
        "text, numbers, booleans, dates, datetimes, choices)",
        "Gadgets.fields: Gadget.lead_time is a DurationField, which chat tools cannot read "
        "(supported: text, numbers, booleans, dates, datetimes, choices)",
    )


def test_relations_between_backends_are_refused() -> None:
    materials = Manager.from_records("MaterialManager", records=[{"name": "Steel"}])
    parts = Manager.from_records(
        "PartManager", records=[{"name": "Bolt", "m": 1}], relations={"m": "ProjectManager"}
    )
    found = problems(materials, parts, chat.ProjectManager)
    assert found == (
        "PartManager.relations['m']: ProjectManager is a django manager; a records manager "
        "relates to records managers only",
        "ProjectManager.relations['parts']: PartManager is a records manager; a django manager "
        "relates to django managers only",
    )
    mixed = problems(materials, chat.SupplierManager, chat.PartManager, chat.ProjectManager)
    assert mixed == (
        "PartManager.relations['material']: MaterialManager is a records manager; a django "
        "manager relates to django managers only",
    )


@pytest.mark.parametrize(
    ("field", "kind"),
    [
        ("BooleanField", "boolean"),
        ("DateTimeField", "datetime"),
        ("DateField", "date"),
        ("DecimalField", "decimal"),
        ("FloatField", "float"),
        ("IntegerField", "integer"),
        ("BigIntegerField", "integer"),
        ("PositiveSmallIntegerField", "integer"),
        ("BigAutoField", "integer"),
        ("CharField", "string"),
        ("TextField", "string"),
        ("EmailField", "string"),
        ("SlugField", "string"),
        ("UUIDField", "string"),
        ("JSONField", None),
        ("BinaryField", None),
        ("TimeField", None),
    ],
)
def test_model_field_types(field: str, kind: str | None) -> None:
    options = {"max_digits": 5, "decimal_places": 2} if field == "DecimalField" else {}
    if field == "BigAutoField":
        options = {"primary_key": True}
    assert model_field_type(getattr(models, field)(**options)) == kind


def test_autodiscover_imports_each_app_chat_module() -> None:
    assert autodiscover() is registry
    assert "tests.testapp.chat" in sys.modules
    for name in ("MaterialManager", "PartManager", "ProjectManager", "SupplierManager"):
        assert registry.managers[name] is getattr(chat, name)
    assert set(registry.mutations) >= {"createPart", "updatePartCost", "assignPartToProject"}
    assert autodiscover() is registry  # a second run registers nothing twice
    assert registry.schema_index().names == ("MaterialManager", "PartManager", "ProjectManager")


def test_default_get_queryset_reads_every_row(db: Any) -> None:
    Project.objects.create(name="Apollo")
    Project.objects.create(name="Hidden", is_public=False)

    class AllProjects(Manager):
        model = Project

    assert AllProjects().get_queryset(None).count() == 2
    assert AllProjects.has_custom_scope() is False
    assert chat.ProjectManager.has_custom_scope() is True
    owner = User.objects.create(username="ada")
    Project.objects.create(name="Mine", is_public=False, owner=owner)
    assert chat.ProjectManager().get_queryset(owner).count() == 2
