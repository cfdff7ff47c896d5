"""Names for conversation owners: the username of a user owner, a short label for a session."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from chatomon.chat.store.records import Owner
from chatomon.django.models import Conversation

__all__ = ["owner_labels"]


def owner_labels(conversations: Iterable[Conversation]) -> dict[str, str]:
    """Conversation id (str) → who owns it, in one query for all user owners."""
    conversations = list(conversations)
    user_keys = {c.owner_key for c in conversations if c.owner_kind == "user"}
    names = {
        Owner.user(pk).key: name
        for pk, name in get_user_model()
        .objects.filter(pk__in=_primary_keys(user_keys))
        .values_list("pk", "username")
    }
    labels = {}
    for conversation in conversations:
        if conversation.owner_kind == "user":
            label = names.get(conversation.owner_key, f"user #{conversation.owner_key}")
        else:
            # Session keys are secrets of the visitor's browser: show a fragment only.
            label = f"anonymous session {conversation.owner_key[:6]}…"
        labels[str(conversation.id)] = label
    return labels


def _primary_keys(keys: Iterable[str]) -> list[object]:
    """The keys that are valid primary keys of the user model (others name no user)."""
    field = get_user_model()._meta.pk
    valid = []
    for key in keys:
        try:
            valid.append(field.to_python(key))
        except ValidationError:
            continue
    return valid
