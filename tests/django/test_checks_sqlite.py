"""chatomon.W005: the chat store's SQLite file database must open its transactions IMMEDIATE."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from tests.django.test_checks import chat_checks, ids, only

SQLITE_FILE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/chat/db.sqlite3"}
POSTGRESQL = {"ENGINE": "django.db.backends.postgresql", "NAME": "chatomon"}
# These tests change DATABASES for the check to read; no connection is made to them.
ONLY_READ = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES:UserWarning")


class StoreOnChat:
    """A database router sending chatomon's models to the `chat` database."""

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return "chat" if model._meta.app_label == "chatomon" else None


@pytest.mark.parametrize(
    "options",
    [{}, {"timeout": 20}, {"transaction_mode": "DEFERRED"}, {"transaction_mode": None}],
    ids=["no-options", "timeout-only", "deferred", "none"],
)
@ONLY_READ
def test_w005_a_sqlite_file_database_with_deferred_transactions(options) -> None:
    with override_settings(DATABASES={"default": {**SQLITE_FILE, "OPTIONS": options}}):
        message = only(chat_checks(), "chatomon.W005")
    assert message.level < 40  # a warning
    assert "DATABASES['default']" in message.msg
    assert "database is locked" in message.msg
    assert "transaction_mode'] = 'IMMEDIATE'" in str(message.hint)


@pytest.mark.parametrize(
    "entry",
    [
        {**SQLITE_FILE, "OPTIONS": {"transaction_mode": "IMMEDIATE"}},
        {**SQLITE_FILE, "OPTIONS": {"transaction_mode": "immediate", "timeout": 20}},
        {**SQLITE_FILE, "OPTIONS": {"transaction_mode": "EXCLUSIVE"}},
        {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
        {"ENGINE": "django.db.backends.sqlite3", "NAME": "file:memorydb?mode=memory&cache=shared"},
        POSTGRESQL,
    ],
    ids=["immediate", "lower-case", "exclusive", "memory", "test-memory", "postgresql"],
)
@ONLY_READ
def test_w005_is_silent_for_immediate_in_memory_or_other_databases(entry) -> None:
    with override_settings(DATABASES={"default": entry}):
        assert "chatomon.W005" not in ids(chat_checks())


@ONLY_READ
def test_w005_reads_the_database_the_chat_store_writes_to() -> None:
    routed = [f"{__name__}.StoreOnChat"]
    with override_settings(
        DATABASES={"default": SQLITE_FILE, "chat": POSTGRESQL}, DATABASE_ROUTERS=routed
    ):
        assert "chatomon.W005" not in ids(chat_checks())
    with override_settings(
        DATABASES={"default": POSTGRESQL, "chat": SQLITE_FILE}, DATABASE_ROUTERS=routed
    ):
        message = only(chat_checks(), "chatomon.W005")
    assert "DATABASES['chat']" in message.msg


@ONLY_READ
def test_w005_is_not_checked_while_chat_is_disabled() -> None:
    with override_settings(DATABASES={"default": SQLITE_FILE}):
        assert chat_checks(enabled=False) == []
