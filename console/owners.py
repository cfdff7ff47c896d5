"""Names for conversation owners, through the console's one naming helper (`people`)."""

from __future__ import annotations

from collections.abc import Iterable

from chatomon.django.models import Conversation

from .people import display_names

__all__ = ["owner_label", "owner_labels"]


def owner_label(conversation: Conversation) -> str:
    """The stored label of a conversation's owner: ``user:<pk>`` or ``session:<key>``."""
    return f"{conversation.owner_kind}:{conversation.owner_key}"


def owner_labels(conversations: Iterable[Conversation]) -> dict[str, str]:
    """Conversation id (str) → who owns it, in one query for all user owners."""
    conversations = list(conversations)
    names = display_names(owner_label(c) for c in conversations)
    return {str(c.id): names[owner_label(c)] for c in conversations}
