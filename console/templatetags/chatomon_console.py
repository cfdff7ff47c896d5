"""``{% load chatomon_console %}``: the pending badge and small display filters."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..approval_display import console_preview_html
from ..approval_queries import pending_staff_count
from ..approval_rights import approve_refusal
from ..people import display_name_of_user, name_of
from ..saved_views import SavedViewForm, saved_views_of, view_url

__all__ = [
    "action_badge",
    "approval_refusal",
    "badge_html",
    "compact_json",
    "delta",
    "milliseconds",
    "pending_badge",
    "pending_badge_oob",
    "person",
    "pretty_json",
    "preview_table",
    "register",
    "saved_views",
    "user_name",
]

register = template.Library()
HALF_MS = 0.5  # a smaller difference shows as "0 ms": call it none


@register.simple_tag
def pending_badge() -> SafeString:
    """The count of staff approvals waiting, as a badge the live stream replaces."""
    count = pending_staff_count(timezone.now())
    return badge_html(count)


def badge_html(count: int, *, oob: bool = False) -> SafeString:
    """The badge markup; `oob` marks it for an out-of-band swap."""
    return format_html(
        '<span id="cc-pending-badge" class="cc-badge{}"{}>{} pending</span>',
        " cc-badge--attention" if count else "",
        ' hx-swap-oob="true"' if oob else "",
        count,
    )


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON of a value (escaped by the template as usual)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


@register.filter
def milliseconds(value: Any) -> str:
    """A duration in ms, rounded for reading ("—" when unknown); minutes and hours past 60 s."""
    if not isinstance(value, int | float):
        return "—"
    if value >= 60_000:
        minutes, seconds = divmod(round(value / 1000), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours} h {minutes} min" if hours else f"{minutes} min {seconds} s"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


@register.inclusion_tag("chatomon_console/includes/badge.html")
def action_badge(action: Any) -> dict[str, Any]:
    """A status badge: the word itself, coloured as a second cue only."""
    return {"action": action or "none"}


@register.simple_tag
def pending_badge_oob(count: int) -> SafeString:
    """The badge for an out-of-band swap, with a count already known."""
    return badge_html(count, oob=True)


@register.filter
def compact_json(value: Any) -> str:
    """One-line JSON of a value, for table cells."""
    return json.dumps(value, sort_keys=True, default=str)


@register.simple_tag(takes_context=True)
def person(context: template.Context, label: str | None) -> str:
    """A stored person label (``user:1``, a username ...) as the console names people.

    Uses the view's ``people`` mapping (`people.display_names` of the page) when it has
    the label, so a list names everyone in one query.
    """
    return name_of(context.get("people"), label)


@register.simple_tag(takes_context=True)
def approval_refusal(context: template.Context, confirmation: Any) -> str:
    """Why the viewing user may not approve `confirmation` ("" when they may)."""
    # The request's user: the "user" variable needs the auth context processor.
    request = getattr(context, "request", None)
    user = getattr(request, "user", None) or context.get("user")
    if user is None:
        return "You may not decide approvals."
    return approve_refusal(user, confirmation) or ""


@register.filter
def user_name(user: Any) -> str:
    """A user object's display name (`people.display_name_of_user`)."""
    return display_name_of_user(user)


@register.filter
def delta(value: Any, unit: str = "ms") -> str:
    """A signed difference ("+12 ms", a minus sign for less; "—" unknown, "±0" none)."""
    if not isinstance(value, int | float):
        return "—"
    if value == 0 or (unit == "ms" and abs(value) < HALF_MS):
        return "±0"
    sign = "+" if value > 0 else "\N{MINUS SIGN}"
    if unit == "ms":
        size = milliseconds(abs(value))
    else:
        size = f"{abs(value):.6f}" if unit == "cost" else f"{abs(value):g}"
    return f"{sign}{size}"


@register.filter
def figure(value: Any, unit: str = "ms") -> str:
    """A figure of the compare page: a duration, a count, or a cost (six decimals)."""
    if unit == "ms":
        return milliseconds(value)
    if not isinstance(value, int | float):
        return "—"
    return f"{value:.6f}" if unit == "cost" else f"{value:g}"


@register.filter
def preview_table(preview: Any) -> SafeString:
    """A (redacted) mutation preview as the before → after table (`chatomon.preview`)."""
    return console_preview_html(preview)


@register.inclusion_tag("chatomon_console/includes/saved_views.html", takes_context=True)
def saved_views(context: template.Context, screen: str) -> dict[str, Any]:
    """The viewer's saved views of `screen` as links, and the form saving the current one."""
    request = getattr(context, "request", None)
    user = getattr(request, "user", None)
    query = request.GET.urlencode() if request is not None else ""
    return {
        "views": [(view, view_url(view)) for view in saved_views_of(user, screen)],
        "form": SavedViewForm(initial={"screen": screen, "query": query}),
        "csrf_token": context.get("csrf_token"),
    }
