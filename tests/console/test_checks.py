"""The console's system checks name what a project forgot to install."""

from __future__ import annotations

import importlib
from typing import Any

from django.core.checks import run_checks

checks = importlib.import_module("chatomon.console.checks")

COMPLETE = {
    "template_partials",
    "django_htmx",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "chatomon.django",
}
MIDDLEWARE = ["django_htmx.middleware.HtmxMiddleware"]


def ids(installed: set[str], middleware: list[str], version: tuple[int, int]) -> list[str]:
    return [m.id for m in checks.console_problems(installed, middleware, version)]


def test_a_complete_project_has_no_problem() -> None:
    assert ids(COMPLETE, MIDDLEWARE, (5, 2)) == []
    assert ids(COMPLETE - {"template_partials"}, MIDDLEWARE, (6, 0)) == []


def test_each_missing_piece_is_named_with_a_hint() -> None:
    assert ids(COMPLETE - {"template_partials"}, MIDDLEWARE, (5, 2)) == ["chatomon_console.E001"]
    # The console serves its own copy of htmx: django_htmx need not be an installed app.
    assert ids(COMPLETE - {"django_htmx"}, MIDDLEWARE, (5, 2)) == []
    (problem,) = checks.console_problems(COMPLETE - {"django.contrib.sessions"}, MIDDLEWARE, (5, 2))
    assert problem.id == "chatomon_console.E003" and "django.contrib.sessions" in problem.msg
    (warning,) = checks.console_problems(COMPLETE, [], (5, 2))
    assert warning.id == "chatomon_console.W001" and warning.hint
    assert all(m.hint for m in checks.console_problems(set(), [], (5, 2)))


def test_the_test_project_passes_the_registered_check() -> None:
    # databases=[]: Django 6 otherwise gives every model check the database.
    messages = run_checks(databases=[])
    assert [m.id for m in messages if m.id and m.id.startswith("chatomon_console")] == []


def test_a_wrong_console_setting_is_named_at_startup(settings: Any) -> None:
    # Without the check, the approvals pages answered 500 at their first card.
    settings.CHATOMON_CONSOLE = {"four_eyes": "maybe"}
    (problem,) = [m for m in run_checks(databases=[]) if m.id == "chatomon_console.E004"]
    assert "CHATOMON_CONSOLE['four_eyes']" in problem.msg and problem.hint
    assert checks.settings_problems(None) == []
