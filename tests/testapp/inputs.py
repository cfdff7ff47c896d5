"""The mutation inputs of the test app, free of Django so records tests can share them."""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, Field


class CreatePartInput(BaseModel):
    """Input of createPart."""

    name: str = Field(min_length=1, max_length=100)
    material_id: int | None = None
    unit_cost: Decimal = Field(default=Decimal("0.00"), ge=0, max_digits=10, decimal_places=2)


class UpdatePartCostInput(BaseModel):
    """Input of updatePartCost."""

    part_id: int
    unit_cost: Decimal = Field(ge=0, max_digits=10, decimal_places=2)


class AssignPartInput(BaseModel):
    """Input of assignPartToProject."""

    part_id: int
    project_id: int
