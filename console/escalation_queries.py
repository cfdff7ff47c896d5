"""Escalated turns by review state: what the Escalations list and the dashboard's count select."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from chatomon.django.models import Turn

__all__ = ["STATE_CONDITIONS", "escalated_turns"]

STATE_CONDITIONS = {
    "open": ~Q(escalation_review__status="resolved"),
    "new": Q(escalation_review__isnull=True),
    "acknowledged": Q(escalation_review__status="acknowledged"),
    "resolved": Q(escalation_review__status="resolved"),
}
"""The review states a list can show; any other state ("all") selects every escalation."""


def escalated_turns(state: str) -> QuerySet[Turn]:
    """Escalated turns in `state`, newest first."""
    turns = Turn.objects.filter(escalated=True).select_related(
        "conversation", "escalation_review", "escalation_review__reviewed_by"
    )
    if state in STATE_CONDITIONS:
        turns = turns.filter(STATE_CONDITIONS[state])
    return turns.order_by("-started_at", "-pk")
