"""Who may approve which staff approval: the permission, and the four-eyes rule.

Deciding at all needs ``chatomon_console.decide_confirmation`` (the view's guard).
Approving — the decision that runs the write — needs more: the Django permission
``chatomon.approve_mutation``, the mutation's own permission when
``CHATOMON_CONSOLE["approval_permissions"]`` names one, and, under the four-eyes rule
(``CHATOMON_CONSOLE["four_eyes"]``, on by default), not being the person who asked for the
change (the owner of the conversation that asked). Rejecting needs none of these: anyone
who may decide may stop a change, the requester included.

`approve_refusal` is the one answer: the decide view enforces it, the cards show it as the
reason their Approve button is disabled.
"""

from __future__ import annotations

from typing import Any

from chatomon.chat.store.records import Owner
from chatomon.django.models import PendingConfirmation

from .access import DECIDE_CONFIRMATION
from .conf import console_settings

__all__ = ["APPROVE_MUTATION", "approve_refusal", "is_requester"]

APPROVE_MUTATION = "chatomon.approve_mutation"


def is_requester(user: Any, confirmation: PendingConfirmation) -> bool:
    """Whether `user` owns the conversation that asked for the change."""
    conversation = confirmation.conversation
    if user.pk is None or conversation.owner_kind != "user":
        return False
    return conversation.owner_key == Owner.user(user.pk).key


def approve_refusal(user: Any, confirmation: PendingConfirmation) -> str | None:
    """Why `user` may not approve `confirmation`, or None when they may."""
    if not user.has_perm(DECIDE_CONFIRMATION):
        return "You may not decide approvals."
    if not user.has_perm(APPROVE_MUTATION):
        return f"Approving needs the permission {APPROVE_MUTATION}."
    settings = console_settings()
    extra = settings.approval_permissions.get(confirmation.mutation)
    if extra and not user.has_perm(extra):
        return f"Approving {confirmation.mutation} needs the permission {extra}."
    if settings.four_eyes and is_requester(user, confirmation):
        return "You asked for this change: someone else must approve it (four-eyes rule)."
    return None
