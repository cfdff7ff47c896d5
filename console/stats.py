"""The dashboard's numbers: turn counts by outcome, latency percentiles, tokens, top lists."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Q, Sum

from chatomon.django.models import ChatMessage, Turn

from .approval_queries import pending_staff_count
from .escalation_queries import escalated_turns

__all__ = ["DashboardStats", "dashboard_stats", "percentile"]

OUTCOMES = ("answered", "blocked", "refused", "aborted")
REFUSALS = ("guided_refusal", "fallback_refusal", "orbital_response")


@dataclass(frozen=True)
class DashboardStats:
    """Everything the dashboard shows, for one moment."""

    turns_today: int
    turns_week: int
    outcomes: dict[str, int]  # over the week: answered / blocked / refused / aborted
    escalations_open: int
    pending_approvals: int
    p50_ms: float | None
    p95_ms: float | None
    input_tokens: int
    output_tokens: int
    per_day: list[tuple[str, int]]  # (ISO date, turns), oldest first
    top_orbitals: list[tuple[str, int]]
    top_tools: list[tuple[str, int]]


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of `values` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(len(ordered) * fraction))
    return ordered[rank - 1]


def _outcomes(week: Any) -> dict[str, int]:
    counts = week.aggregate(
        answered=Count("pk", filter=Q(final_action="answered")),
        blocked=Count("pk", filter=Q(final_action="blocked")),
        refused=Count("pk", filter=Q(final_action__in=REFUSALS)),
        aborted=Count("pk", filter=Q(final_action="aborted") | Q(status="aborted")),
    )
    return {name: counts[name] for name in OUTCOMES}


def _stopping_orbitals(reports: Iterable[Any]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for report in reports:
        if not isinstance(report, dict):
            continue
        results = list(report.get("input") or ())
        for attempt in report.get("output") or ():
            results.extend(attempt.get("results") or ())
        counts.update(r.get("name", "?") for r in results if r.get("action") != "allow")
    return counts


def _tools(since: datetime) -> Counter[str]:
    groups = ChatMessage.objects.filter(kind="tool_calls", created_at__gte=since)
    counts: Counter[str] = Counter()
    for calls in groups.values_list("tool_calls", flat=True).iterator(chunk_size=500):
        counts.update(str(call.get("name", "?")) for call in calls or ())
    return counts


def _per_day(week: Any, now: datetime) -> list[tuple[str, int]]:
    starts = week.values_list("started_at", flat=True)
    days = Counter(moment.astimezone(now.tzinfo).date().isoformat() for moment in starts)
    span = [(now - timedelta(days=back)).date().isoformat() for back in range(6, -1, -1)]
    return [(day, days.get(day, 0)) for day in span]


def dashboard_stats(now: datetime) -> DashboardStats:
    """The dashboard over the last 7 days (and today, since local midnight)."""
    since = now - timedelta(days=7)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    week = Turn.objects.filter(started_at__gte=since)
    durations = [
        float(d)
        for d in week.values_list("report__duration_ms", flat=True)
        if isinstance(d, int | float)
    ]
    tokens = week.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    return DashboardStats(
        turns_today=week.filter(started_at__gte=midnight).count(),
        turns_week=week.count(),
        outcomes=_outcomes(week),
        escalations_open=escalated_turns("open").count(),
        pending_approvals=pending_staff_count(now),
        p50_ms=percentile(durations, 0.5),
        p95_ms=percentile(durations, 0.95),
        input_tokens=tokens["i"] or 0,
        output_tokens=tokens["o"] or 0,
        per_day=_per_day(week, now),
        top_orbitals=_stopping_orbitals(
            week.values_list("report", flat=True).iterator(chunk_size=500)
        ).most_common(5),
        top_tools=_tools(since).most_common(5),
    )
