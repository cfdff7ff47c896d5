"""Dashboard: today's and the week's turns, outcomes, latency, tokens and top lists."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone

from ..access import VIEW_DASHBOARD, staff_view
from ..charts import bar_chart
from ..rendering import render_screen
from ..stats import dashboard_stats

__all__ = ["dashboard"]


def _turns_link(**filters: str) -> str:
    return f"{reverse('chatomon_console:turns')}?{urlencode(filters)}"


@staff_view(VIEW_DASHBOARD)
def dashboard(request: HttpRequest) -> HttpResponse:
    """The overview, with links into the filtered lists."""
    now = timezone.localtime()
    stats = dashboard_stats(now)
    per_day = bar_chart(
        [(day[5:], count, _turns_link(date_from=day, date_to=day)) for day, count in stats.per_day]
    )
    orbitals = bar_chart([(n, c, _turns_link(orbital=n)) for n, c in stats.top_orbitals])
    tools = bar_chart([(n, c, "") for n, c in stats.top_tools])
    week_start = (now - timedelta(days=7)).date().isoformat()
    context = {
        "stats": stats,
        "per_day": per_day,
        "orbitals": orbitals,
        "tools": tools,
        "links": {
            "today": _turns_link(date_from=now.date().isoformat()),
            "week": _turns_link(date_from=week_start),
            "answered": _turns_link(date_from=week_start, final_action="answered"),
            "blocked": _turns_link(date_from=week_start, final_action="blocked"),
            "aborted": _turns_link(date_from=week_start, final_action="aborted"),
            "refused": _turns_link(date_from=week_start, final_action="fallback_refusal"),
            "guided": _turns_link(date_from=week_start, final_action="guided_refusal"),
            "responded": _turns_link(date_from=week_start, final_action="orbital_response"),
            "slow": _turns_link(date_from=week_start, sort="slowest"),
        },
    }
    return render_screen(request, "chatomon_console/dashboard.html", context, partial="stats")
