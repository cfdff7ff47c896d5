"""Full page on direct load, partial for HTMX: one helper every console view renders with.

A screen's template defines its swappable region as a named partial
(``{% partialdef results inline %}``); an HTMX request gets only that partial
(``"template.html#results"``), everyone else the whole page. Both vary on ``HX-Request``
so no cache serves one in place of the other.

A list's filter form submitted without JavaScript sends every field, empty ones too;
`without_empty_filters` redirects such a request to the same query without them, so the
address bar holds exactly the filters set (console.js drops them before HTMX sends).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

__all__ = ["render_screen", "wants_fragment", "without_empty_filters"]


def wants_fragment(request: HttpRequest) -> bool:
    """Whether the request is an HTMX swap (not a boosted navigation or a history restore)."""
    htmx = HtmxDetails(request)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_screen(
    request: HttpRequest,
    template: str,
    context: Mapping[str, Any],
    *,
    partial: str,
    status: int = 200,
) -> HttpResponse:
    """Render `template` whole, or only its `partial` for an HTMX request."""
    name = f"{template}#{partial}" if wants_fragment(request) else template
    response = render(request, name, dict(context), status=status)
    patch_vary_headers(response, ("HX-Request",))
    return response


def without_empty_filters(request: HttpRequest) -> HttpResponse | None:
    """A redirect to the request's query without its empty parameters, or None if it has none.

    Only for a page load: an HTMX swap is answered as asked (its URL is console.js's).
    """
    if wants_fragment(request) or not any(
        value == "" for values in request.GET.lists() for value in values[1]
    ):
        return None
    query = request.GET.copy()
    for name, values in list(query.lists()):
        kept = [v for v in values if v != ""]
        if kept:
            query.setlist(name, kept)
        else:
            del query[name]
    encoded = query.urlencode()
    return HttpResponseRedirect(request.path + (f"?{encoded}" if encoded else ""))
