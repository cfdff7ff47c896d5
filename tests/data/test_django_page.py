"""The Django backend's lean count and value pages give what the ORM's own calls give."""

from __future__ import annotations

from typing import Any

import pytest

from tests.data.catalog import PYTEST_DJANGO, django_catalog, django_mark

pytestmark = django_mark()

if PYTEST_DJANGO:
    from django.db.models import QuerySet

    from chatomon.data import SimpleActor
    from chatomon.data.django_backend import render_object, with_selection
    from chatomon.data.django_page import count_rows, scalar_page
    from chatomon.data.query import QuerySpec, parse_query
    from tests.testapp.chat import build_registry
    from tests.testapp.models import Part, Project

QUERIES = [
    {"manager": "PartManager"},
    {"manager": "PartManager", "order_by": ["-unit_cost"], "limit": 2, "offset": 1},
    {"manager": "PartManager", "fields": ["created_at", "status", "unit_cost", "released_on"]},
    {"manager": "PartManager", "filters": {"projects__name__icontains": "o"}, "fields": ["name"]},
    {"manager": "ProjectManager", "filters": {"parts__name__in": ["Gear", "Bearing", "Bolt"]}},
    {"manager": "MaterialManager", "order_by": ["-density"], "fields": ["density", "name"]},
]


def spec_and_queryset(args: dict[str, Any], actor: Any) -> tuple[QuerySpec, QuerySet[Any]]:
    """The validated spec and the ordered queryset `DjangoBackend.run_query` builds."""
    from chatomon.data.django_backend import _order_expression  # noqa: PLC0415
    from chatomon.data.django_conditions import apply_conditions  # noqa: PLC0415

    index = build_registry().schema_index()
    spec = parse_query(index, args.pop("manager"), **args, max_results=50)
    filtered, crosses_many = apply_conditions(
        spec.schema.manager.get_queryset(actor), spec.conditions, actor
    )
    if crosses_many:
        filtered = filtered.distinct()
    return spec, filtered.order_by(*(_order_expression(o) for o in spec.order_by))


@pytest.mark.parametrize("args", QUERIES)
def test_value_pages_and_counts_match_model_instances_and_queryset_count(
    db: Any, args: dict[str, Any]
) -> None:
    django_catalog()
    actor = SimpleActor(id=1, is_authenticated=True)
    spec, ordered = spec_and_queryset(dict(args), actor)
    page = with_selection(ordered, spec.selection, actor)[spec.offset : spec.offset + spec.limit]
    expected = [render_object(spec.selection, obj) for obj in page]
    assert expected  # the comparison means something only with rows
    assert scalar_page(ordered, spec) == expected
    assert count_rows(ordered) == ordered.count()


def test_a_page_with_relations_needs_instances(db: Any) -> None:
    django_catalog()
    actor = SimpleActor(id=1, is_authenticated=True)
    spec, ordered = spec_and_queryset(
        {"manager": "PartManager", "fields": ["name", {"material": ["name"]}]}, actor
    )
    assert scalar_page(ordered, spec) is None


def test_a_scalar_page_skips_the_prefetches_of_the_managers_queryset(
    db: Any, django_assert_num_queries: Any
) -> None:
    django_catalog()
    actor = SimpleActor(id=1, is_authenticated=True)
    spec, ordered = spec_and_queryset({"manager": "ProjectManager"}, actor)
    prefetching = ordered.prefetch_related("parts")
    expected = scalar_page(ordered, spec)
    assert expected  # the comparison means something only with rows
    with django_assert_num_queries(1):  # the page alone: no prefetch query
        assert scalar_page(prefetching, spec) == expected


def test_a_count_that_cannot_match_runs_no_statement(
    db: Any, django_assert_num_queries: Any
) -> None:
    django_catalog()
    with django_assert_num_queries(0):
        assert count_rows(Part.objects.filter(pk__in=[])) == 0
    with django_assert_num_queries(1):
        assert count_rows(Project.objects.filter(parts__name="Bolt").distinct()) == 0
