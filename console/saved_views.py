"""Saved views: a staff member names the filters of a list screen and opens them again later.

A view is the screen and its query string, cleaned: empty parameters and the position in
the list (``page``, ``after``) are dropped, so a saved view opens the filtered list from
its start. Views are their owner's only: nobody lists, opens or deletes another's.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from .access import staff_view
from .models import SavedView

__all__ = ["SCREENS", "SavedViewForm", "delete_view", "save_view", "saved_views_of", "view_url"]

SCREENS = {
    "turns": "chatomon_console:turns",
    "audit": "chatomon_console:audit",
    "approval_history": "chatomon_console:approval_history",
    "escalations": "chatomon_console:escalations",
}
"""The screens whose filters can be saved, and their URL names."""

POSITION = ("page", "after")
QUERY_LENGTH = 2000
"""The length of `SavedView.query`."""


class SavedViewForm(forms.Form):
    """A name for the current filters of a screen."""

    screen = forms.ChoiceField(choices=[(s, s) for s in SCREENS], widget=forms.HiddenInput)
    query = forms.CharField(required=False, max_length=QUERY_LENGTH, widget=forms.HiddenInput)
    name = forms.CharField(max_length=80, label="Save these filters as")

    def clean_query(self) -> str:
        """The query as it is stored: cleaned, and within the column once re-encoded."""
        # Re-encoding can lengthen a query ("é" becomes "%C3%A9"): an over-long one failed
        # the insert on PostgreSQL (a 500) instead of being refused here.
        query = clean_query(self.cleaned_data["query"])
        if len(query) > QUERY_LENGTH:
            raise forms.ValidationError("These filters are too long to save.")
        return query


def clean_query(query: str) -> str:
    """The query string without empty parameters or a position in the list."""
    kept = QueryDict(mutable=True)
    for name, values in QueryDict(query.lstrip("?")).lists():
        filled = [v for v in values if v != ""]
        if filled and name not in POSITION:
            kept.setlist(name, filled)
    return kept.urlencode()


def view_url(view: SavedView) -> str:
    """Where a saved view opens."""
    path = reverse(SCREENS[view.screen])
    return f"{path}?{view.query}" if view.query else path


def saved_views_of(user: Any, screen: str) -> list[SavedView]:
    """The user's saved views of `screen`, by name."""
    if getattr(user, "pk", None) is None:
        return []
    return list(SavedView.objects.filter(owner=user, screen=screen))


@require_POST
@staff_view()
def save_view(request: HttpRequest) -> HttpResponse:
    """Save (or, under a name already used, replace) a view, then open it."""
    form = SavedViewForm(request.POST)
    if not form.is_valid():
        screen = request.POST.get("screen")
        back = reverse(SCREENS[screen]) if screen in SCREENS else reverse("chatomon_console:turns")
        return HttpResponseRedirect(back)
    view, _ = SavedView.objects.update_or_create(
        owner=request.user,
        screen=form.cleaned_data["screen"],
        name=form.cleaned_data["name"].strip(),
        defaults={"query": form.cleaned_data["query"], "created_at": timezone.now()},
    )
    return HttpResponseRedirect(view_url(view))


@require_POST
@staff_view()
def delete_view(request: HttpRequest, view_id: int) -> HttpResponse:
    """Delete one of the user's saved views (someone else's is a 404), back to its screen."""
    view = get_object_or_404(SavedView, pk=view_id, owner=request.user)
    view.delete()
    return HttpResponseRedirect(reverse(SCREENS[view.screen]))
