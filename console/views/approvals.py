"""Approvals: the live queue of pending confirmations, decisions, and the decided history."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django import forms
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from chatomon.django.models import PendingConfirmation

from ..access import DECIDE_CONFIRMATION, VIEW_APPROVALS, may, staff_view
from ..approval_display import cards
from ..approval_queries import HistoryFilterForm, history, queue
from ..approval_rights import approve_refusal
from ..decisions import decide
from ..people import display_names
from ..rendering import render_screen, wants_fragment, without_empty_filters

__all__ = ["approval_decide", "approval_history", "approval_queue"]

PAGE_SIZE = 25
QUEUE = "chatomon_console/approvals/queue.html"


class DecisionForm(forms.Form):
    """Approve, or reject with an optional reason."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    reason = forms.CharField(required=False, max_length=200, label="Reason")


@staff_view(VIEW_APPROVALS)
def approval_queue(request: HttpRequest) -> HttpResponse:
    """Pending confirmations: staff ones decidable, client ones read-only."""
    now = timezone.now()
    may_decide = may(request, DECIDE_CONFIRMATION)
    context = {"cards": cards(queue(), now=now, may_decide=may_decide), "now": now}
    return render_screen(request, QUEUE, context, partial="queue")


@staff_view(VIEW_APPROVALS)
def approval_history(request: HttpRequest) -> HttpResponse:
    """Decided confirmations, filtered by status, decider, mutation and time."""
    if (cleaned := without_empty_filters(request)) is not None:
        return cleaned
    form = HistoryFilterForm(request.GET)
    page = Paginator(history(form), PAGE_SIZE).get_page(request.GET.get("page"))
    shown = cards(page.object_list, now=timezone.now(), may_decide=False)
    context = {
        "form": form,
        "page": page,
        "cards": shown,
        "people": display_names(card.confirmation.decided_by for card in shown),
    }
    return render_screen(
        request, "chatomon_console/approvals/history.html", context, partial="results"
    )


def _card_response(
    request: HttpRequest,
    confirmation: PendingConfirmation,
    *,
    status: int,
    final: bool = False,
    **extra: Any,
) -> HttpResponse:
    """The card after a decision attempt.

    A final answer (won, or lost to an earlier decision) is the decided card for the
    page's decisions list, which the live queue refresh never touches, and the queue's card
    removed out of band. Anything else (refused, invalid) replaces the queue's card in place.
    """
    now = timezone.now()
    may_decide = may(request, DECIDE_CONFIRMATION)
    card = cards([confirmation], now=now, may_decide=may_decide)[0]
    context: dict[str, Any] = {"card": card, **extra}
    if not wants_fragment(request):
        # Without JavaScript the answer is the whole queue: a decision's card on top, among
        # "your decisions"; a refusal as an alert above the queue, the card left in it.
        context.update(
            result=card if final else None,
            cards=cards(queue(), now=now, may_decide=may_decide),
        )
        return render_screen(request, QUEUE, context, partial="card", status=status)
    response = render_screen(
        request, QUEUE, context, partial="decided" if final else "card", status=status
    )
    if not final:
        response["HX-Retarget"] = f"#cc-approval-{confirmation.pk}"
        response["HX-Reswap"] = "outerHTML"
    return response


@require_POST
@staff_view(DECIDE_CONFIRMATION)
async def approval_decide(request: HttpRequest, confirmation_id: UUID) -> HttpResponse:
    """Decide one staff confirmation.

    A decision that lost the claim gets a 409 fragment; an approval the user may not give
    (`approve_refusal`: the permission, the four-eyes rule) a 403 one, and nothing runs.
    """
    confirmation = (
        await PendingConfirmation.objects.select_related("conversation")
        .filter(pk=confirmation_id)
        .afirst()
    )
    if confirmation is None:
        raise Http404("no such confirmation")
    respond = sync_to_async(_card_response)
    form = DecisionForm(request.POST)
    if confirmation.approver != "staff":
        notice = "The user decides this confirmation in their chat; staff cannot."
        return await respond(request, confirmation, status=409, notice=notice)
    if not form.is_valid():
        return await respond(request, confirmation, status=422, form_errors=form.errors)
    user = await request.auser()
    approve = form.cleaned_data["decision"] == "approve"
    if approve:
        refused = await sync_to_async(approve_refusal)(user, confirmation)
        if refused is not None:
            return await respond(request, confirmation, status=403, notice=refused)
    outcome = await decide(
        user, confirmation_id, approve=approve, reason=form.cleaned_data["reason"]
    )
    if outcome.won and not wants_fragment(request):
        return redirect("chatomon_console:approvals")
    return await respond(
        request,
        outcome.confirmation,
        status=200 if outcome.won else 409,
        final=True,
        won=outcome.won,
        conflict=not outcome.won,
    )
