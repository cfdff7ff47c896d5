"""Settings of the `--record` CLI test: the test project with the console, on a SQLite file.

The file is `CHATOMON_EVALS_TEST_DB` (the test's temporary directory), migrated by the test.
"""

from __future__ import annotations

import os

from tests.django_settings import *  # noqa: F403 - the test project, with its database replaced

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("CHATOMON_EVALS_TEST_DB", ":memory:"),
    }
}
CHATOMON = {"provider": "tests.evals.providers.Shrugging"}
# The report prices a provider as the console prices a turn: by model, else by class name.
CHATOMON_CONSOLE = {"prices": {"Shrugging": {"input": "1.00", "output": "2.00"}}}
