"""``{% load chatomon_console %}``: the pending badge and small display filters."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..approval_queries import pending_staff_count

__all__ = [
    "action_badge",
    "badge_html",
    "compact_json",
    "milliseconds",
    "pending_badge",
    "pending_badge_oob",
    "pretty_json",
    "register",
]

register = template.Library()


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
