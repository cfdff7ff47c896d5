"""The Approvals screen's queries: the queue, the history and the pending count."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, get_args

from django import forms
from django.db.models import Q, QuerySet

from chatomon.chat.store.records import ConfirmationStatus
from chatomon.django.models import PendingConfirmation

from .day_range import within_days

__all__ = ["HistoryFilterForm", "history", "pending_staff_count", "queue"]

DECIDED: tuple[str, ...] = tuple(s for s in get_args(ConfirmationStatus) if s != "pending")


def queue() -> QuerySet[PendingConfirmation]:
    """Undecided confirmations, oldest first; past-expiry ones stay until cleanup resolves them."""
    return (
        PendingConfirmation.objects.filter(status="pending")
        .select_related("conversation")
        .order_by("created_at")
    )


def pending_staff_count(now: datetime) -> int:
    """Staff approvals that can still be decided."""
    return PendingConfirmation.objects.filter(
        status="pending", approver="staff", expires_at__gt=now
    ).count()


class HistoryFilterForm(forms.Form):
    """Filters of the decided confirmations."""

    status = forms.ChoiceField(
        required=False, label="Status", choices=[("", "any"), *((s, s) for s in DECIDED)]
    )
    decided_by = forms.CharField(required=False, label="Decided by", max_length=200)
    mutation = forms.CharField(required=False, label="Mutation", max_length=200)
    date_from = forms.DateField(
        required=False, label="Decided from", widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        required=False, label="Decided to", widget=forms.DateInput(attrs={"type": "date"})
    )


def history_conditions(data: Mapping[str, Any]) -> Q:
    """The history filter of the (cleaned) form data."""
    where = Q(status__in=DECIDED)
    if data.get("status"):
        where &= Q(status=data["status"])
    if data.get("decided_by"):
        where &= Q(decided_by=data["decided_by"])
    if data.get("mutation"):
        where &= Q(mutation=data["mutation"])
    return where & within_days("decided_at", data.get("date_from"), data.get("date_to"))


def history(form: HistoryFilterForm) -> QuerySet[PendingConfirmation]:
    """Decided confirmations the form selects, most recently decided first."""
    form.is_valid()
    return (
        PendingConfirmation.objects.filter(history_conditions(form.cleaned_data))
        .select_related("conversation")
        .order_by("-decided_at", "-created_at")
    )
