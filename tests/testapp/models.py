"""The toy data as Django models: materials, parts, projects and (hidden) suppliers."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models


class Supplier(models.Model):
    """Who sells a part; its manager is not chat-exposed."""

    name: models.CharField[str, str] = models.CharField(max_length=100)

    def __str__(self) -> str:
        return str(self.name)


class Material(models.Model):
    """What parts are made of."""

    name: models.CharField[str, str] = models.CharField(max_length=100, help_text="Material name.")
    density: models.FloatField[float, float] = models.FloatField(help_text="Density in g/cm³.")

    def __str__(self) -> str:
        return str(self.name)


class Part(models.Model):
    """A designed or purchased component."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        ACTIVE = "active"
        RETIRED = "retired"

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
    in_stock: models.BooleanField[bool, bool] = models.BooleanField(default=True)
    released_on: models.DateField[date | None, date | None] = models.DateField(
        null=True, blank=True
    )
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    quantity: models.IntegerField[int, int] = models.IntegerField(default=0)

    def __str__(self) -> str:
        return str(self.name)


class Project(models.Model):
    """A project and the parts it uses; private ones are visible to their owner only."""

    name: models.CharField[str, str] = models.CharField(max_length=100, help_text="Project name.")
    parts = models.ManyToManyField(Part, related_name="projects", blank=True)
    is_public: models.BooleanField[bool, bool] = models.BooleanField(default=True)
    owner: models.ForeignKey[Any, Any] = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )

    def __str__(self) -> str:
        return str(self.name)


class Gadget(models.Model):
    """Fields the chat tools cannot read, for the declaration tests."""

    label: models.CharField[str, str] = models.CharField(max_length=50)
    specs: models.JSONField[Any, Any] = models.JSONField(default=dict)
    lead_time: models.DurationField[Any, Any] = models.DurationField(null=True)
    code: models.UUIDField[Any, Any] = models.UUIDField(null=True)
    kind: models.IntegerField[int, int] = models.IntegerField(
        choices=[(1, "small"), (2, "large")], default=1
    )
