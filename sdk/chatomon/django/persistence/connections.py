"""Database connections of the threads that serve chat turns: released at every store call.

Django releases a thread's connections at the edges of a request: `close_old_connections`
on `request_started` and `request_finished` closes those past `CONN_MAX_AGE` (all of them
with the default 0; with `"OPTIONS": {"pool": True}` on PostgreSQL, "closing" hands the
connection back to the pool) and those that broke. Chat turns do not keep that rhythm: a
streamed turn waits on its model for seconds inside one request, and the store's calls run
on worker threads that serve no request at all (`chatomon.django.persistence.store`). So
every store call is given the edges of a request of its own (`released`): a waiting turn
holds no connection, and a connection that broke (the database restarted, a proxy cut it)
is dropped by the next call instead of failing every later one. A chat tool's database
work (`in_tool_worker`) gets the same edges, on threads of its own. The chat views release
the request thread's own before a turn, and a stream before it waits on a confirmation.

A connection the database closed while it sat idle (a restart, a failover, an idle
timeout) looks healthy to Django until a statement fails on it: kept between calls
(`CONN_MAX_AGE` above 0), or lent by the pool, without `CONN_HEALTH_CHECKS`. So when a
call's FIRST statement fails and leaves its connection closed, nothing of the call ran: `released`
drops the dead connection and runs the call again (up to `MAX_RECONNECTS` times, as a
pool may lend several dead ones in a row). A failure after a statement went through, or
on connecting (the database is down: retrying would only wait longer), is the caller's.

While a transaction is open on the thread (`transaction.atomic` around `released`),
nothing is released: closing its connection would break it. Nor are SQLite connections: a
file handle holds no server's connection slot and cannot be cut by a restart, while
closing the last one checkpoints the write-ahead log and reopening one reruns its set-up
(together over a millisecond per store call); the store's SQLite calls keep theirs on
their one thread, the tools' on theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
    transaction,
)

__all__ = [
    "MAX_RECONNECTS",
    "TOOL_WORKERS",
    "holds_server_connections",
    "in_caller_transaction",
    "in_tool_worker",
    "release_spent_connections",
    "released",
]

P = ParamSpec("P")
T = TypeVar("T")

MAX_RECONNECTS = 10
"""How many dead connections one call may meet (and drop) before its error is raised.

Above a pool's usual size: after a database restart every pooled connection is dead."""


def in_caller_transaction() -> bool:
    """Whether one of the calling thread's open connections is inside a transaction.

    A transaction (`transaction.atomic`, or autocommit turned off) shows as autocommit off.
    Only open connections are asked: asking a closed one would connect it, and a closed
    connection holds no transaction to protect.
    """
    return any(
        connection.connection is not None and not transaction.get_autocommit(connection.alias)
        for connection in connections.all(initialized_only=True)
    )


def holds_server_connections() -> bool:
    """Whether the calling thread has an open connection to a database server (not SQLite)."""
    return any(
        connection.connection is not None and connection.vendor != "sqlite"
        for connection in connections.all(initialized_only=True)
    )


def release_spent_connections() -> None:
    """Do now, on this thread, what Django does at a request's edges (`close_old_connections`).

    Closes (or returns to the pool) the connections past `CONN_MAX_AGE` and the broken ones;
    persistent, healthy connections stay. Nothing happens inside a caller's transaction, nor
    while the thread holds no server connection (SQLite only: see the module docstring).
    """
    if holds_server_connections() and not in_caller_transaction():
        close_old_connections()


class _FirstStatement:
    """An execute wrapper noting whether a call's first statement found its connection dead.

    Dead: the driver's connection is closed once the statement failed (the server was
    gone). A statement that failed on a live connection (a timeout, a deadlock, a lock)
    is not run again.
    """

    def __init__(self) -> None:
        self.sent = False
        self.first_failed = False

    def __call__(
        self, execute: Callable[..., Any], sql: Any, params: Any, many: bool, context: Any
    ) -> Any:
        first, self.sent = not self.sent, True
        try:
            return execute(sql, params, many, context)
        except (OperationalError, InterfaceError):
            self.first_failed = first and _closed(context["connection"])
            raise


def _closed(connection: Any) -> bool:
    """Whether the driver's connection under a Django connection is closed (or gone)."""
    driver = connection.connection
    return driver is None or bool(getattr(driver, "closed", False))


@contextmanager
def _watching_statements() -> Iterator[_FirstStatement]:
    watcher = _FirstStatement()
    with ExitStack() as stack:
        for connection in connections.all():
            stack.enter_context(connection.execute_wrapper(watcher))
        yield watcher


def released(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` between two `release_spent_connections`, as if a request.

    Before: a connection that broke or aged out since the last call is replaced. After,
    even when `function` raised: the thread keeps no connection it should not keep (a
    failed statement's broken connection included). A call whose first statement met a
    dead connection runs again on a new one (see the module docstring).
    """
    # Inside a caller's transaction a dead connection took the transaction with it.
    attempts = 1 if in_caller_transaction() else MAX_RECONNECTS + 1
    return _released_within(attempts, function, *args, **kwargs)


def _released_within(
    attempts: int, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """`released`'s work: at most `attempts` runs, the later ones after a dead connection."""
    for attempt in range(1, attempts + 1):
        release_spent_connections()
        try:
            with _watching_statements() as watcher:
                return function(*args, **kwargs)
        except (OperationalError, InterfaceError):
            if not watcher.first_failed or attempt == attempts:
                raise
        finally:
            release_spent_connections()
    raise AssertionError("unreachable: the last attempt returns or raises")


TOOL_WORKERS = ThreadPoolExecutor(thread_name_prefix="chatomon-tools")
"""The threads of the chat tools' database work (`in_tool_worker`), apart from the loop's
default executor, where the store's calls run: slow tool queries never hold a store call
back. They outlive requests, so on SQLite each keeps its connection."""


def _released_once(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    # Unlike `released`, never run again: a project's mutation may act outside the
    # database (a mail, a webhook) before its first statement meets a dead connection.
    return _released_within(1, function, *args, **kwargs)


# Built once: building it per call would run asgiref's inspection every time.
_on_the_tool_workers = sync_to_async(_released_once, thread_sensitive=False, executor=TOOL_WORKERS)


async def in_tool_worker(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`: a chat tool's database work, as a unit of its own.

    On a thread of `TOOL_WORKERS`, between two `release_spent_connections` (as a request's
    edges), run once. Under Django's `ASGIHandler` the request's own thread (asgiref's
    thread-sensitive mode, the SDK's default) is a new one per request: on SQLite a new
    connection, and its set-up, per read. The work joins no transaction of its caller.
    """
    result: T = await _on_the_tool_workers(function, *args, **kwargs)
    return result
