"""Database connections of the threads that serve chat turns: released at every store call.

Django releases a thread's connections at the edges of a request: `close_old_connections`
on `request_started` and `request_finished` closes those past `CONN_MAX_AGE` (all of them
with the default 0; with `"OPTIONS": {"pool": True}` on PostgreSQL, "closing" hands the
connection back to the pool) and those that broke. Chat turns do not keep that rhythm: a
streamed turn waits on its model for seconds inside one request, and the store's calls run
on worker threads that serve no request at all (`chatomon.django.persistence.store`). So
every store call is given the edges of a request of its own (`released`): a waiting turn
holds no connection, and a connection that broke (the database restarted, a proxy cut it)
is dropped by the next call instead of failing every later one. The chat views release
the request thread's own before a turn, and a stream before it waits on a confirmation.

While a transaction is open on the thread (`transaction.atomic` around `released`),
nothing is released: closing its connection would break it. Nor are SQLite connections: a
file handle holds no server's connection slot and cannot be cut by a restart, while
closing the last one checkpoints the write-ahead log and reopening one reruns its set-up
(together over a millisecond per store call); the store's SQLite calls keep theirs on
their one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import close_old_connections, connections, transaction

__all__ = [
    "holds_server_connections",
    "in_caller_transaction",
    "release_spent_connections",
    "released",
]

P = ParamSpec("P")
T = TypeVar("T")


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


def released(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)` between two `release_spent_connections`, as if a request.

    Before: a connection that broke or aged out since the last call is replaced. After,
    even when `function` raised: the thread keeps no connection it should not keep (a
    failed statement's broken connection included).
    """
    release_spent_connections()
    try:
        return function(*args, **kwargs)
    finally:
        release_spent_connections()
