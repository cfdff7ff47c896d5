"""Ready-made registries for tests, evals and demos; each call returns a fresh one.

- `toy_registry()`: materials, parts and projects, small enough to read at a glance.
  MaterialManager {name, density}: Steel 7.8, Aluminum 2.7, Cobalt 8.9; PartManager
  {name, material}: Bolt → Steel, Bearing → Aluminum, Gear → Cobalt; ProjectManager
  {name, parts}: Apollo → [Gear], Mercury → [Bearing].
- `large_registry()`: 150 synthetic managers ("WarehouseOrderManager", ...), each with
  {name, code, status} and three records; a `next_item` relation links them in chains of
  nine managers (eight relations), so the longest relation path is 8.

>>> index = toy_registry().schema_index()
>>> index.names
('MaterialManager', 'PartManager', 'ProjectManager')
>>> index.find_path("ProjectManager", "MaterialManager").relations
('parts', 'material')
"""

from __future__ import annotations

from chatomon.data.fields import FieldSpec, RelationSpec
from chatomon.data.manager import Manager
from chatomon.data.registration import ManagerRegistry

__all__ = ["CHAIN_LENGTH", "LARGE_DOMAINS", "LARGE_OBJECTS", "large_registry", "toy_registry"]

CHAIN_LENGTH = 8

LARGE_DOMAINS = (
    "Warehouse",
    "Sales",
    "Fleet",
    "Clinic",
    "School",
    "Farm",
    "Studio",
    "Library",
    "Port",
    "Mine",
)
LARGE_OBJECTS = (
    "Order",
    "Asset",
    "Shift",
    "Ticket",
    "Batch",
    "Contract",
    "Permit",
    "Route",
    "Audit",
    "Sensor",
    "Invoice",
    "Visit",
    "Lease",
    "Claim",
    "Survey",
)
STATUSES = ("active", "paused", "archived")


def toy_registry() -> ManagerRegistry:
    """Materials, parts and projects as records managers."""
    materials = Manager.from_records(
        "MaterialManager",
        description="Materials that parts are made of.",
        records=[
            {"id": 1, "name": "Steel", "density": 7.8},
            {"id": 2, "name": "Aluminum", "density": 2.7},
            {"id": 3, "name": "Cobalt", "density": 8.9},
        ],
        fields={
            "name": FieldSpec("string", description="Material name."),
            "density": FieldSpec("float", description="Density in g/cm³."),
        },
    )
    parts = Manager.from_records(
        "PartManager",
        description="Designed or purchased components.",
        records=[
            {"id": 1, "name": "Bolt", "material": 1},
            {"id": 2, "name": "Bearing", "material": 2},
            {"id": 3, "name": "Gear", "material": 3},
        ],
        fields={"name": FieldSpec("string", description="Part name.")},
        relations={"material": RelationSpec("MaterialManager", to_many=False)},
    )
    projects = Manager.from_records(
        "ProjectManager",
        description="Projects and the parts they use.",
        records=[
            {"id": 1, "name": "Apollo", "parts": [3]},
            {"id": 2, "name": "Mercury", "parts": [2]},
        ],
        fields={"name": FieldSpec("string", description="Project name.")},
        relations={"parts": RelationSpec("PartManager", to_many=True)},
    )
    return ManagerRegistry([materials, parts, projects])


def _large_manager(number: int, domain: str, thing: str, total: int) -> type[Manager]:
    code = (domain[:3] + thing[:3]).upper()
    linked = (number + 1) % (CHAIN_LENGTH + 1) != 0 and number + 1 < total
    next_name = _large_name(number + 1) if linked else None
    records = [
        {
            "id": row,
            "name": f"{domain} {thing.lower()} {row}",
            "code": f"{code}-{row:03d}",
            "status": STATUSES[(number + row) % len(STATUSES)],
            **({"next_item": row} if next_name else {}),
        }
        for row in (1, 2, 3)
    ]
    return Manager.from_records(
        _large_name(number),
        description=f"{_plural(thing)} of the {domain.lower()} domain.",
        records=records,
        fields={
            "name": "string",
            "code": FieldSpec("string", description="Short reference code."),
            "status": FieldSpec("enum", choices=STATUSES),
        },
        relations={"next_item": RelationSpec(next_name, to_many=False)} if next_name else {},
    )


def _plural(word: str) -> str:
    return word + ("es" if word.endswith(("ch", "sh", "s", "x")) else "s")


def _large_name(number: int) -> str:
    domain = LARGE_DOMAINS[number // len(LARGE_OBJECTS)]
    return f"{domain}{LARGE_OBJECTS[number % len(LARGE_OBJECTS)]}Manager"


def large_registry() -> ManagerRegistry:
    """150 synthetic records managers, linked by `next_item` in chains of eight relations."""
    total = len(LARGE_DOMAINS) * len(LARGE_OBJECTS)
    return ManagerRegistry(
        _large_manager(
            number,
            LARGE_DOMAINS[number // len(LARGE_OBJECTS)],
            LARGE_OBJECTS[number % len(LARGE_OBJECTS)],
            total,
        )
        for number in range(total)
    )
