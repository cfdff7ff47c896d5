"""Database connections of the threads that serve chat turns, kept usable and few.

Django manages a thread's connections at the edges of a request (`close_old_connections`
on `request_started` and `request_finished`). Turns outlive that rhythm: a streamed turn
waits on its model for seconds, and turns streamed from the event loop (SSE, WebSocket) do
their store work on asgiref's one shared sync thread, which serves no request at all.

- `release_spent_connections`: before a stream starts, the request thread closes what
  Django would close at the request's end, so a waiting stream holds no connection.
- `drop_broken_connections`: before each store call, a connection whose last statement
  failed and that no longer answers (the database server restarted, a proxy cut it) is
  closed, so the call connects anew; without this the shared thread would keep failing on
  its dead connection until the process restarts.

Neither touches a connection inside an atomic block (a transaction the caller or a test
holds open).
"""

from __future__ import annotations

from django.db import connections

__all__ = ["drop_broken_connections", "release_spent_connections"]


def release_spent_connections() -> None:
    """Close the database connections Django would close at the request's end, now.

    On the calling thread: those past `CONN_MAX_AGE` (all, when it is 0, the default) and
    the unusable ones. Persistent connections stay.
    """
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


def drop_broken_connections() -> None:
    """Close this thread's connections that failed and no longer answer; keep the rest.

    Only a connection with an error since its last check is tested (Django's own test,
    `is_usable`), so a healthy thread pays one attribute read per connection.
    """
    for connection in connections.all(initialized_only=True):
        if connection.errors_occurred and not connection.in_atomic_block:
            if connection.is_usable():
                connection.errors_occurred = False
            else:
                connection.close()
