"""The chat configuration the transport tests share, in-process and in server processes."""

from __future__ import annotations

from typing import Any

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
# Signed-cookie sessions need no table and work across server processes; their keys are
# longer than the owner column, so the owner hashing path runs on every anonymous test.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
ROOT_URLCONF = "tests.asgi_app.urls"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
PROVIDER = "tests.asgi_app.providers.RulesProvider"
BLOCKED_PREFIX = "blocked"


def permission(user: Any, scope: Any) -> bool:
    """The test project's `permission` setting: users named "blocked..." may not chat."""
    return not str(getattr(user, "username", "")).startswith(BLOCKED_PREFIX)


def chatomon(**overrides: Any) -> dict[str, Any]:
    """The CHATOMON setting of the test project, with `overrides` on top."""
    base: dict[str, Any] = {
        "enabled": True,
        "provider": PROVIDER,
        "permission": "tests.asgi_app.project.permission",
        "registry": "tests.testapp.chat.build_registry",
        "allowed_mutations": ["createPart", "updatePartCost", "assignPartToProject"],
        "confirm_mutations": ["createPart"],
        "staff_approval_mutations": ["updatePartCost"],
        "rate_limit": {"requests": 1000, "window_seconds": 3600},
    }
    return {**base, **overrides}
