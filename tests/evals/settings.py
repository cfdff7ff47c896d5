"""Django settings for the eval CLI's subprocess tests: no console, SQLite in memory.

The configured provider answers every question with the same sentence (`Shrugging`), so
a scripted case run with it fails: the tests tell which provider ran by the result.
"""

from __future__ import annotations

SECRET_KEY = "chatomon-eval-tests-only"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "chatomon.django",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
CHATOMON = {
    "provider": "tests.evals.providers.Shrugging",
    # The runner builds its turns' atom from the settings: the traces show this one.
    "atom": {"name": "evals_test", "input": ["chatomon.orbitals.PIIGuard"]},
    # The project's own managers, for the cases that name no fixture.
    "registry": "chatomon.data.fixtures.toy_registry",
}
