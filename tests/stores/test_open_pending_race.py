"""A message sent while the conversation's turn suspends, on PostgreSQL with two connections.

`turns.open_unless_pending` locks the conversation's row before it reads the pending
confirmation, and `turns.suspend_turn` locks it (its touch) in the transaction that records
one: whichever comes second waits for the other's commit. Each test holds one side's
transaction open, sees the other side wait on the lock (`pg_stat_activity`), then lets it
commit: the message is refused, or the suspension comes after the opened turn. Without the
lock neither waits (the check ran before and outside the opening), which these tests catch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections, transaction

from chatomon.chat.store import PendingConfirmation
from chatomon.chat.store.records import OpenedTurn
from chatomon.django import models
from chatomon.django.persistence import turns
from tests.stores.conftest import NOW
from tests.stores.test_suspend import ITEMS, OWNER, asked

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="SQLite in memory has no concurrent writers"
    ),
    pytest.mark.django_db(transaction=True),
]
LATER = NOW + timedelta(seconds=5)
PATIENCE = 30.0
"""Seconds a side may take to get where the test waits for it (a bound, not a measure)."""


def in_thread(work: Callable[[], Any], results: dict[str, Any], name: str) -> threading.Thread:
    """Start `work()` on its own thread (its own connection); its result or error in `results`."""

    def run() -> None:
        try:
            results[name] = work()
        except BaseException as error:  # reported by the test's assertions
            results[name] = error
        finally:
            connections.close_all()  # the thread's own connection

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def wait_for_a_lock_waiter() -> None:
    """Return once another connection of this database waits on a lock; fail after PATIENCE."""
    deadline = time.monotonic() + PATIENCE
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return
            time.sleep(0.02)
    pytest.fail("the second side never waited for the first one's lock")


def running_turn() -> OpenedTurn:
    """A committed conversation of OWNER with one running turn."""
    opened = turns.open_turn(OWNER, None, NOW)
    assert opened is not None
    return opened


def test_a_message_during_a_suspension_waits_for_it_and_is_refused() -> None:
    opened = running_turn()
    held, release = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def suspend() -> PendingConfirmation:
        with transaction.atomic():  # held open after the suspension, until released
            created = turns.suspend_turn(
                OWNER, opened.conversation.id, opened.turn.id, items=ITEMS, now=NOW, **asked()
            )
            held.set()
            release.wait(PATIENCE)
        return created

    try:
        suspending = in_thread(suspend, results, "suspension")
        assert held.wait(PATIENCE), results
        sending = in_thread(
            lambda: turns.open_unless_pending(OWNER, None, LATER, latest=True), results, "message"
        )
        wait_for_a_lock_waiter()
    finally:
        release.set()
    suspending.join(PATIENCE)
    sending.join(PATIENCE)
    confirmation = results["suspension"]
    assert isinstance(confirmation, PendingConfirmation)
    assert results["message"] == confirmation
    assert list(models.Turn.objects.values_list("pk", flat=True)) == [opened.turn.id]


def test_a_suspension_during_an_opening_waits_for_it_and_comes_after_the_turn() -> None:
    opened = running_turn()
    held, release = threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def send() -> Any:
        with transaction.atomic():  # held open after the opening, until released
            new = turns.open_unless_pending(OWNER, None, LATER, latest=True)
            held.set()
            release.wait(PATIENCE)
        return new

    try:
        sending = in_thread(send, results, "message")
        assert held.wait(PATIENCE), results
        suspending = in_thread(
            lambda: turns.suspend_turn(
                OWNER, opened.conversation.id, opened.turn.id, items=ITEMS, now=LATER, **asked()
            ),
            results,
            "suspension",
        )
        wait_for_a_lock_waiter()
    finally:
        release.set()
    sending.join(PATIENCE)
    suspending.join(PATIENCE)
    new = results["message"]
    assert isinstance(new, OpenedTurn) and new.conversation.id == opened.conversation.id
    confirmation = results["suspension"]
    assert isinstance(confirmation, PendingConfirmation)
    # The suspension committed after the turn it let through; the next message is refused.
    statuses = dict(models.Turn.objects.values_list("pk", "status"))
    assert statuses == {opened.turn.id: "awaiting_confirmation", new.turn.id: "running"}
    assert turns.open_unless_pending(OWNER, None, LATER, latest=True) == confirmation
