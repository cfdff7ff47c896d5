"""What only the Django store has: a real cross-connection race, the command, migrations."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction

from chatomon.chat.store import MemoryStore, Owner
from chatomon.django.persistence import confirmations
from chatomon.django.persistence.store import DjangoStore
from tests.stores.conftest import NOW
from tests.stores.test_confirmations import OWNER, pending

ON_POSTGRES = connection.vendor == "postgresql"


def race(claim: Callable[[int], object], workers: int = 8) -> list[object]:
    """Run `claim(i)` in `workers` threads released at the same moment."""
    barrier = threading.Barrier(workers)
    results: list[object] = [None] * workers

    def work(index: int) -> None:
        barrier.wait()
        try:
            results[index] = claim(index)
        finally:
            connections.close_all()  # each thread opened its own connection

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_memory_store_threads_see_exactly_one_winner() -> None:
    store = MemoryStore()
    created = asyncio.run(pending(store))
    results = race(
        lambda i: asyncio.run(
            store.claim(created.id, decision="approved", decided_by=f"t{i}", now=NOW)
        )
    )
    assert sum(r is not None for r in results) == 1


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite in memory has no concurrent writers")
@pytest.mark.django_db(transaction=True)
def test_database_connections_racing_for_one_claim_see_exactly_one_winner() -> None:
    created = asyncio.run(pending(DjangoStore()))
    results = race(
        lambda i: confirmations.claim(
            created.id, decision="approved", decided_by=f"t{i}", reason=None, owner=None, now=NOW
        )
    )
    assert sum(r is not None for r in results) == 1


@pytest.mark.django_db(transaction=True)
def test_chat_cleanup_expires_and_prunes_with_ttl_hours(settings: object) -> None:
    store = DjangoStore()
    settings.CHATOMON = {"ttl_hours": 1}
    old = asyncio.run(store.create_conversation(Owner.user(1), now=NOW - timedelta(days=400)))
    out = StringIO()
    call_command("chat_cleanup", stdout=out)
    assert "ttl_hours=1" in out.getvalue() and "deleted 1 conversation(s)" in out.getvalue()
    assert asyncio.run(store.get_conversation(Owner.user(1), old.id)) is None


@pytest.mark.django_db(transaction=True)
def test_chat_cleanup_defaults_to_24_hours_and_refuses_bad_values(settings: object) -> None:
    out = StringIO()
    call_command("chat_cleanup", stdout=out)
    assert "ttl_hours=24" in out.getvalue()
    settings.CHATOMON = {"ttl_hours": "soon"}
    with pytest.raises(CommandError, match="ttl_hours"):
        call_command("chat_cleanup", stdout=out)


def test_the_store_module_imports_without_settings() -> None:
    code = (
        "import chatomon.django.persistence.store, chatomon.chat.store, chatomon.chat.context;"
        " print('ok')"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert result.stdout.strip() == "ok"


@pytest.mark.django_db
def test_the_migrations_match_the_models() -> None:
    call_command("makemigrations", "chatomon", "--check", "--dry-run", stdout=StringIO())


def race_on_a_row_lock(first: Callable[[], object], second: Callable[[], object]) -> list[object]:
    """What `first` and `second` answer when `second` runs while `first` holds its locks.

    `first` runs in a transaction that commits 0.5 s after it returned, each on a thread
    (and a connection) of its own, so `second`'s update waits on `first`'s row locks.
    """
    first_holds_lock = threading.Event()
    results: dict[str, object] = {}

    def run_first() -> None:
        try:
            with transaction.atomic():
                results["first"] = first()
                first_holds_lock.set()
                threading.Event().wait(0.5)  # commit late: the second must wait
        finally:
            connections.close_all()

    def run_second() -> None:
        first_holds_lock.wait(5)
        try:
            results["second"] = second()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return [results.get("first"), results.get("second")]


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite in memory has no concurrent writers")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scoped", [False, True], ids=["any-owner", "owner-scoped"])
def test_a_claim_waiting_on_an_uncommitted_claim_loses(scoped: bool) -> None:
    """The second claimer blocks on the first one's row lock, then must see it decided."""
    created = asyncio.run(pending(DjangoStore()))
    owner = OWNER if scoped else None
    first, second = race_on_a_row_lock(
        lambda: confirmations.claim(
            created.id, decision="approved", decided_by="a", reason=None, owner=owner, now=NOW
        ),
        lambda: confirmations.claim(
            created.id, decision="rejected", decided_by="b", reason=None, owner=owner, now=NOW
        ),
    )
    assert first is not None
    assert second is None
    final = asyncio.run(DjangoStore().get_confirmation(created.id))
    assert final is not None
    assert (final.status, final.decided_by) == ("approved", "a")


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite in memory has no concurrent writers")
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_with_one_clock_expire_a_confirmation_once() -> None:
    """Both find the row pending; the second's update waits on the first's lock, then
    moves nothing: it must not take the first's expiry (same `now`) for its own."""
    created = asyncio.run(pending(DjangoStore()))
    later = created.expires_at + timedelta(seconds=1)
    first, second = race_on_a_row_lock(
        lambda: list(confirmations.expire_due(later)),
        lambda: list(confirmations.expire_due(later)),
    )
    assert isinstance(first, list) and isinstance(second, list)
    assert [len(first), len(second)] == [1, 0]
