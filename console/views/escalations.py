"""Escalations: turns an orbital flagged for a human, acknowledged then resolved with a note."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from chatomon.django.models import Turn

from ..access import REVIEW_ESCALATION, VIEW_TURNS, may, staff_view
from ..escalation_queries import escalated_turns
from ..models import EscalationReview
from ..rendering import render_screen, wants_fragment, without_empty_filters
from ..turn_rows import rows_of

__all__ = ["escalation_list", "escalation_review"]

PAGE_SIZE = 25
TEMPLATE = "chatomon_console/escalations.html"
ALREADY_RESOLVED = "This escalation is resolved already: nothing was changed."
STATES = [("open", "open (new or acknowledged)"), ("new", "new"),
          ("acknowledged", "acknowledged"), ("resolved", "resolved"), ("all", "all")]  # fmt: skip


class EscalationFilterForm(forms.Form):
    """Which escalations to list."""

    state = forms.ChoiceField(required=False, label="State", choices=STATES)


class ReviewForm(forms.Form):
    """An acknowledgement or a resolution, with its note."""

    status = forms.ChoiceField(choices=EscalationReview.STATUS_CHOICES, label="Action")
    note = forms.CharField(required=False, max_length=4000, label="Note", widget=forms.Textarea)


def _list_context(request: HttpRequest) -> dict[str, Any]:
    """The list's filter form, page of rows and the viewer's right to review."""
    form = EscalationFilterForm(request.GET)
    form.is_valid()
    state = form.cleaned_data.get("state") or "open"
    page = Paginator(escalated_turns(state), PAGE_SIZE).get_page(request.GET.get("page"))
    return {
        "form": form,
        "page": page,
        "rows": rows_of(page.object_list),
        "can_review": may(request, REVIEW_ESCALATION),
    }


@staff_view(VIEW_TURNS)
def escalation_list(request: HttpRequest) -> HttpResponse:
    """The escalations in the chosen state, with their review and actions."""
    if (cleaned := without_empty_filters(request)) is not None:
        return cleaned
    return render_screen(request, TEMPLATE, _list_context(request), partial="results")


def _refused(
    request: HttpRequest, turn: Turn, errors: Mapping[str, Any], status: int
) -> HttpResponse:
    """A review not recorded: its row with the errors, or (a plain form) the list with them."""
    if wants_fragment(request):
        context = {"row": rows_of([turn])[0], "can_review": True, "errors": errors}
        return render_screen(request, TEMPLATE, context, partial="row", status=status)
    # The whole list, the errors once above it (not on every row), naming the turn.
    context = {**_list_context(request), "page_errors": errors, "refused_turn": turn}
    return render_screen(request, TEMPLATE, context, partial="results", status=status)


@require_POST
@staff_view(REVIEW_ESCALATION)
def escalation_review(request: HttpRequest, turn_id: str) -> HttpResponse:
    """Record an acknowledgement or a resolution of one escalated turn.

    A resolved escalation stays resolved: a later review of it is refused (409).
    """
    turn = get_object_or_404(
        Turn.objects.select_related("conversation"), pk=turn_id, escalated=True
    )
    form = ReviewForm(request.POST)
    if not form.is_valid():
        return _refused(request, turn, form.errors, 422)
    if EscalationReview.objects.filter(turn=turn, status="resolved").exists():
        return _refused(request, turn, {"status": [ALREADY_RESOLVED]}, 409)
    EscalationReview.objects.update_or_create(
        turn=turn,
        defaults={
            "status": form.cleaned_data["status"],
            "note": form.cleaned_data["note"],
            "reviewed_by": request.user,
            "reviewed_at": timezone.now(),
        },
    )
    if not wants_fragment(request):
        return redirect("chatomon_console:escalations")
    turn = Turn.objects.select_related("conversation", "escalation_review").get(pk=turn.pk)
    context = {"row": rows_of([turn])[0], "can_review": True}
    return render_screen(request, TEMPLATE, context, partial="row")
