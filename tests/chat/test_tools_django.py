"""What only the Django backend has: SQL query counts, the worker thread, transactions,
database timeouts, Django's own errors; and scoped to-one relations on both backends."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from chatomon.chat.tools import Toolset, ToolSettings
from chatomon.data import Manager, ManagerRegistry, SimpleActor, mutation
from tests.data.catalog import PYTEST_DJANGO, Catalog, django_catalog, django_mark, records_catalog
from tests.testapp.inputs import CreatePartInput

pytestmark = django_mark()

if PYTEST_DJANGO:
    from django.core.exceptions import PermissionDenied, ValidationError
    from django.db import connection, connections

    from tests.testapp import chat
    from tests.testapp.models import Material, Part


@pytest.fixture
def catalog(db: Any) -> Catalog:
    return django_catalog()


def many_parts(count: int) -> None:
    steel = Material.objects.get(name="Steel")
    Part.objects.bulk_create(
        Part(
            name=f"Spare {n:04d}",
            material=steel,
            unit_cost=Decimal("1.00"),
            created_at=datetime(2024, 1, 1, tzinfo=UTC),
        )
        for n in range(count)
    )


@pytest.mark.parametrize(
    ("args", "queries"),
    [
        ({"manager": "PartManager"}, 1),
        ({"manager": "PartManager", "fields": ["name", {"material": ["name"]}]}, 1),
        ({"manager": "PartManager", "fields": ["name", {"projects": ["name"]}]}, 2),
        (
            {
                "manager": "PartManager",
                "fields": [{"material": ["name"]}, {"projects": [{"parts": ["name"]}]}],
            },
            3,
        ),
        (
            {
                "manager": "ProjectManager",
                "fields": ["name", {"parts": ["name", {"material": ["name"]}]}],
            },
            2,
        ),
        (
            {
                "manager": "PartManager",
                "filters": {"projects__name": "Apollo", "material__name": "Cobalt"},
            },
            1,
        ),
    ],
)
def test_a_first_page_that_holds_every_match_costs_no_count(
    catalog: Catalog, django_assert_num_queries: Any, args: dict[str, Any], queries: int
) -> None:
    many_parts(60)
    with django_assert_num_queries(queries):
        result = catalog.call("query", {**args, "limit": 100})
    assert "data" in result, result
    assert result["total_count"] == len(result["data"]) and not result["has_more"]


def test_a_full_first_page_is_counted(catalog: Catalog, django_assert_num_queries: Any) -> None:
    many_parts(60)
    with django_assert_num_queries(2):
        result = catalog.call("query", {"manager": "PartManager", "limit": 10})
    assert len(result["data"]) == 10 and result["has_more"]
    assert result["total_count"] == Part.objects.count()


def test_a_later_page_is_counted_first(catalog: Catalog, django_assert_num_queries: Any) -> None:
    many_parts(60)
    with django_assert_num_queries(2):
        result = catalog.call("query", {"manager": "PartManager", "limit": 10, "offset": 10})
    assert len(result["data"]) == 10 and result["total_count"] == Part.objects.count()


def test_aggregates_are_one_query(catalog: Catalog, django_assert_max_num_queries: Any) -> None:
    many_parts(60)
    with django_assert_max_num_queries(1):
        result = catalog.call(
            "aggregate",
            {
                "manager": "PartManager",
                "group_by": ["material__name"],
                "metrics": [{"op": "sum", "field": "unit_cost"}],
            },
        )
    assert result["groups"][-1] == {
        "group": {"material__name": "Steel"},
        "values": {"sum_unit_cost": "60.25"},
    }


def test_an_empty_page_skips_the_page_query(
    catalog: Catalog, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(1):
        assert catalog.call("query", {"manager": "PartManager", "offset": 50})["data"] == []


@django_mark(transaction=True)
async def test_calls_from_the_event_loop_run_the_orm_in_a_worker_thread() -> None:
    loop_thread = threading.current_thread()
    seen: list[threading.Thread] = []

    class WatchedMaterials(chat.MaterialManager):
        name = "MaterialManager"

        def get_queryset(self, actor: Any) -> Any:
            seen.append(threading.current_thread())
            return super().get_queryset(actor)

    await Material.objects.acreate(name="Steel", density=7.8)
    toolset = Toolset(ManagerRegistry([WatchedMaterials]))
    try:
        result = await toolset.call("query", {"manager": "MaterialManager"}, toolset.context())
    finally:
        # The worker thread's connection would keep the test database from being dropped.
        await sync_to_async(connections.close_all)()
    assert [row["name"] for row in result["data"]] == ["Steel"]
    assert seen
    assert all(thread is not loop_thread for thread in seen)


@django_mark(transaction=True)
async def test_database_work_goes_through_the_toolsets_runner_and_nothing_else_does() -> None:
    ran: list[str] = []

    async def runner(function: Any, *args: Any, **kwargs: Any) -> Any:
        ran.append(args[0].get("manager", "?"))

        def unit() -> Any:
            try:
                return function(*args, **kwargs)
            finally:  # the worker's connection would keep the test database from going
                connections.close_all()

        return await sync_to_async(unit, thread_sensitive=False)()

    await Material.objects.acreate(name="Steel", density=7.8)
    toolset = Toolset(ManagerRegistry([chat.MaterialManager]), run_blocking=runner)
    try:
        schema = await toolset.call("search_managers", {"query": "material"}, toolset.context())
        rows = await toolset.call("query", {"manager": "MaterialManager"}, toolset.context())
    finally:  # acreate's connection, on asgiref's thread-sensitive worker
        await sync_to_async(connections.close_all)()
    assert schema.get("status") != "error"
    assert [row["name"] for row in rows["data"]] == ["Steel"]
    assert ran == ["MaterialManager"]  # the schema-only search needs no thread


def slow_parts_manager() -> type[Manager]:
    """PartManager whose rows take a while to read, on either database."""

    class SlowParts(chat.PartManager):
        name = "PartManager"

        def get_queryset(self, actor: Any) -> Any:
            if connection.vendor == "postgresql":
                return Part.objects.extra(where=["pg_sleep(0.2) IS NOT NULL"])
            return Part.objects.all()

    return SlowParts


def test_query_timeout_cancels_the_read_and_is_a_tool_error(catalog: Catalog) -> None:
    if connection.vendor == "sqlite":
        many_parts(3000)
    registry = ManagerRegistry([*chat.MANAGERS[:2], slow_parts_manager(), chat.ProjectManager])
    toolset = Toolset(
        registry,
        ToolSettings(query_timeout_seconds=0.000001 if connection.vendor == "sqlite" else 0.05),
    )
    call = async_to_sync(toolset.call)
    args = {"manager": "PartManager", "filters": {"name__icontains": "spare 29"}}
    result = call("query", args, toolset.context())
    assert result["status"] == "error"
    assert result["code"] == "query_timeout"
    assert "cancelled" in result["message"]
    aggregated = call("aggregate", {"manager": "PartManager"}, toolset.context())
    assert aggregated["code"] == "query_timeout"
    # The connection is fine afterwards, and the timeout did not outlive the call.
    assert Part.objects.filter(name="Bolt").exists()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"


def test_a_generous_timeout_lets_the_read_finish(catalog: Catalog) -> None:
    result = catalog.call(
        "query", {"manager": "PartManager"}, settings=ToolSettings(query_timeout_seconds=30)
    )
    assert result["total_count"] == 3
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"


def registry_with(function: Any) -> ManagerRegistry:
    declared = mutation(name="createPart", input=CreatePartInput, manager="PartManager")(function)
    return ManagerRegistry([*chat.MANAGERS, declared])


def run_create(registry: ManagerRegistry, actor: Any) -> Any:
    toolset = Toolset(registry, ToolSettings(allowed_mutations=["createPart"]))
    return async_to_sync(toolset.call)(
        "mutate", {"mutation": "createPart", "input": {"name": "Nut"}}, toolset.context(actor)
    )


def test_a_mutation_runs_in_a_transaction(catalog: Catalog) -> None:
    def create_then_refuse(actor: Any, data: CreatePartInput) -> Any:
        chat.create_part(actor, data)
        raise PermissionDenied("parts are frozen this week")

    result = run_create(registry_with(create_then_refuse), catalog.actor)
    assert result["code"] == "permission_denied"
    assert result["message"] == "parts are frozen this week"
    assert not Part.objects.filter(name="Nut").exists()


def test_django_validation_errors_are_invalid_input(catalog: Catalog) -> None:
    def refuse(actor: Any, data: CreatePartInput) -> Any:
        raise ValidationError("a part named Nut exists already")

    result = run_create(registry_with(refuse), catalog.actor)
    assert result["code"] == "invalid_input"
    assert result["errors"] == [{"field": "input", "message": "a part named Nut exists already"}]


def test_a_mutation_returning_something_else_is_shown_as_json(catalog: Catalog) -> None:
    result = run_create(
        registry_with(
            lambda actor, data: {"created": [data.name], "at": datetime(2024, 1, 1, tzinfo=UTC)}
        ),
        catalog.actor,
    )
    assert result["result"] == {"created": ["Nut"], "at": "2024-01-01T00:00:00+00:00"}


# -- scoped to-one relations, on both backends ---------------------------------------


def light_materials_records() -> ManagerRegistry:
    catalog = records_catalog()
    managers = dict(catalog.registry.managers)
    base = managers["MaterialManager"]
    light = Manager.from_records(
        "MaterialManager",
        records=base.records or [],
        fields=base.fields,
        description=base.description,
        scope=lambda actor, rows: [r for r in rows if r["density"] < 8],
    )
    managers["MaterialManager"] = light
    return ManagerRegistry([*managers.values()])


def light_materials_django() -> ManagerRegistry:
    class LightMaterials(chat.MaterialManager):
        name = "MaterialManager"

        def get_queryset(self, actor: Any) -> Any:
            return Material.objects.filter(density__lt=8)

    return ManagerRegistry(
        [LightMaterials, chat.SupplierManager, chat.PartManager, chat.ProjectManager]
    )


@pytest.mark.parametrize("backend", ["records", "django"])
def test_related_objects_outside_the_target_scope_are_left_out(
    backend: str, request: pytest.FixtureRequest, django_assert_max_num_queries: Any
) -> None:
    if backend == "django":
        request.getfixturevalue("catalog")
        registry = light_materials_django()
    else:
        registry = light_materials_records()
    toolset = Toolset(registry)
    call = async_to_sync(toolset.call)
    context = toolset.context(SimpleActor(id=1))
    with django_assert_max_num_queries(3):
        rows = call(
            "query",
            {"manager": "PartManager", "fields": ["name", "material"], "order_by": ["name"]},
            context,
        )["data"]
    assert [(r["name"], r["material"] and r["material"]["name"]) for r in rows] == [
        ("Bearing", "Aluminum"),
        ("Bolt", "Steel"),
        ("Gear", None),
    ]
    cobalt = call(
        "query", {"manager": "PartManager", "filters": {"material__name": "Cobalt"}}, context
    )
    assert cobalt["total_count"] == 0
    linked = call(
        "query", {"manager": "PartManager", "filters": {"material__isnull": False}}, context
    )
    assert linked["total_count"] == 3
    groups = call("aggregate", {"manager": "PartManager", "group_by": ["material__name"]}, context)[
        "groups"
    ]
    assert [g["group"]["material__name"] for g in groups] == ["Aluminum", "Steel", None]


def test_reverse_foreign_keys_are_prefetched_and_filterable(
    catalog: Catalog, django_assert_num_queries: Any
) -> None:
    class Materials(chat.MaterialManager):
        name = "MaterialManager"
        relations: ClassVar[dict[str, str]] = {"parts": "PartManager"}

    many_parts(20)
    toolset = Toolset(ManagerRegistry([Materials, *chat.MANAGERS[1:]]))
    call = async_to_sync(toolset.call)
    args = {
        "manager": "MaterialManager",
        "fields": ["name", {"parts": ["name"]}],
        "order_by": ["name"],
    }
    with django_assert_num_queries(2):  # the page and its prefetch: no count
        result = call("query", args, toolset.context())
    assert [(m["name"], len(m["parts"])) for m in result["data"]] == [
        ("Aluminum", 1),
        ("Cobalt", 1),
        ("Steel", 21),
    ]
    found = call(
        "query",
        {"manager": "MaterialManager", "filters": {"parts__name": "Gear"}},
        toolset.context(),
    )
    assert [m["name"] for m in found["data"]] == ["Cobalt"]
