"""Django's ASGI handler, with request threads that outlive their request.

Under ASGI, Django runs each request's synchronous work (sync middleware, signal receivers,
the ORM behind `sync_to_async`) on a thread of that request's own: `ASGIHandler` enters a
fresh `ThreadSensitiveContext` per request, which starts a new thread and so opens a new
database connection whatever `CONN_MAX_AGE` says (Django ticket #33497). It also moves to
that thread and back for `request_started`, for every method of every synchronous
middleware (Django's session, CSRF and authentication middleware make seven such trips per
request) and for closing the response. On two shared cores each trip wakes the other
thread's CPU, and the thread start, the connection and the trips cost more than a whole
chat turn.

`RequestThreadsHandler` changes two things:

- Every request gets a one-thread executor taken from a pool of idle ones and put back
  afterwards. A request's sync work still runs on one thread that no other request uses
  meanwhile, but threads, and with them persistent database connections, live on between
  requests, as under a threaded WSGI server. Django's `request_started` and
  `request_finished` receivers run on that thread, so `CONN_MAX_AGE` and
  `CONN_HEALTH_CHECKS` work as documented.
- When synchronous middleware would make those trips (`middleware="auto"`, the default),
  the request goes to its thread once, as under WSGI: `request_started`, the whole
  middleware chain and the view, and, for a complete (not streaming) response, its
  `close()` with `request_finished`. An async view runs on the server's event loop through
  `async_to_sync`, its own sync calls going back to the request thread. A sync view's
  async work run through `chatomon.django.request_loop.run_async` (the chat views' turns)
  runs on the request thread's own event loop instead, its sync calls right there: no
  trip at all. The blocking calls of those loops (a sync orbital's `asyncio.to_thread`)
  share one pool of the handler, not one per request thread. Streaming responses still
  stream from the event loop and are closed on the request thread after their last
  chunk. With only async-capable, non-hopping middleware the chain stays async and
  requests run as in Django's handler.

With the sync chain, a request that ends before its response (the client left, or the
server cancelled it) cancels its view's work, a turn on the request loop included, and
still sends `request_finished` once, after the trip to the thread is over.

Two differences from Django's handler: a complete response is closed, and
`request_finished` sent, just before its bytes go to the server rather than just after
(the response is whole by then, so receivers see the same state); and a task a view leaves
running after its response cannot make thread-sensitive calls (asgiref raises
`RuntimeError`, since the request's thread may be serving another request by then), where
Django's handler starts yet another thread for it.

```python
# asgi.py
from chatomon.django.asgi import get_asgi_application

application = get_asgi_application()
```
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any, Literal, cast

import django
from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import connections
from django.http import FileResponse
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string

from chatomon.django.request_loop import RequestLoop, enter_request, leave_request

__all__ = [
    "DEFAULT_IDLE_THREADS",
    "MiddlewareMode",
    "RequestThreadsHandler",
    "get_asgi_application",
    "hopping_middleware",
]

MiddlewareMode = Literal["auto", "async", "sync"]
"""How the middleware chain runs: "sync" on the request thread in one trip, "async" as
Django's handler runs it, "auto" sync exactly when `hopping_middleware` finds some."""

_HOOKS = (
    "process_request",
    "process_view",
    "process_response",
    "process_exception",
    "process_template_response",
)

DEFAULT_IDLE_THREADS = 32
"""How many idle request threads a handler keeps; more concurrent requests start more."""


class RequestThreadsHandler(ASGIHandler):
    """`ASGIHandler` that reuses request threads (see the module docstring).

    Args:
        max_idle_threads: Idle threads kept for later requests. A request finding none
            starts one; a thread coming back to a full pool is stopped.
        middleware: How the middleware chain runs (`MiddlewareMode`); "auto" picks "sync"
            when some middleware would otherwise make trips to the request thread.

    Raises:
        ValueError: A negative `max_idle_threads`, or an unknown `middleware` mode.
    """

    def __init__(
        self, *, max_idle_threads: int = DEFAULT_IDLE_THREADS, middleware: MiddlewareMode = "auto"
    ) -> None:
        if max_idle_threads < 0:
            raise ValueError(f"max_idle_threads must be 0 or more, not {max_idle_threads}")
        if middleware not in ("auto", "async", "sync"):
            raise ValueError(f'middleware must be "auto", "async" or "sync", not {middleware!r}')
        self.max_idle_threads = max_idle_threads
        self.sync_middleware = middleware == "sync" or (
            middleware == "auto" and bool(hopping_middleware(settings.MIDDLEWARE))
        )
        # deque.append and deque.pop are atomic, so loops in several threads may share it.
        self._idle: deque[ThreadPoolExecutor] = deque()
        self._threads = threading.local()  # each request thread's RequestLoop
        # The default executor of every request loop (sync orbitals, asyncio.to_thread):
        # one pool for the handler rather than one per request thread. Threads start on use.
        self._blocking_calls = _blocking_pool()
        self._serve_on_thread = sync_to_async(self._serve, thread_sensitive=True)
        self._finish_on_thread = sync_to_async(self._finish, thread_sensitive=True)
        super().__init__()  # builds the middleware chain (see load_middleware)

    def load_middleware(self, is_async: bool = False) -> None:
        """Build the middleware chain: sync when `sync_middleware`, whatever Django asks."""
        super().load_middleware(is_async=is_async and not self.sync_middleware)

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

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one request: as Django does, or in one trip to its thread (sync chain)."""
        if not self.sync_middleware:
            await super().handle(scope, receive, send)
            return
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            await self._serve_watched(scope, body_file, receive, send)
        finally:
            body_file.close()

    async def _serve_watched(
        self, scope: dict[str, Any], body_file: IO[bytes], receive: Any, send: Any
    ) -> None:
        # As in Django's handler: a disconnect while the response is made cancels it.
        served = _Served(asyncio.get_running_loop())
        serving = asyncio.create_task(self._respond(scope, body_file, send, served))
        watching = asyncio.create_task(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait((watching, serving), return_when=asyncio.FIRST_COMPLETED)
        finally:
            # Also when the server cancels this request: neither task outlives it, and
            # request_finished is sent once its trip to the thread is over.
            try:
                await self._settle(watching, serving, served)
            finally:
                if not served.finished:
                    # A streaming response, or a trip that failed, was cancelled or still
                    # runs: this call queues behind the trip on the request's one thread.
                    await self._finish_on_thread(served)

    async def _settle(
        self, watching: asyncio.Task[Any], serving: asyncio.Task[Any], served: _Served
    ) -> None:
        for task in (watching, serving):  # the watcher first: it raises nothing unexpected
            if task.done():
                if not task.cancelled():
                    with contextlib.suppress(RequestAborted):
                        task.result()
                continue
            if task is serving:
                served.cancel()  # the turn on the request thread's loop, if it runs one
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _respond(
        self, scope: dict[str, Any], body_file: IO[bytes], send: Any, served: _Served
    ) -> HttpResponseBase:
        response: HttpResponseBase = await self._serve_on_thread(scope, body_file, served)
        with contextlib.suppress(asyncio.CancelledError):  # the client left while sending
            await self.send_response(response, send)
        return response

    def _serve(
        self, scope: dict[str, Any], body_file: IO[bytes], served: _Served
    ) -> HttpResponseBase:
        """The request's trip to its thread: started, the response, and a complete one closed."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        # Django's request is None exactly when it made the error response instead.
        if request is None:
            response = cast("HttpResponseBase", error_response)
        else:
            response = self._respond_here(request, served)
        response._handler_class = self.__class__  # type: ignore[attr-defined]
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size  # as Django's handler does
        served.response = response
        if not response.streaming:
            served.finished = True
            response.close()  # sends request_finished
        return response

    def _respond_here(self, request: Any, served: _Served) -> HttpResponseBase:
        """The view's response, with this thread's request loop for the turns it runs."""
        loop = getattr(self._threads, "loop", None)
        if loop is None:
            loop = self._threads.loop = RequestLoop(
                served.server_loop, default_executor=self._blocking_calls
            )
        else:
            loop.begin(served.server_loop)
        served.loop = loop
        if served.cancelled:  # the client left before the loop was known
            loop.cancel()
        token = enter_request(loop)
        try:
            return self.get_response(request)
        finally:
            leave_request(token)

    def _finish(self, served: _Served) -> None:
        """End a request its trip did not end: close its response, else send request_finished."""
        if served.finished:
            return
        served.finished = True
        if served.response is not None:
            served.response.close()
        else:
            signals.request_finished.send(sender=self.__class__)

    def close(self) -> None:
        """Stop the idle request threads (closing their connections) and the blocking pool.

        The blocking pool runs the request loops' `asyncio.to_thread` calls. For shutdown
        (and tests, whose database cannot be dropped while a thread holds a connection),
        with no request running; later requests start new threads.
        """
        while self._idle:
            executor = self._idle.pop()
            executor.submit(self._close_thread).result()
            executor.shutdown(wait=True)
        blocking, self._blocking_calls = self._blocking_calls, _blocking_pool()
        blocking.shutdown(wait=True)

    def _close_thread(self) -> None:
        """Close this request thread's database connections and request loop."""
        connections.close_all()
        loop = getattr(self._threads, "loop", None)
        if loop is not None:
            loop.close()
            del self._threads.loop

    def _take(self) -> ThreadPoolExecutor:
        try:
            return self._idle.pop()
        except IndexError:
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="django-request")

    def _give_back(self, executor: ThreadPoolExecutor) -> None:
        if len(self._idle) < self.max_idle_threads:
            self._idle.append(executor)
        else:
            executor.submit(self._close_thread)  # runs after any call still queued there
            executor.shutdown(wait=False)


def _blocking_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(thread_name_prefix="django-request-blocking")


@dataclass
class _Served:
    """A request's trip to its thread: what it did (read by `_finish`), and its turn's loop."""

    server_loop: asyncio.AbstractEventLoop
    response: HttpResponseBase | None = None
    finished: bool = False
    """The response was closed, or request_finished sent without one."""
    loop: RequestLoop | None = None
    """The request thread's loop, set on the thread once the view is about to run."""
    cancelled: bool = False

    def cancel(self) -> None:
        """Cancel the turn the view runs on the request loop (from the server's loop).

        Set before the thread reads it, or the loop set before this reads it: no
        cancellation is lost between the two threads.
        """
        self.cancelled = True
        if self.loop is not None:
            self.loop.cancel()


def hopping_middleware(paths: list[str]) -> list[str]:
    """The middleware of `paths` that Django's async chain runs with trips to a thread.

    That is a sync-only middleware, or a `MiddlewareMixin` with a synchronous hook
    (`process_request`, `process_response`, ...). An empty list when some middleware is
    async-only: a sync chain would need trips for it instead.
    """
    found = []
    for path in paths:
        middleware = import_string(path)
        if not getattr(middleware, "sync_capable", True):
            return []
        if not getattr(middleware, "async_capable", False) or (
            isinstance(middleware, type)
            and issubclass(middleware, MiddlewareMixin)
            and any(
                hasattr(middleware, hook) and not iscoroutinefunction(getattr(middleware, hook))
                for hook in _HOOKS
            )
        ):
            found.append(path)
    return found


def get_asgi_application(
    *, max_idle_threads: int = DEFAULT_IDLE_THREADS, middleware: MiddlewareMode = "auto"
) -> RequestThreadsHandler:
    """Set Django up and return the handler: `django.core.asgi.get_asgi_application`'s twin."""
    django.setup(set_prefix=False)
    return RequestThreadsHandler(max_idle_threads=max_idle_threads, middleware=middleware)
