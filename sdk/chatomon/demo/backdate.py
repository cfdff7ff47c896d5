"""Moving seeded conversations back to their day, every timestamp of them alike.

The pipeline stamps the time it ran. `backdate` moves each seeded conversation (its
messages, turns and their reports, confirmations, audit events and escalation reviews)
back by its own span (to a clock time some days ago), keeping the times within it, so
the console's charts and lists show a few days of use. Only the history seeding calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.apps import apps
from django.db import transaction
from django.db.models import F

from chatomon.django.models import AuditEvent, ChatMessage, Conversation, PendingConfirmation, Turn

__all__ = ["backdate"]


def _shift_turns(conversation: str, delta: timedelta) -> None:
    for turn in Turn.objects.filter(conversation_id=conversation):
        turn.started_at -= delta
        if turn.finished_at is not None:
            turn.finished_at -= delta
        if isinstance(turn.report, dict) and turn.report.get("started_at"):
            started = datetime.fromisoformat(str(turn.report["started_at"]))
            turn.report = {**turn.report, "started_at": (started - delta).isoformat()}
        turn.save(update_fields=["started_at", "finished_at", "report"])


@transaction.atomic
def backdate(moves: Mapping[str, timedelta]) -> None:
    """Move each conversation of `moves` back by its span; the others stay where they are.

    Args:
        moves: Conversation id → how far back it moves.
    """
    reviews = (
        apps.get_model("chatomon_console", "EscalationReview")
        if apps.is_installed("chatomon.console")
        else None
    )
    for conversation, delta in moves.items():
        Conversation.objects.filter(pk=conversation).update(
            created_at=F("created_at") - delta, updated_at=F("updated_at") - delta
        )
        ChatMessage.objects.filter(conversation_id=conversation).update(
            created_at=F("created_at") - delta
        )
        _shift_turns(conversation, delta)
        PendingConfirmation.objects.filter(conversation_id=conversation).update(
            created_at=F("created_at") - delta, expires_at=F("expires_at") - delta,
            decided_at=F("decided_at") - delta,
        )  # fmt: skip
        AuditEvent.objects.filter(conversation=conversation).update(
            created_at=F("created_at") - delta
        )
        if reviews is not None:
            # Made at seeding, right after the turn: it moves with it (plus a staff
            # member's reaction time), not days before it.
            reviews.objects.filter(turn__conversation_id=conversation).update(
                reviewed_at=F("reviewed_at") - delta + timedelta(minutes=40)
            )
