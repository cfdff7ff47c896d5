"""The demo data set: a deterministic small manufacturing company, seeded idempotently.

`seed()` generates the same rows on every run (a fixed random seed, fixed dates) and creates
only those whose natural key (material and supplier name, part number, project code) is
missing, so re-running keeps everything, including what users changed since.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction

from .models import Material, Part, Project, Supplier

__all__ = ["SeedSummary", "seed"]

RANDOM_SEED = 20_261_202
"""Fixed, so every machine seeds the same company."""
EPOCH = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
PART_COUNT = 240
PROJECT_COUNT = 36

# name, category, density g/cm³, EUR per kg
MATERIALS: Sequence[tuple[str, str, float, str]] = (
    ("Steel S235", "metal", 7.85, "0.95"),
    ("Stainless steel 1.4301", "metal", 7.9, "3.20"),
    ("Aluminium 6061", "metal", 2.7, "3.80"),
    ("Aluminium 7075", "metal", 2.81, "6.40"),
    ("Brass CuZn39", "metal", 8.47, "7.10"),
    ("Copper Cu-ETP", "metal", 8.96, "9.30"),
    ("Titanium grade 5", "metal", 4.43, "28.00"),
    ("ABS", "polymer", 1.05, "2.40"),
    ("Polyamide PA6", "polymer", 1.14, "3.10"),
    ("POM", "polymer", 1.41, "3.60"),
    ("PEEK", "polymer", 1.32, "85.00"),
    ("Carbon fibre laminate", "composite", 1.6, "42.00"),
    ("Glass fibre laminate", "composite", 1.9, "9.50"),
    ("Alumina ceramic", "ceramic", 3.95, "18.00"),
)
SUPPLIER_STEMS = ("Nordic", "Alpine", "Rhine", "Baltic", "Iberia", "Danube", "Atlas", "Vega")
SUPPLIER_TRADES = ("Metalworks", "Polymers", "Precision", "Components", "Fasteners", "Castings")
COUNTRIES = ("Germany", "Sweden", "Austria", "Poland", "Spain", "Italy", "Czechia", "France")
PART_KINDS = (
    "Bracket", "Housing", "Shaft", "Flange", "Bushing", "Gear", "Spacer", "Cover", "Hinge",
    "Clamp", "Valve body", "Pulley", "Bearing seat", "Mounting plate", "Connector", "Lever",
)  # fmt: skip
PART_TRAITS = ("small", "large", "reinforced", "slotted", "threaded", "lightweight", "sealed")
CUSTOMERS = (
    "Hansa Robotics", "Meridian Rail", "Solace Medical", "Tern Aerospace", "Kestrel Marine",
    "Orbis Energy", "Lumen Labs", "Verdant Farms", "Quarry & Co", "Helix Automotive",
)  # fmt: skip
PROJECT_WORDS = ("Falcon", "Harbor", "Summit", "Ember", "Aurora", "Granite", "Tide", "Comet")
PROJECT_THINGS = ("gripper", "bogie", "pump", "drone arm", "winch", "turbine mount", "sorter")
PRIVATE_EVERY = 9
"""Every ninth project is private to the seeding owner (the demo's staff user)."""


@dataclass
class SeedSummary:
    """How many rows of each kind a seeding run created and how many exist."""

    created: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)

    def lines(self) -> Iterator[str]:
        """One log line per kind: `parts: 240 (240 new)`."""
        for kind, total in self.total.items():
            yield f"{kind}: {total} ({self.created.get(kind, 0)} new)"


def _materials(summary: SeedSummary) -> list[Material]:
    rows = []
    for name, category, density, cost in MATERIALS:
        row, created = Material.objects.get_or_create(
            name=name,
            defaults={"category": category, "density": density, "cost_per_kg": Decimal(cost)},
        )
        summary.created["materials"] = summary.created.get("materials", 0) + created
        rows.append(row)
    return rows


def _suppliers(summary: SeedSummary, rng: random.Random) -> list[Supplier]:
    rows = []
    for index, (stem, trade) in enumerate(
        (stem, trade) for stem in SUPPLIER_STEMS for trade in SUPPLIER_TRADES[::2]
    ):
        name = f"{stem} {trade}"
        defaults = {
            "country": COUNTRIES[index % len(COUNTRIES)],
            "rating": rng.randint(2, 5),
            "lead_time_days": rng.choice((5, 7, 10, 14, 21, 30, 45)),
            "contact_email": f"orders@{stem.lower()}-{trade.lower()}.example",
        }
        row, created = Supplier.objects.get_or_create(name=name, defaults=defaults)
        summary.created["suppliers"] = summary.created.get("suppliers", 0) + created
        rows.append(row)
    return rows


def _part_values(
    index: int, rng: random.Random, materials: Sequence[Material], suppliers: Sequence[Supplier]
) -> dict[str, Any]:
    material = rng.choice(materials)
    weight = round(rng.uniform(0.02, 6.0), 3)
    status = rng.choices(("active", "draft", "retired"), weights=(7, 2, 1))[0]
    created_at = EPOCH + timedelta(days=index * 2, hours=rng.randint(0, 9))
    kind = PART_KINDS[index % len(PART_KINDS)]
    trait = PART_TRAITS[(index // len(PART_KINDS)) % len(PART_TRAITS)]
    cost = Decimal(str(weight)) * material.cost_per_kg * Decimal(rng.randint(3, 12))
    return {
        "name": f"{kind}, {trait}",
        "material": material,
        "supplier": rng.choice(suppliers) if rng.random() < 0.8 else None,
        "unit_cost": (cost + Decimal("0.50")).quantize(Decimal("0.01")),
        "weight_kg": weight,
        "status": status,
        "quantity": 0 if status == "retired" else rng.randint(0, 400),
        "released_on": None if status == "draft" else created_at.date() + timedelta(days=30),
        "created_at": created_at,
    }


def _parts(
    summary: SeedSummary,
    rng: random.Random,
    materials: Sequence[Material],
    suppliers: Sequence[Supplier],
) -> list[Part]:
    rows = []
    for index in range(PART_COUNT):
        # Values are drawn for every part, created or not, so the sequence never shifts.
        values = _part_values(index, rng, materials, suppliers)
        row, created = Part.objects.get_or_create(number=f"P-{1001 + index}", defaults=values)
        summary.created["parts"] = summary.created.get("parts", 0) + created
        rows.append(row)
    return rows


def _project_values(index: int, rng: random.Random, owner: Any) -> dict[str, Any]:
    starts_on = date(2025, 2, 3) + timedelta(weeks=index * 2)
    word = PROJECT_WORDS[index % len(PROJECT_WORDS)]
    thing = PROJECT_THINGS[index % len(PROJECT_THINGS)]
    private = index % PRIVATE_EVERY == PRIVATE_EVERY - 1
    return {
        "name": f"{word} {thing}",
        "customer": CUSTOMERS[index % len(CUSTOMERS)],
        "status": rng.choice(("planned", "active", "active", "on_hold", "done")),
        "budget": Decimal(rng.randrange(20_000, 400_000, 500)),
        "starts_on": starts_on,
        "due_on": starts_on + timedelta(weeks=rng.randint(8, 40)),
        "is_public": not private,
        "owner": owner if private else None,
    }


def _projects(summary: SeedSummary, rng: random.Random, parts: Sequence[Part], owner: Any) -> None:
    for index in range(PROJECT_COUNT):
        values = _project_values(index, rng, owner)
        used = rng.sample(list(parts), rng.randint(6, 24))
        row, created = Project.objects.get_or_create(code=f"PRJ-{101 + index}", defaults=values)
        if created:
            row.parts.set(used)
            summary.created["project parts"] = summary.created.get("project parts", 0) + len(used)
        summary.created["projects"] = summary.created.get("projects", 0) + created


@transaction.atomic
def seed(owner: Any = None) -> SeedSummary:
    """Create the demo rows that are missing; private projects belong to `owner`."""
    rng = random.Random(RANDOM_SEED)  # noqa: S311 - demo data, not security
    summary = SeedSummary()
    materials = _materials(summary)
    suppliers = _suppliers(summary, rng)
    parts = _parts(summary, rng, materials, suppliers)
    _projects(summary, rng, parts, owner)
    for kind, model in (
        ("materials", Material),
        ("suppliers", Supplier),
        ("parts", Part),
        ("projects", Project),
    ):
        summary.total[kind] = model.objects.count()
    summary.total["project parts"] = Project.parts.through.objects.count()
    return summary
