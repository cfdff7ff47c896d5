"""The demo company's data: materials, suppliers, parts and the projects that use them.

Every row has a natural key (a name or a code) so that seeding can tell what exists.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models


class Material(models.Model):
    """What parts are made of."""

    class Category(models.TextChoices):
        """Kinds of material."""

        METAL = "metal"
        POLYMER = "polymer"
        COMPOSITE = "composite"
        CERAMIC = "ceramic"

    name: models.CharField[str, str] = models.CharField(
        max_length=100, unique=True, help_text="Material name."
    )
    category: models.CharField[str, str] = models.CharField(max_length=20, choices=Category.choices)
    density: models.FloatField[float, float] = models.FloatField(help_text="Density in g/cm³.")
    cost_per_kg: models.DecimalField[Decimal, Decimal] = models.DecimalField(
        max_digits=8, decimal_places=2, help_text="Purchase price in EUR per kilogram."
    )

    def __str__(self) -> str:
        return str(self.name)


class Supplier(models.Model):
    """A company the parts are bought from."""

    name: models.CharField[str, str] = models.CharField(max_length=100, unique=True)
    country: models.CharField[str, str] = models.CharField(max_length=60)
    rating: models.IntegerField[int, int] = models.IntegerField(
        help_text="Quality rating from 1 (poor) to 5 (excellent)."
    )
    lead_time_days: models.IntegerField[int, int] = models.IntegerField(
        help_text="Usual delivery time in days."
    )
    contact_email: models.EmailField[str, str] = models.EmailField(
        help_text="Not exposed to the assistant."
    )

    def __str__(self) -> str:
        return str(self.name)


class Part(models.Model):
    """A designed or purchased component."""

    class Status(models.TextChoices):
        """Where a part is in its life."""

        DRAFT = "draft"
        ACTIVE = "active"
        RETIRED = "retired"

    number: models.CharField[str, str] = models.CharField(
        max_length=20, unique=True, help_text="Part number, such as P-1001."
    )
    name: models.CharField[str, str] = models.CharField(max_length=100, help_text="Part name.")
    material: models.ForeignKey[Material | None, Material | None] = models.ForeignKey(
        Material, null=True, blank=True, on_delete=models.PROTECT, related_name="parts"
    )
    supplier: models.ForeignKey[Supplier | None, Supplier | None] = models.ForeignKey(
        Supplier, null=True, blank=True, on_delete=models.SET_NULL, related_name="parts"
    )
    unit_cost: models.DecimalField[Decimal, Decimal] = models.DecimalField(
        max_digits=10, decimal_places=2, default=Decimal("0.00"), help_text="Cost per unit in EUR."
    )
    weight_kg: models.FloatField[float | None, float | None] = models.FloatField(
        null=True, blank=True, verbose_name="weight in kilograms"
    )
    status: models.CharField[str, str] = models.CharField(
        max_length=10, choices=Status.choices, default=Status.ACTIVE
    )
    quantity: models.IntegerField[int, int] = models.IntegerField(
        default=0, help_text="Units in stock."
    )
    released_on: models.DateField[date | None, date | None] = models.DateField(
        null=True, blank=True
    )
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.number} {self.name}"


class Project(models.Model):
    """A customer project and the parts it uses; private ones are visible to their owner."""

    class Status(models.TextChoices):
        """Where a project stands."""

        PLANNED = "planned"
        ACTIVE = "active"
        ON_HOLD = "on_hold"
        DONE = "done"

    code: models.CharField[str, str] = models.CharField(
        max_length=20, unique=True, help_text="Project code, such as PRJ-101."
    )
    name: models.CharField[str, str] = models.CharField(max_length=100, help_text="Project name.")
    customer: models.CharField[str, str] = models.CharField(max_length=100)
    status: models.CharField[str, str] = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PLANNED
    )
    budget: models.DecimalField[Decimal, Decimal] = models.DecimalField(
        max_digits=12, decimal_places=2, help_text="Budget in EUR."
    )
    starts_on: models.DateField[date, date] = models.DateField()
    due_on: models.DateField[date, date] = models.DateField()
    parts = models.ManyToManyField(Part, related_name="projects", blank=True)
    is_public: models.BooleanField[bool, bool] = models.BooleanField(default=True)
    owner: models.ForeignKey[Any, Any] = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    def __str__(self) -> str:
        return f"{self.code} {self.name}"
