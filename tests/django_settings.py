"""Django settings for the tests: the test app and the console, on SQLite or PostgreSQL.

`DATABASE_URL=postgresql://postgres@127.0.0.1:5432/chatomon` runs the Django tests on
PostgreSQL (the test database is `test_chatomon`); unset, they use SQLite in memory.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import django


def database_from_url(url: str | None) -> dict[str, Any]:
    """The DATABASES entry for a postgresql:// or sqlite:// URL (None: SQLite in memory).

    PostgreSQL goes through Django's connection pool (`"OPTIONS": {"pool": ...}`, the
    recommended setting under ASGI, where `CONN_MAX_AGE = 0` alone reconnects on every store
    call) when psycopg_pool is installed; `?pool=off` in the URL turns it off.
    """
    if not url:
        # Django's test database for it is one in-memory database shared by every thread's
        # connection (SQLite's shared cache), where locks are per table and never waited
        # for: a test polling the turn table while the store's worker thread is inside a
        # write transaction would fail at once with "database table is locked". Reading
        # uncommitted rows lets such observers read; writers still take turns as ever.
        # (So here a tool's read on its own thread also sees rows a test has not committed:
        # a test that forgets `transaction=True` fails on PostgreSQL only, which CI runs.)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": ":memory:",
            "OPTIONS": {"init_command": "PRAGMA read_uncommitted = 1;"},
        }
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql"):
        database: dict[str, Any] = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": parts.path.lstrip("/") or "chatomon",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
        }
        pooled = parse_qs(parts.query).get("pool", ["on"])[-1] != "off"
        if pooled and importlib.util.find_spec("psycopg_pool") is not None:
            # A few connections kept open, never more than 8 per process however many
            # chats wait on their model: each store call borrows one briefly. With
            # CONN_HEALTH_CHECKS the pool checks each as it lends it (one round trip): a
            # session the server ended, as a restart does, is replaced before a store call
            # meets it.
            database["OPTIONS"] = {"pool": {"min_size": 2, "max_size": 8}}
            database["CONN_HEALTH_CHECKS"] = True
        return database
    if parts.scheme == "sqlite":
        # A file database the way a deployment runs it: write-ahead log, one fsync per
        # checkpoint rather than per commit (Django's SQLite init_command option), and
        # transactions that wait for the write lock at BEGIN (chatomon.W005).
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": parts.path or ":memory:",
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
            },
        }
    raise ValueError(f"unsupported DATABASE_URL scheme {parts.scheme!r}")


SECRET_KEY = "chatomon-tests-only-not-secret"
# Django 6 has template partials built in; 5.2 needs django-template-partials.
PARTIALS_APP = [] if django.VERSION >= (6, 0) else ["template_partials"]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    *PARTIALS_APP,
    "tests.testapp",
    "chatomon.django",
    "chatomon.console",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
ROOT_URLCONF = "tests.console.urls"
STATIC_URL = "/static/"
LOGIN_URL = "chatomon_console:login"
CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL"))}
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
