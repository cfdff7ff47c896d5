"""The inputs of the demo's three mutations (pydantic models the mutate tool validates)."""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, Field


class CreatePartInput(BaseModel):
    """Input of createPart: a new part; its number is the next free one."""

    name: str = Field(min_length=1, max_length=100, description="Part name.")
    material_id: int | None = Field(default=None, description="Id of its material.")
    supplier_id: int | None = Field(default=None, description="Id of its supplier.")
    unit_cost: Decimal = Field(
        default=Decimal("0.00"), ge=0, max_digits=10, decimal_places=2, description="EUR."
    )
    weight_kg: float | None = Field(default=None, gt=0, description="Weight in kilograms.")


class UpdatePartCostInput(BaseModel):
    """Input of updatePartCost: a part's new unit cost."""

    part_id: int = Field(description="Id of the part.")
    unit_cost: Decimal = Field(ge=0, max_digits=10, decimal_places=2, description="EUR.")


class AssignPartInput(BaseModel):
    """Input of assignPartToProject."""

    part_id: int = Field(description="Id of the part.")
    project_id: int = Field(description="Id of the project.")
