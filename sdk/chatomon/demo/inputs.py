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


# A part or project is named by its id or by what people call it (P-1001, PRJ-101): a
# model asked to change "part P-1001" sends the number as part_id (Qwen2.5-Coder-1.5B did,
# every time, in the demo), and a lookup round before every write is one more chance to fail.


class UpdatePartCostInput(BaseModel):
    """Input of updatePartCost: a part's new unit cost."""

    part_id: int | str = Field(description="Id of the part, or its number (such as P-1001).")
    unit_cost: Decimal = Field(ge=0, max_digits=10, decimal_places=2, description="EUR.")


class AssignPartInput(BaseModel):
    """Input of assignPartToProject."""

    part_id: int | str = Field(description="Id of the part, or its number (such as P-1001).")
    project_id: int | str = Field(description="Id of the project, or its code (such as PRJ-101).")
