"""What the records backend adds: live lists, scopes, stored-value quirks, dangling ids."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from chatomon.chat.tools import Toolset
from chatomon.data import Manager, ManagerRegistry, RelationSpec, SimpleActor


def call(registry: ManagerRegistry, tool: str, args: dict[str, Any], actor: Any = None) -> Any:
    toolset = Toolset(registry)
    return toolset.call_sync(tool, args, toolset.context(actor))


def test_string_lookups_are_case_sensitive_like_postgresql() -> None:
    registry = ManagerRegistry(
        [Manager.from_records("TagManager", records=[{"name": "Alpha"}, {"name": "alpha"}])]
    )
    found = call(registry, "query", {"manager": "TagManager", "filters": {"name__contains": "Al"}})
    assert [row["name"] for row in found["data"]] == ["Alpha"]
    found = call(registry, "query", {"manager": "TagManager", "filters": {"name__icontains": "AL"}})
    assert found["total_count"] == 2


def test_naive_stored_datetimes_read_as_utc() -> None:
    rows = [{"at": datetime(2024, 1, 1, 12)}, {"at": datetime(2024, 1, 2, 12, tzinfo=UTC)}]
    registry = ManagerRegistry([Manager.from_records("LogManager", records=rows)])
    found = call(
        registry,
        "query",
        {"manager": "LogManager", "filters": {"at__lt": "2024-01-01T13:00:00+00:00"}},
    )
    assert found["total_count"] == 1
    ordered = call(registry, "query", {"manager": "LogManager", "order_by": ["-at"]})
    assert [row["id"] for row in ordered["data"]] == [2, 1]


def test_records_are_read_live_and_dangling_references_are_skipped() -> None:
    materials = Manager.from_records("MaterialManager", records=[{"name": "Steel"}])
    parts = Manager.from_records(
        "PartManager",
        records=[{"name": "Bolt", "material": 9}, {"name": "Nut", "material": None}],
        relations={"material": RelationSpec("MaterialManager", to_many=False)},
    )
    registry = ManagerRegistry([materials, parts])
    result = call(registry, "query", {"manager": "PartManager", "fields": ["name", "material"]})
    assert [row["material"] for row in result["data"]] == [None, None]
    (parts.records or []).append({"id": 3, "name": "Washer", "material": 1})
    result = call(
        registry, "query", {"manager": "PartManager", "filters": {"material__name": "Steel"}}
    )
    assert [row["name"] for row in result["data"]] == ["Washer"]


def test_a_scope_callable_limits_rows_per_actor() -> None:
    notes = Manager.from_records(
        "NoteManager",
        records=[{"text": "mine", "owner": 1}, {"text": "theirs", "owner": 2}],
        fields=["text"],
        scope=lambda actor, rows: [r for r in rows if actor is not None and r["owner"] == actor.id],
    )
    registry = ManagerRegistry([notes])
    assert call(registry, "query", {"manager": "NoteManager"})["total_count"] == 0
    mine = call(registry, "query", {"manager": "NoteManager"}, SimpleActor(id=1))
    assert [row["text"] for row in mine["data"]] == ["mine"]
    counted = call(registry, "aggregate", {"manager": "NoteManager"}, SimpleActor(id=2))
    assert counted["groups"][0]["values"]["count"] == 1


def test_decimal_places_are_inferred_and_sums_stay_exact() -> None:
    rows = [{"price": Decimal("0.1")}, {"price": Decimal("0.20")}, {"price": Decimal("0.3")}]
    registry = ManagerRegistry([Manager.from_records("PriceManager", records=rows)])
    result = call(
        registry,
        "aggregate",
        {
            "manager": "PriceManager",
            "metrics": [{"op": "sum", "field": "price"}, {"op": "avg", "field": "price"}],
        },
    )
    assert result["groups"][0]["values"] == {"sum_price": "0.60", "avg_price": "0.200000"}
    listed = call(registry, "query", {"manager": "PriceManager"})
    assert [row["price"] for row in listed["data"]] == ["0.10", "0.20", "0.30"]
