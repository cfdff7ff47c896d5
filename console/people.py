"""People as the console names them: one helper for owners, deciders, reviewers and actors.

chatomon stores people under a few labels: ``user:<pk>`` (audit actors, an end user's own
decision), ``session:<key>`` (an anonymous visitor), a username (a staff decision), or
``anonymous``. Every screen shows them through `display_names`, so the same person has
the same name everywhere: the user's full name when they have one, else their username.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Q

__all__ = ["display_name_of_user", "display_names", "name_of"]

USER_PREFIX = "user:"
SESSION_PREFIX = "session:"


def display_name_of_user(user: Any) -> str:
    """A user's full name when the model has one, else their username."""
    full_name = getattr(user, "get_full_name", lambda: "")() or ""
    return full_name.strip() or str(user.get_username())


def _session_label(key: str) -> str:
    # Session keys are secrets of the visitor's browser: show a fragment only.
    return f"anonymous session {key[:6]}…"


def _primary_key(value: str) -> object | None:
    try:
        key: object = get_user_model()._meta.pk.to_python(value)
    except ValidationError:
        return None
    return key


def display_names(labels: Iterable[str | None]) -> dict[str, str]:
    """Each stored label → the name to show, in at most one query (unknown labels as stored)."""
    wanted = {label for label in labels if label}
    keys = {label: _primary_key(label[len(USER_PREFIX) :]) for label in wanted
            if label.startswith(USER_PREFIX)}  # fmt: skip
    usernames = {label for label in wanted if ":" not in label and label != "anonymous"}
    model = get_user_model()
    username_field = model.USERNAME_FIELD
    found: dict[str, str] = {}
    where = Q(pk__in=[k for k in keys.values() if k is not None])
    where |= Q(**{f"{username_field}__in": usernames})
    if any(k is not None for k in keys.values()) or usernames:
        for user in model._default_manager.filter(where):
            name = display_name_of_user(user)
            found[f"{USER_PREFIX}{user.pk}"] = name
            found[str(user.get_username())] = name
    names = {}
    for label in wanted:
        if label.startswith(SESSION_PREFIX):
            names[label] = _session_label(label[len(SESSION_PREFIX) :])
        elif label.startswith(USER_PREFIX):
            names[label] = found.get(label, f"user #{label[len(USER_PREFIX) :]}")
        else:
            names[label] = found.get(label, label)
    return names


def name_of(names: Mapping[str, str] | None, label: str | None) -> str:
    """`label`'s name from names already looked up, else looked up alone ("—" for none)."""
    if not label:
        return "—"
    if names and label in names:
        return names[label]
    return display_names([label])[label]
