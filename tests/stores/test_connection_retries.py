"""`released` runs a store call again only when its first statement met a dead connection.

PostgreSQL only (a SQLite file cannot be cut). A connection the server ended (a restart,
a failover, an idle timeout) fails the statement and is left closed: nothing of the call
ran, so it runs again on a new connection, up to `MAX_RECONNECTS` times. A statement that
fails on a live connection (here a statement timeout) is the caller's at once: running it
again would only fail, or wait, again.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import OperationalError, connection

from chatomon.django.persistence.connections import MAX_RECONNECTS, in_tool_worker, released
from tests.services import needs_postgres

pytestmark = [
    needs_postgres,
    pytest.mark.django_db(transaction=True),
]


def test_a_call_whose_connection_died_runs_again_on_a_new_one() -> None:
    calls: list[int] = []

    def first_dies() -> int:
        with connection.cursor() as cursor:
            if not calls:  # the server ends this session under the call's first statement
                calls.append(1)
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
            calls.append(2)
            cursor.execute("SELECT 41 + 1")
            return int(cursor.fetchone()[0])

    assert released(first_dies) == 42
    assert calls == [1, 2]


@pytest.mark.parametrize(
    ("run", "runs"),
    [
        (released, MAX_RECONNECTS + 1),  # a store call: nothing of it ran, so again
        # A tool's work never again: a project's mutation may act outside the database (a
        # mail) before its first statement. The turn gets the error instead.
        (async_to_sync(in_tool_worker), 1),
    ],
    ids=["store call", "tool work"],
)
def test_a_connection_that_keeps_dying_fails_after_the_runs_allowed(run: Any, runs: int) -> None:
    calls: list[int] = []

    def always_dies() -> None:
        calls.append(1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    with pytest.raises(OperationalError):
        run(always_dies)
    assert len(calls) == runs


def test_a_statement_failing_on_a_live_connection_is_not_run_again() -> None:
    calls: list[int] = []

    def times_out() -> None:
        calls.append(1)
        with connection.cursor() as cursor:
            # LOCAL: one implicit transaction holds both, and the pooled session keeps no timeout
            cursor.execute("SET LOCAL statement_timeout = 10; SELECT pg_sleep(5)")

    with pytest.raises(OperationalError):
        released(times_out)
    assert calls == [1]
