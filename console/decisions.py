"""A staff decision on a confirmation: the atomic claim through ChatService, then the resumed turn.

`ChatService.resolve_confirmation` claims the confirmation in one conditional update: one
decider wins and runs the resumed turn (whose events also reach the conversation's
channel group), its first event ``confirmation_resolved``; everyone else gets
``confirmation_unavailable`` (``bad_event`` for a confirmation that is not a staff
approval) and the row as it now is.
Open consoles hear of the decision from the service's `approval_activity_listener`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from chatomon.django.models import PendingConfirmation
from chatomon.django.service import chat_service

__all__ = ["DecisionOutcome", "decide"]


@dataclass(frozen=True)
class DecisionOutcome:
    """What happened to one decision."""

    won: bool
    confirmation: PendingConfirmation  # as stored after the decision (the winner's, if lost)
    events: tuple[dict[str, Any], ...]  # the winner's resumed-turn events


async def decide(
    user: Any, confirmation_id: UUID, *, approve: bool, reason: str | None
) -> DecisionOutcome:
    """Approve or reject as `user`; drives the resumed turn to its end when the claim wins."""
    # The process's service: the same pipeline, and the same service, end users get.
    stream = chat_service().resolve_confirmation(
        user, str(confirmation_id), approve, decided_by=user.get_username(), reason=reason or None
    )
    events = [event async for event in stream]
    # Only a winning claim starts with confirmation_resolved; any refusal is an error.
    won = bool(events) and events[0].get("type") == "confirmation_resolved"
    stored = await PendingConfirmation.objects.select_related("conversation").aget(
        pk=confirmation_id
    )
    return DecisionOutcome(won, stored, tuple(events))
