"""The Turns list's filters: a form (labelled controls, validation) and the queryset it selects.

The same form drives the page, its pagination links and both exports, so an export holds
exactly the turns the page lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import F, Q, QuerySet

from chatomon.django.models import Turn
from chatomon.schemas import FinalAction

from .day_range import within_days
from .report_sql import any_error, stopped_by_orbital

__all__ = ["FINAL_ACTIONS", "SORTS", "TurnFilterForm", "filtered_turns"]

FINAL_ACTIONS: tuple[str, ...] = get_args(FinalAction)
YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]
DEFAULT_SORT = "newest"
SORTS: Mapping[str, tuple[str, Any]] = {
    "newest": ("newest first", F("started_at").desc()),
    "oldest": ("oldest first", F("started_at").asc()),
    "slowest": ("slowest first", F("report__duration_ms").desc(nulls_last=True)),
    "fastest": ("fastest first", F("report__duration_ms").asc(nulls_last=True)),
    "tokens": ("most tokens first", (F("input_tokens") + F("output_tokens")).desc()),
}


class TurnFilterForm(forms.Form):
    """Every filter of the Turns list; all optional, all in the query string."""

    date_from = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    date_to = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    final_action = forms.ChoiceField(
        required=False,
        label="Final action",
        choices=[("", "any"), *((a, a) for a in FINAL_ACTIONS)],
    )
    escalated = forms.ChoiceField(required=False, label="Escalated", choices=YES_NO)
    failed = forms.ChoiceField(required=False, label="Has error", choices=YES_NO)
    atom = forms.CharField(required=False, label="Atom", max_length=200)
    orbital = forms.CharField(required=False, label="Stopped by orbital", max_length=200)
    user = forms.CharField(required=False, label="User (username)", max_length=150)
    conversation = forms.UUIDField(required=False, label="Conversation id")
    min_duration_ms = forms.IntegerField(required=False, min_value=0, label="Min duration (ms)")
    # The default order is the empty choice, so an unsorted view's URL carries no sort.
    sort = forms.ChoiceField(
        required=False,
        label="Sort",
        choices=[("" if k == DEFAULT_SORT else k, v[0]) for k, v in SORTS.items()],
    )


def _user_condition(username: str) -> Q:
    users = get_user_model().objects.filter(username=username).values_list("pk", flat=True)
    return Q(conversation__owner_kind="user", conversation__owner_key__in=[str(pk) for pk in users])


def _yes_no(value: str, condition: Q) -> Q:
    return condition if value == "yes" else ~condition


def conditions(data: Mapping[str, Any]) -> Q:
    """The filter of the (cleaned) form data; empty fields select everything."""
    where = within_days("started_at", data.get("date_from"), data.get("date_to"))
    if data.get("final_action"):
        where &= Q(final_action=data["final_action"])
    if data.get("escalated"):
        where &= _yes_no(data["escalated"], Q(escalated=True))
    if data.get("failed"):
        where &= _yes_no(data["failed"], any_error())
    if data.get("atom"):
        where &= Q(report__atom_name=data["atom"])
    if data.get("orbital"):
        where &= stopped_by_orbital(data["orbital"])
    if data.get("user"):
        where &= _user_condition(data["user"])
    if data.get("conversation"):
        where &= Q(conversation_id=data["conversation"])
    if data.get("min_duration_ms") is not None:
        where &= Q(report__duration_ms__gte=data["min_duration_ms"])
    return where


def filtered_turns(form: TurnFilterForm) -> QuerySet[Turn]:
    """The turns the form selects, in its sort order (invalid fields are ignored)."""
    # Invalid fields are shown with their errors and left out of cleaned_data, so one bad
    # value does not drop every other filter.
    form.is_valid()
    data = form.cleaned_data
    order = SORTS[data.get("sort") or DEFAULT_SORT][1]
    return (
        Turn.objects.filter(conditions(data)).select_related("conversation").order_by(order, "-pk")
    )
