"""System checks of the console: what a project must install for its pages to work.

| id                       | problem                                                     |
|--------------------------|-------------------------------------------------------------|
| `chatomon_console.E001`  | Django < 6 without `template_partials` (partial responses fail) |
| `chatomon_console.E003`  | sessions, messages, auth or `chatomon.django` is not installed  |
| `chatomon_console.E004`  | `CHATOMON_CONSOLE` is not valid (the approvals pages would fail) |
| `chatomon_console.W001`  | `HtmxMiddleware` is not in MIDDLEWARE                       |
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import django
from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register

from chatomon.errors import ConfigurationError

from .conf import SETTING, build_console_settings

__all__ = ["REQUIRED_APPS", "check_console", "console_problems", "settings_problems"]

REQUIRED_APPS = (
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "chatomon.django",
)
HTMX_MIDDLEWARE = "django_htmx.middleware.HtmxMiddleware"


def console_problems(
    installed: Collection[str], middleware: Sequence[str], django_version: tuple[int, ...]
) -> list[CheckMessage]:
    """The console's problems for a project with these apps, middleware and Django."""
    problems: list[CheckMessage] = []
    if django_version < (6, 0) and "template_partials" not in installed:
        problems.append(
            Error(
                "the chatomon console needs template partials, which Django "
                f"{'.'.join(map(str, django_version[:2]))} does not have built in",
                hint='Add "template_partials" (pip install django-template-partials) to '
                "INSTALLED_APPS, or use Django 6.",
                id="chatomon_console.E001",
            )
        )
    missing = [name for name in REQUIRED_APPS if name not in installed]
    if missing:
        problems.append(
            Error(
                f"the chatomon console needs these apps: {', '.join(missing)}",
                hint="Add them to INSTALLED_APPS (staff log in with Django's auth and sessions).",
                id="chatomon_console.E003",
            )
        )
    if HTMX_MIDDLEWARE not in middleware:
        problems.append(
            Warning(
                "HtmxMiddleware is not in MIDDLEWARE: request.htmx is unavailable to your "
                "own views (the console reads the HTMX headers itself)",
                hint=f'Add "{HTMX_MIDDLEWARE}" to MIDDLEWARE, after the session middleware.',
                id="chatomon_console.W001",
            )
        )
    return problems


def settings_problems(raw: Any) -> list[CheckMessage]:
    """The problem of a CHATOMON_CONSOLE value, if it has one (at startup, not on a page)."""
    try:
        build_console_settings(raw)
    except ConfigurationError as error:
        return [
            Error(
                str(error),
                hint=f"Fix {SETTING}: see chatomon.console.conf for its keys.",
                id="chatomon_console.E004",
            )
        ]
    return []


@register()
def check_console(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The registered check: `console_problems` and `settings_problems` for this project."""
    installed = {config.name for config in apps.get_app_configs()}
    return [
        *console_problems(installed, list(settings.MIDDLEWARE), django.VERSION[:2]),
        *settings_problems(getattr(settings, SETTING, None)),
    ]
