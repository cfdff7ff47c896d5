"""Django settings of the demo: the embedded defaults (SQLite, local memory, in-process).

Environment:
    CHATOMON_DEMO_DATA: folder for the SQLite database and the secret key (default `.demo`
        in the current directory).
    CHATOMON_PROVIDER: the provider, as a short name ("openai:gpt-4.1-mini" with
        OPENAI_API_KEY, "ollama:gemma4:e4b", ...) or a dotted class path; default "local",
        the embedded offline model.
    CHATOMON_PROVIDER_CONFIG: optional JSON object passed to the provider.
    CHATOMON_DEMO_ALLOWED_HOSTS: comma-separated host names served (default loopback).
    CHATOMON_DEMO_DEBUG: "1" shows Django's debug pages.
    CHATOMON_DEMO_HISTORY: "0" leaves out the few days of seeded conversations
        (`chatomon.demo.history`) a new demo database otherwise gets.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import django

from chatomon.demo.orbitals import HumanHandoff
from chatomon.orbitals import Blocklist, PIIGuard, PromptInjectionGuard

DATA_DIR = Path(os.environ.get("CHATOMON_DEMO_DATA") or ".demo").resolve()


def _secret_key(folder: Path) -> str:
    """The key kept in the data folder, so sessions outlive a restart; made on first use."""
    path = folder / "secret_key"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def _provider_config() -> dict[str, Any]:
    raw = os.environ.get("CHATOMON_PROVIDER_CONFIG") or "{}"
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"CHATOMON_PROVIDER_CONFIG must be a JSON object, got {raw!r}")
    return value


SECRET_KEY = _secret_key(DATA_DIR)
DEBUG = os.environ.get("CHATOMON_DEMO_DEBUG") == "1"
ALLOWED_HOSTS = (
    os.environ.get("CHATOMON_DEMO_ALLOWED_HOSTS") or "127.0.0.1,localhost,[::1]"
).split(",")

# The console's templates use partials: built into Django 6, from django-template-partials on 5.2.
PARTIALS_APP = [] if django.VERSION >= (6, 0) else ["template_partials"]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    *PARTIALS_APP,
    "chatomon.django",
    "chatomon.console",
    "chatomon.demo",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]
ROOT_URLCONF = "chatomon.demo.urls"
ASGI_APPLICATION = "chatomon.demo.asgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "demo.sqlite3",
        # Several turns write at once (a chat, a staff decision): wait for the lock.
        "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
    }
}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"

STATIC_URL = "static/"
LOGIN_URL = "chatomon_console:login"
LOGIN_REDIRECT_URL = "chatomon_console:dashboard"
LOGOUT_REDIRECT_URL = "chatomon_demo:home"

CHATOMON: dict[str, Any] = {
    "enabled": True,
    "provider": os.environ.get("CHATOMON_PROVIDER") or "local",
    "provider_config": _provider_config(),
    "allowed_mutations": ["createPart", "updatePartCost", "assignPartToProject"],
    "staff_approval_mutations": ["updatePartCost"],
    "confirm_mutations": ["assignPartToProject"],
    # People decide these, not machines: give them minutes rather than the seed's 30 seconds.
    "confirm_timeout_seconds": 300,
    "staff_approval_timeout_seconds": 3600,
    "system_prompt": (
        "You assist the staff of Acme Parts, a small manufacturing company. Answer from the "
        "company's data (materials, suppliers, parts, projects) using the tools; cite part "
        "numbers and project codes."
    ),
    "audit": {"enabled": True, "level": "all"},
    "atom": {
        "name": "acme-assistant",
        "input": [PromptInjectionGuard(), PIIGuard(), HumanHandoff()],
        # Output orbitals that check a growing prefix keep the reply streaming.
        "output": [Blocklist(["password", "api key"], side="output", name="no_credentials")],
        # A demo is for looking at reports: keep the texts in them.
        "capture_content": "full",
        # Check (and release) the streamed reply every dozen characters, not every 40.
        "options": {"stream_window": 12},
    },
}

# The turn page's usage and cost: what a million input and output tokens cost, per model
# round (a report names its provider's class until rounds name their model). The embedded
# model runs here for nothing; the seeded history's scripted rounds (chatomon.demo.history)
# are priced as a small hosted model would be, for illustration.
CHATOMON_CONSOLE: dict[str, Any] = {
    "prices": {
        "LocalProvider": {"input": "0", "output": "0"},
        "ScriptedProvider": {"input": "0.40", "output": "1.60"},
    },
    "currency": "USD",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"line": {"format": "%(asctime)s %(levelname)-7s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "line"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "chatomon": {"level": "INFO"},
        "chatomon.demo": {"level": "INFO"},
        # Start, stop and connection problems; one line per request would bury them.
        "uvicorn.error": {"level": "INFO"},
    },
}
