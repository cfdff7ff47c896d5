"""Whole local days as a range condition: the date filters of the Turns and Approvals screens."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db.models import Q
from django.utils import timezone

__all__ = ["within_days"]


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def within_days(field: str, first: date | None, last: date | None) -> Q:
    """`field` from the start of day `first` to the end of day `last` (either may be open)."""
    where = Q()
    if first:
        where &= Q(**{f"{field}__gte": _day_start(first)})
    if last:
        # Before the next day's start: the whole of `last` counts, whatever the time.
        where &= Q(**{f"{field}__lt": _day_start(last + timedelta(days=1))})
    return where
