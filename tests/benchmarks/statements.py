"""Counting the SQL statements a benchmark runs, on every connection.

The chat store runs its calls on worker threads, each with a connection of its own (one
per thread, or per asgiref context), opened and closed as the store releases them. An
execute wrapper lives on one connection object: `StatementCounter` puts its wrapper first
on every connection object once, to those already open when it starts and to each one
Django opens later (`connection_created`), so a connection that closes and reconnects is
not counted twice and one opened in a new context is not missed.

Django documents the `connection.execute_wrapper()` context manager, not the list behind it
(`connection.execute_wrappers`) that this inserts into: a context manager cannot stay open
for a connection's whole life. This is a measuring tool of the benchmarks only; the product
(`sdk/`, `console/`) keeps to public APIs (`tests/test_public_apis.py`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["StatementCounter"]


class StatementCounter:
    """The number of SQL statements executed since `start()`, by any connection."""

    def __init__(self) -> None:
        self.executed = 0
        self._wrapped: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()  # worker threads count at once: += is not atomic

    def _count(
        self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: Any
    ) -> Any:
        with self._lock:
            self.executed += 1
        return execute(sql, params, many, context)

    def _wrap(self, connection: Any) -> None:
        if connection not in self._wrapped:
            self._wrapped.add(connection)
            # First, not last: `connection.execute_wrapper(...)` (the store wraps each of its
            # calls in one) pops the LAST wrapper on exit, which would drop a counter
            # appended while its block opened the connection.
            connection.execute_wrappers.insert(0, self._count)

    def _on_connection_created(self, sender: Any, connection: Any, **kwargs: Any) -> None:
        self._wrap(connection)

    def start(self) -> StatementCounter:
        """Count from now on; returns itself.

        Call it before Django opens the connections to count: one already open on another
        thread (a store's worker) cannot be reached from here, and is missed.
        """
        from django.conf import settings  # noqa: PLC0415
        from django.db.backends.signals import connection_created  # noqa: PLC0415

        connection_created.connect(self._on_connection_created, weak=False)
        if settings.configured:
            from django.db import connections  # noqa: PLC0415

            for connection in connections.all(initialized_only=True):
                self._wrap(connection)
        return self
