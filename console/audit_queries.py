"""The Audit screen's queries: indexed filters, payload search and keyset pagination.

Pages are cut with a keyset (``created_at``, ``id``) instead of OFFSET, newest first, so
the thousandth page costs what the first does; every filter is an equality on a column
that leads one of AuditEvent's (column, created_at, id) indexes. No page counts rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils.dateparse import parse_datetime

from chatomon.chat.pipeline.activity import ActivityKind
from chatomon.django.models import AuditEvent

from .converters import BIGINT_MAX

__all__ = ["AuditFilterForm", "AuditPage", "Cursor", "audit_events", "audit_page"]

PAGE_SIZE = 50
TYPES: tuple[str, ...] = get_args(ActivityKind)
"""The event types the audit listener writes: one per activity kind."""


class AuditFilterForm(forms.Form):
    """Filters of the audit trail; all optional, all in the query string."""

    type = forms.ChoiceField(
        required=False, label="Type", choices=[("", "any"), *((t, t) for t in TYPES)]
    )
    actor = forms.CharField(
        required=False,
        max_length=200,
        label="Actor",
        help_text="user:<id>, a username, or anonymous",
    )
    conversation = forms.CharField(required=False, max_length=64, label="Conversation id")
    turn = forms.CharField(required=False, max_length=64, label="Turn id")
    since = forms.DateTimeField(
        required=False, label="From", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    until = forms.DateTimeField(
        required=False, label="To", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    q = forms.CharField(required=False, max_length=200, label="Search in payload")


@dataclass(frozen=True)
class Cursor:
    """The last row of a page: the next page starts after it."""

    created_at: datetime
    id: int

    def encode(self) -> str:
        """The cursor as a query-string value."""
        return f"{self.created_at.isoformat()}_{self.id}"

    @classmethod
    def decode(cls, value: str | None) -> Cursor | None:
        """The cursor of a query-string value (None when absent or malformed).

        Malformed includes a date that is well formed but impossible, digits that are
        not ASCII ("²"), an id beyond the 64-bit key range and a time without a zone:
        each would otherwise fail in the query (a 500 on PostgreSQL).
        """
        moment, _, pk = (value or "").rpartition("_")
        try:
            parsed = parse_datetime(moment) if moment else None
        except ValueError:  # well formed, impossible: "2026-02-30T00:00:00"
            return None
        if parsed is None or parsed.tzinfo is None or not (pk.isascii() and pk.isdigit()):
            return None
        number = int(pk)
        return cls(parsed, number) if number <= BIGINT_MAX else None


@dataclass(frozen=True)
class AuditPage:
    """One page of events and the cursor of the next page, if any."""

    events: list[AuditEvent]
    next_cursor: Cursor | None


def _actor(value: str) -> str:
    if ":" in value or value == "anonymous":
        return value
    user = get_user_model().objects.filter(username=value).values_list("pk", flat=True).first()
    return f"user:{user}" if user is not None else value


def conditions(data: Mapping[str, Any]) -> Q:
    """The filter of the (cleaned) form data."""
    where = Q()
    for name in ("type", "conversation", "turn"):
        if data.get(name):
            where &= Q(**{name: data[name]})
    if data.get("actor"):
        where &= Q(actor=_actor(data["actor"]))
    if data.get("since"):
        where &= Q(created_at__gte=data["since"])
    if data.get("until"):
        where &= Q(created_at__lte=data["until"])
    return where


def audit_events(form: AuditFilterForm) -> QuerySet[AuditEvent]:
    """Every event the form selects, newest first (what the exports write)."""
    form.is_valid()
    events = AuditEvent.objects.filter(conditions(form.cleaned_data))
    if form.cleaned_data.get("q"):
        # The payload is sanitized when written, so searching its text reveals nothing more.
        events = events.alias(payload_text=Cast("payload", TextField())).filter(
            payload_text__icontains=form.cleaned_data["q"]
        )
    return events.order_by("-created_at", "-id")


def audit_page(form: AuditFilterForm, after: Cursor | None) -> AuditPage:
    """One page of the selected events after `after`, in one query."""
    events = audit_events(form)
    if after is not None:
        events = events.filter(
            Q(created_at__lt=after.created_at) | Q(created_at=after.created_at, id__lt=after.id)
        )
    rows = list(events[: PAGE_SIZE + 1])
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    last = rows[-1] if more else None
    return AuditPage(rows, Cursor(last.created_at, last.pk) if last else None)
