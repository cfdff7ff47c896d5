"""Django's ASGI handler, with request threads that outlive their request.

Under ASGI, Django runs each request's synchronous work (sync middleware, signal receivers,
the ORM behind `sync_to_async`) on a thread of that request's own: `ASGIHandler` enters a
fresh `ThreadSensitiveContext` per request, which starts a new thread and so opens a new
database connection whatever `CONN_MAX_AGE` says (Django ticket #33497). Starting the thread
and connecting cost more than a whole chat turn's statements on SQLite.

`RequestThreadsHandler` gives every request a one-thread executor taken from a pool of idle
ones and puts it back afterwards. A request's sync work still runs on one thread that no
other request uses meanwhile, but threads, and with them persistent database connections,
live on between requests, as under a threaded WSGI server. Django's `request_started` and
`request_finished` receivers run on that thread as before, so `CONN_MAX_AGE` and
`CONN_HEALTH_CHECKS` work as documented.

One difference: a task a view leaves running after its response cannot make
thread-sensitive calls (asgiref raises `RuntimeError`, since the request's thread may be
serving another request by then), where Django's handler starts yet another thread for it.

```python
# asgi.py
from chatomon.django.asgi import get_asgi_application

application = get_asgi_application()
```
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler
from django.db import connections

__all__ = ["DEFAULT_IDLE_THREADS", "RequestThreadsHandler", "get_asgi_application"]

DEFAULT_IDLE_THREADS = 32
"""How many idle request threads a handler keeps; more concurrent requests start more."""


class RequestThreadsHandler(ASGIHandler):
    """`ASGIHandler` that reuses request threads (see the module docstring).

    Args:
        max_idle_threads: Idle threads kept for later requests. A request finding none
            starts one; a thread coming back to a full pool is stopped.
    """

    def __init__(self, *, max_idle_threads: int = DEFAULT_IDLE_THREADS) -> None:
        if max_idle_threads < 0:
            raise ValueError(f"max_idle_threads must be 0 or more, not {max_idle_threads}")
        super().__init__()
        self.max_idle_threads = max_idle_threads
        # deque.append and deque.pop are atomic, so loops in several threads may share it.
        self._idle: deque[ThreadPoolExecutor] = deque()

    @property
    def idle_threads(self) -> int:
        """How many request threads wait for a request now."""
        return len(self._idle)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one HTTP request on a pooled request thread."""
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self._take()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            # A sync call cancelled with its request may still run: the next request's
            # calls queue behind it on the same thread, never beside it.
            self._give_back(executor)

    def close(self) -> None:
        """Close the database connections of every idle request thread and stop it.

        For shutdown (and tests, whose database cannot be dropped while a thread holds a
        connection); later requests start new threads.
        """
        while self._idle:
            executor = self._idle.pop()
            executor.submit(connections.close_all).result()
            executor.shutdown(wait=True)

    def _take(self) -> ThreadPoolExecutor:
        try:
            return self._idle.pop()
        except IndexError:
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="django-request")

    def _give_back(self, executor: ThreadPoolExecutor) -> None:
        if len(self._idle) < self.max_idle_threads:
            self._idle.append(executor)
        else:
            executor.shutdown(wait=False)


def get_asgi_application(*, max_idle_threads: int = DEFAULT_IDLE_THREADS) -> RequestThreadsHandler:
    """Set Django up and return the handler: `django.core.asgi.get_asgi_application`'s twin."""
    django.setup(set_prefix=False)
    return RequestThreadsHandler(max_idle_threads=max_idle_threads)
