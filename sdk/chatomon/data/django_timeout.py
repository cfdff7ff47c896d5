"""query_timeout_seconds on the database: PostgreSQL and SQLite cancel a slow read.

PostgreSQL: the reads run in a transaction whose `statement_timeout` is set with
`set_config(..., true)` (SET LOCAL), and restored afterwards, since inside an outer
transaction the setting would otherwise outlive the block. SQLite: a connection progress
handler interrupts the statement once the deadline has passed. Either way the cancelled
read becomes a `QueryTimeoutError` (tool error `query_timeout`). Other databases run
without a timeout.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import OperationalError, connections, transaction

from chatomon.data.errors import QueryTimeoutError

__all__ = ["PROGRESS_STEPS", "statement_timeout"]

PROGRESS_STEPS = 1000
"""SQLite virtual-machine steps between two deadline checks."""

_QUERY_CANCELED = "57014"


def _timeout_error(seconds: float) -> QueryTimeoutError:
    return QueryTimeoutError(
        f"the query took longer than {seconds:g} s and was cancelled; "
        "narrow it with filters or ask for fewer rows",
    )


def _is_cancellation(error: OperationalError) -> bool:
    cause: Any = error.__cause__
    return getattr(cause, "sqlstate", None) == _QUERY_CANCELED or (
        getattr(cause, "pgcode", None) == _QUERY_CANCELED
    )


@contextmanager
def _postgresql(alias: str, seconds: float) -> Iterator[None]:
    milliseconds = max(1, math.ceil(seconds * 1000))
    try:
        with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
            cursor.execute("SELECT current_setting('statement_timeout')")
            (previous,) = cursor.fetchone() or ("0",)
            cursor.execute(
                "SELECT set_config('statement_timeout', %s, true)", [f"{milliseconds}ms"]
            )
            yield
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])
    except OperationalError as error:
        if _is_cancellation(error):
            raise _timeout_error(seconds) from error
        raise


@contextmanager
def _sqlite(alias: str, seconds: float) -> Iterator[None]:
    connection = connections[alias]
    with connection.cursor():  # opens the connection if it is not open yet
        pass
    raw = connection.connection
    deadline = time.monotonic() + seconds
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), PROGRESS_STEPS)
    try:
        yield
    except OperationalError as error:
        if "interrupted" in str(error):
            raise _timeout_error(seconds) from error
        raise
    finally:
        raw.set_progress_handler(None, PROGRESS_STEPS)


@contextmanager
def statement_timeout(alias: str, seconds: float | None) -> Iterator[None]:
    """Cancel the reads inside the block after `seconds` (None: no limit)."""
    vendor = connections[alias].vendor
    if seconds is None or vendor not in ("postgresql", "sqlite"):
        yield
    elif vendor == "postgresql":
        with _postgresql(alias, seconds):
            yield
    else:
        with _sqlite(alias, seconds):
            yield
