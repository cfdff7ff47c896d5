"""Escalations: turns an orbital flagged for a human, acknowledged then resolved with a note."""

from __future__ import annotations

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
STATES = [("open", "open (new or acknowledged)"), ("new", "new"),
          ("acknowledged", "acknowledged"), ("resolved", "resolved"), ("all", "all")]  # fmt: skip


class EscalationFilterForm(forms.Form):
    """Which escalations to list."""

    state = forms.ChoiceField(required=False, label="State", choices=STATES)


class ReviewForm(forms.Form):
    """An acknowledgement or a resolution, with its note."""

    status = forms.ChoiceField(choices=EscalationReview.STATUS_CHOICES, label="Action")
    note = forms.CharField(required=False, max_length=4000, label="Note", widget=forms.Textarea)


@staff_view(VIEW_TURNS)
def escalation_list(request: HttpRequest) -> HttpResponse:
    """The escalations in the chosen state, with their review and actions."""
    if (cleaned := without_empty_filters(request)) is not None:
        return cleaned
    form = EscalationFilterForm(request.GET)
    form.is_valid()
    state = form.cleaned_data.get("state") or "open"
    page = Paginator(escalated_turns(state), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "page": page,
        "rows": rows_of(page.object_list),
        "can_review": may(request, REVIEW_ESCALATION),
    }
    return render_screen(request, "chatomon_console/escalations.html", context, partial="results")


@require_POST
@staff_view(REVIEW_ESCALATION)
def escalation_review(request: HttpRequest, turn_id: str) -> HttpResponse:
    """Record an acknowledgement or a resolution of one escalated turn."""
    turn = get_object_or_404(
        Turn.objects.select_related("conversation"), pk=turn_id, escalated=True
    )
    form = ReviewForm(request.POST)
    if not form.is_valid():
        context = {"row": rows_of([turn])[0], "can_review": True, "errors": form.errors}
        return render_screen(
            request, "chatomon_console/escalations.html", context, partial="row", status=422
        )
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
    return render_screen(request, "chatomon_console/escalations.html", context, partial="row")
