"""The demo's staff account: created or updated from the environment on every start.

`CHATOMON_DEMO_USER` (default "staff") and `CHATOMON_DEMO_PASSWORD` name it. Without a
password, a new account gets a generated one, shown once; an existing account keeps the
password it has (reset it with `python -m chatomon.demo manage changepassword staff`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model

__all__ = ["DEFAULT_USERNAME", "StaffAccount", "ensure_staff_user"]

DEFAULT_USERNAME = "staff"


@dataclass(frozen=True)
class StaffAccount:
    """The staff user, whether this run set its password, and the password it generated."""

    user: Any
    password_set: bool
    generated_password: str | None


def ensure_staff_user(environ: Mapping[str, str] = os.environ) -> StaffAccount:
    """Create or update the staff superuser the environment names."""
    username = environ.get("CHATOMON_DEMO_USER") or DEFAULT_USERNAME
    given = environ.get("CHATOMON_DEMO_PASSWORD") or None
    users = get_user_model()
    user: Any = users.objects.filter(username=username).first()
    created = user is None
    if user is None:
        user = users(username=username)
    user.is_active = user.is_staff = user.is_superuser = True
    generated = secrets.token_urlsafe(12) if created and given is None else None
    password = generated or given
    password_set = password is not None and not user.check_password(password)
    if password_set:
        user.set_password(password)
    user.save()
    return StaffAccount(user=user, password_set=password_set, generated_password=generated)
