"""Validated conditions as Django filters, with the related managers' scopes applied.

All conditions go into one `filter()` call, so conditions through the same to-many
relation hold for one related row together (the records backend means the same). For
every relation a condition crosses whose target manager scopes its rows, the same call
also requires the related row to be in that scope (`material__in=<scoped queryset>`); a
`relation__isnull` condition compares the stored reference itself and adds no scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Q, QuerySet

from chatomon.data.query import Condition, Hop

__all__ = ["apply_conditions", "field_path", "scope_conditions"]


def field_path(hops: Sequence[Hop], field_name: str | None = None) -> str:
    """The Django lookup path of `hops` and then `field_name` ("id" is spelled "pk")."""
    names = [hop.relation.name for hop in hops]
    if field_name is not None:
        names.append("pk" if field_name == "id" else field_name)
    return "__".join(names)


def scope_conditions(hops: Sequence[Hop], actor: Any) -> list[Q]:
    """`prefix__in=<scope>` for each crossed relation whose target scopes its rows."""
    clauses: list[Q] = []
    for depth, hop in enumerate(hops, start=1):
        if hop.target.manager.has_custom_scope():
            scope = hop.target.manager.get_queryset(actor)
            clauses.append(Q(**{f"{field_path(hops[:depth])}__in": scope}))
    return clauses


def _condition_q(condition: Condition) -> Q:
    if condition.on_relation:
        key = f"{field_path(condition.hops)}__{condition.lookup}"
    else:
        key = f"{field_path(condition.hops, condition.field.name)}__{condition.lookup}"
    value = list(condition.value) if condition.lookup == "in" else condition.value
    return Q(**{key: value})


def apply_conditions(
    queryset: QuerySet[Any], conditions: Sequence[Condition], actor: Any
) -> tuple[QuerySet[Any], bool]:
    """`queryset` filtered by `conditions`, and whether a to-many relation was crossed.

    Crossing a to-many relation joins it, so the caller must make rows distinct.
    """
    if not conditions:
        return queryset, False
    clauses: list[Q] = []
    scoped: set[str] = set()
    crosses_many = False
    for condition in conditions:
        clauses.append(_condition_q(condition))
        crossed = condition.hops
        if condition.on_relation and condition.lookup == "isnull":
            crossed = crossed[:-1]
        path = field_path(crossed)
        if path and path not in scoped:
            scoped.add(path)
            clauses.extend(scope_conditions(crossed, actor))
        crosses_many = crosses_many or any(hop.relation.to_many for hop in condition.hops)
    return queryset.filter(*clauses), crosses_many
