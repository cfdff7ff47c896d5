"""An event loop of the request thread's own, so that a sync view runs a turn where it is.

A sync view that needs an async turn (`POST chat/`, `POST chat/confirm/`) would call it
through asgiref's `async_to_sync`: the turn then runs on the server's event loop while the
request thread waits, and each ORM call of the turn (a tool's query, a store write) goes
back to the request thread through `sync_to_async` and returns to the loop. Every such
trip wakes another thread. Under `chatomon.django.asgi.RequestThreadsHandler` the turn
runs on a `RequestLoop` instead: an event loop kept by the request thread, on which the
turn's thread-sensitive sync calls run right there, between two steps of the loop (when
no loop is running, so Django's async-safety check holds), on the request's thread and
database connection. A request then makes one trip to its thread and back, whatever its
turn does.

What belongs to the server's loop stays there: `on_server_loop(awaitable)` awaits a
coroutine there (the channel layer's `group_send`, whose in-memory layer is not
thread-safe; `chatomon.django.service` routes the activity listeners and the event
publisher through it). A sync call of the turn that itself calls `async_to_sync` reaches
the server's loop, as it would from the request thread. A request cancelled by the
handler (its client left) cancels the turn running here, which ends it as aborted.

Elsewhere (Django's own ASGI handler, a WSGI server, a test client), and for a sync call
of the turn that runs async code in turn, `run_async` is asgiref's `async_to_sync`, as
before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import AsyncToSync, SyncToAsync, async_to_sync

__all__ = [
    "RequestLoop",
    "current_request_loop",
    "enter_request",
    "leave_request",
    "on_server_loop",
    "run_async",
]

T = TypeVar("T")

_CURRENT: contextvars.ContextVar[RequestLoop | None] = contextvars.ContextVar(
    "chatomon_request_loop", default=None
)
_SERVER_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "chatomon_server_loop", default=None
)


class RequestLoop:
    """One request thread's event loop (see the module docstring).

    Made, used and closed on that thread; only `cancel` may be called from another.

    Args:
        server_loop: The server's event loop, where `on_server_loop` sends awaitables and
            where a nested `async_to_sync` of a sync call runs.
        default_executor: Where the loop's `run_in_executor(None, ...)` and
            `asyncio.to_thread` calls run (a sync orbital, say), shared by the request
            loops of a handler and owned by the caller; None: a pool of this loop's own.
    """

    def __init__(
        self, server_loop: asyncio.AbstractEventLoop, *, default_executor: Executor | None = None
    ) -> None:
        self.server_loop = server_loop
        self._loop = asyncio.new_event_loop()
        if default_executor is not None:
            self._loop.set_default_executor(_Borrowed(default_executor))
        self._spawned: list[asyncio.Task[Any]] = []
        self._loop.set_task_factory(self._spawn)
        self._thread = threading.get_ident()
        self._work = _PausingExecutor(self._loop)
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

    def begin(self, server_loop: asyncio.AbstractEventLoop) -> None:
        """A new request starts on this thread: forget the last one's cancellation."""
        self.server_loop = server_loop
        self._cancelled = False

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` to its end on this thread and return its result.

        Raises:
            RuntimeError: Called from another thread than the loop's, or from inside it.
            asyncio.CancelledError: The request was cancelled (`cancel`).
        """
        if threading.get_ident() != self._thread or self.busy:
            coroutine.close()
            raise RuntimeError("a request loop runs on its own thread, one coroutine at a time")
        context = contextvars.copy_context()
        context.run(self._enter)
        task: asyncio.Task[T] = self._loop.create_task(coroutine, context=context)
        self._task = task
        if self._cancelled:
            task.cancel()
        try:
            self._run_until(task)
        finally:
            self._cancel_leftovers()
            self._task = None
        return task.result()

    @property
    def busy(self) -> bool:
        """Whether a coroutine runs here now (also while one of its sync calls runs)."""
        return self._task is not None

    def cancel(self) -> None:
        """Cancel the running turn (any thread); until `begin`, a later `run` too."""
        self._cancelled = True
        with contextlib.suppress(RuntimeError):  # closed meanwhile: nothing runs to cancel
            self._loop.call_soon_threadsafe(self._cancel_task)

    def close(self) -> None:
        """Close the loop and its default executor, not a pool given (on the loop's thread)."""
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    def _enter(self) -> None:
        # Inside the turn's context: thread-sensitive sync calls come to this thread.
        AsyncToSync.executors.current = self._work
        _SERVER_LOOP.set(self.server_loop)

    def _cancel_task(self) -> None:
        if self._cancelled and self._task is not None:
            self._task.cancel()

    def _run_until(self, future: asyncio.Future[Any]) -> None:
        """Run the loop until `future` is done, and the sync calls it makes meanwhile."""
        future.add_done_callback(lambda _: self._loop.stop())
        while not future.done() or self._work.pending:
            self._loop.run_forever()
            self._work.run_pending()

    def _spawn(
        self,
        loop: asyncio.AbstractEventLoop,
        coroutine: Generator[Any, None, T] | Coroutine[Any, Any, T],
        /,
        **options: Any,
    ) -> asyncio.Task[T]:
        # The loop's task factory: remembers the tasks of this run, which
        # _cancel_leftovers reads instead of asyncio.all_tasks, a walk over every task of
        # the process (the server loop's sockets and streams included) on every request.
        task: asyncio.Task[T] = asyncio.Task(coroutine, loop=loop, **options)
        self._spawned.append(task)
        return task

    def _cancel_leftovers(self) -> None:
        # Tasks the turn left behind would otherwise run during another request.
        leftovers = [task for task in self._spawned if not task.done()]
        self._spawned.clear()
        for task in leftovers:
            task.cancel()
        if leftovers:
            gathered = asyncio.gather(*leftovers, return_exceptions=True)
            self._run_until(gathered)


class _Borrowed(ThreadPoolExecutor):
    """A loop's default executor that runs its calls on a pool owned by someone else.

    asyncio takes only a ThreadPoolExecutor as a default executor, and shuts it down when
    the loop closes: this one hands every call to `pool`, starts no thread of its own, and
    leaves `pool` running when shut down.
    """

    def __init__(self, pool: Executor) -> None:
        super().__init__(max_workers=1)
        self._pool = pool

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """`fn(*args, **kwargs)` on the pool."""
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to stop: the pool's owner shuts it down."""


class _PausingExecutor(Executor):
    """The executor of thread-sensitive sync calls made on a request loop.

    `submit` queues the call and stops the loop; `RequestLoop.run` then runs the queue on
    the loop's thread, with no loop running, and starts the loop again.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._thread = threading.get_ident()
        self._queue: deque[tuple[Future[Any], Callable[[], Any]]] = deque()

    @property
    def pending(self) -> bool:
        """Whether calls wait to run."""
        return bool(self._queue)

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue `fn(*args, **kwargs)` to run on the loop's thread once the loop stops."""
        future: Future[T] = Future()
        self._queue.append((future, functools.partial(self._homed(fn), *args, **kwargs)))
        if threading.get_ident() == self._thread:
            self.loop.stop()  # the loop is running this very call: it stops after this step
        else:
            self.loop.call_soon_threadsafe(self.loop.stop)
        return future

    def run_pending(self) -> None:
        """Run the queued calls, in order, on this thread."""
        while self._queue:
            future, call = self._queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = call()
            except BaseException as error:  # noqa: BLE001 - handed to the awaiting coroutine
                future.set_exception(error)
            else:
                future.set_result(result)

    def _homed(self, fn: Callable[..., T]) -> Callable[..., T]:
        """`fn` with the server's loop as the thread's main loop while it runs.

        asgiref's `sync_to_async` runs its function through `thread_handler(loop, ...)`,
        which records `loop` as the thread's main loop: an `async_to_sync` inside would
        then wait for this (paused) loop forever. The server's loop is put in its place,
        and the thread's asgiref state is put back afterwards. (This reads asgiref's call
        as it is made: tests/django/test_request_loop.py pins the behaviour.)
        """
        server_loop = _SERVER_LOOP.get()  # submitted from the turn, whose context has it
        if isinstance(fn, functools.partial) and fn.args and fn.args[0] is self.loop:
            fn = functools.partial(fn.func, server_loop, *fn.args[1:], **fn.keywords)

        def homed(*args: Any, **kwargs: Any) -> T:
            local = SyncToAsync.threadlocal
            saved = {
                name: getattr(local, name, None)
                for name in ("main_event_loop", "main_event_loop_pid", "task_context")
            }
            try:
                return fn(*args, **kwargs)
            finally:
                for name, value in saved.items():
                    setattr(local, name, value)

        return homed


def current_request_loop() -> RequestLoop | None:
    """The request loop of the request being served here, if its handler made one."""
    return _CURRENT.get()


def enter_request(loop: RequestLoop) -> contextvars.Token[RequestLoop | None]:
    """Make `loop` the current request's (the handler does, on the request thread)."""
    return _CURRENT.set(loop)


def leave_request(token: contextvars.Token[RequestLoop | None]) -> None:
    """Undo `enter_request`."""
    _CURRENT.reset(token)


def run_async(function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """`function(*args)` run to its end from sync code.

    On the current request loop when there is one, else through asgiref's `async_to_sync`.
    """
    loop = current_request_loop()
    if loop is None or loop.busy:  # busy: called from a sync call of the turn running there
        return async_to_sync(function)(*args)
    return loop.run(function(*args))


def on_server_loop(awaitable: Awaitable[T]) -> Awaitable[T]:
    """`awaitable`, awaited on the server's loop when awaited on a request loop.

    Elsewhere (already on the server's loop) it is returned as it is.
    """
    server_loop = _SERVER_LOOP.get()
    if server_loop is None or not asyncio.iscoroutine(awaitable):
        return awaitable
    try:
        if asyncio.get_running_loop() is server_loop:
            return awaitable
    except RuntimeError:
        pass
    return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(awaitable, server_loop))
