"""`RequestLoop`: a turn run on the request thread's own loop, its sync calls right there."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from asgiref.sync import SyncToAsync, async_to_sync, sync_to_async
from django.db import connection

from chatomon.django.request_loop import (
    RequestLoop,
    current_request_loop,
    enter_request,
    leave_request,
    on_server_loop,
    run_async,
)

T = TypeVar("T")


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def on_a_request_thread(
    body: Callable[[RequestLoop], T], default_executor: Executor | None = None
) -> T:
    """`body(loop)` on a thread that asgiref started from this (the server's) loop, as a
    request thread is, with a RequestLoop made there (closed after)."""
    server_loop = asyncio.get_running_loop()

    def run() -> T:
        loop = RequestLoop(server_loop, default_executor=default_executor)
        try:
            return body(loop)
        finally:
            loop.close()

    return await sync_to_async(run, thread_sensitive=False)()


async def test_sync_calls_of_the_turn_run_on_the_request_thread_with_no_loop_running() -> None:
    def body(loop: RequestLoop) -> tuple[int, list[Any]]:
        async def turn() -> list[Any]:
            ran_on = await sync_to_async(lambda: (threading.get_ident(), running_loop()))()
            return [ran_on, threading.get_ident()]

        return threading.get_ident(), loop.run(turn())

    request_thread, ((sync_thread, loop_then), turn_thread) = await on_a_request_thread(body)
    assert sync_thread == turn_thread == request_thread != threading.get_ident()
    assert loop_then is None  # Django's async-safety check passes there


@pytest.mark.django_db(transaction=True)
async def test_the_orm_works_from_a_turn_on_the_request_loop() -> None:
    def body(loop: RequestLoop) -> int:
        async def turn() -> int:
            return await sync_to_async(lambda: connection.cursor().execute("SELECT 1") and 1)()

        try:
            return loop.run(turn())
        finally:
            connection.close()

    assert await on_a_request_thread(body) == 1


async def test_async_to_sync_inside_a_sync_call_reaches_the_servers_loop() -> None:
    server_loop = asyncio.get_running_loop()

    async def where() -> asyncio.AbstractEventLoop | None:
        return running_loop()

    def body(loop: RequestLoop) -> tuple[Any, Any]:
        async def turn() -> Any:
            return await sync_to_async(async_to_sync(where))()

        reached = loop.run(turn())
        # The thread's asgiref state is the server's again: a later async_to_sync works.
        return reached, async_to_sync(where)()

    assert await on_a_request_thread(body) == (server_loop, server_loop)


async def test_on_server_loop_awaits_there() -> None:
    server_loop = asyncio.get_running_loop()

    async def where() -> asyncio.AbstractEventLoop | None:
        return running_loop()

    def body(loop: RequestLoop) -> tuple[Any, Any]:
        async def turn() -> tuple[Any, Any]:
            return await on_server_loop(where()), running_loop()

        return loop.run(turn())

    reached, turn_loop = await on_a_request_thread(body)
    assert reached is server_loop and turn_loop is not server_loop
    # On the server's own loop, the awaitable is left as it is.
    coroutine = where()
    assert on_server_loop(coroutine) is coroutine
    assert await coroutine is server_loop


async def test_a_cancelled_request_cancels_its_turn() -> None:
    seen: list[str] = []

    def body(loop: RequestLoop) -> None:
        async def turn() -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        threading.Timer(0.05, loop.cancel).start()  # the server's loop, as a client leaves
        loop.run(turn())

    with pytest.raises(asyncio.CancelledError):
        await on_a_request_thread(body)
    assert seen == ["cancelled"]


async def test_a_cancellation_before_the_turn_starts_cancels_it_and_begin_forgets_it() -> None:
    server_loop = asyncio.get_running_loop()

    def body(loop: RequestLoop) -> str:
        async def turn() -> str:
            await asyncio.sleep(0)
            return "ran"

        loop.cancel()
        with pytest.raises(asyncio.CancelledError):
            loop.run(turn())
        loop.begin(server_loop)  # the thread's next request
        return loop.run(turn())

    assert await on_a_request_thread(body) == "ran"


async def test_tasks_a_turn_leaves_behind_are_cancelled_when_it_ends() -> None:
    def body(loop: RequestLoop) -> bool:
        left: list[asyncio.Task[None]] = []

        async def turn() -> None:
            left.append(asyncio.create_task(asyncio.sleep(30)))

        loop.run(turn())
        return left[0].cancelled()

    assert await on_a_request_thread(body) is True


async def test_a_failing_sync_call_raises_in_the_turn() -> None:
    def fail() -> None:
        raise LookupError("no such part")

    def body(loop: RequestLoop) -> str:
        async def turn() -> str:
            try:
                await sync_to_async(fail)()
            except LookupError as error:
                return str(error)
            return "no error"

        return loop.run(turn())

    assert await on_a_request_thread(body) == "no such part"


async def test_run_is_refused_on_another_thread() -> None:
    made: list[RequestLoop] = []
    await on_a_request_thread(made.append)

    async def turn() -> None:
        pass

    coroutine = turn()
    with pytest.raises(RuntimeError, match="runs on its own thread"):
        made[0].run(coroutine)


async def test_run_async_uses_the_current_request_loop_else_async_to_sync() -> None:
    server_loop = asyncio.get_running_loop()

    async def where() -> asyncio.AbstractEventLoop | None:
        return running_loop()

    def body(loop: RequestLoop) -> tuple[Any, Any, Any]:
        without = run_async(where)
        token = enter_request(loop)
        try:
            assert current_request_loop() is loop
            within = run_async(where)
        finally:
            leave_request(token)
        return without, within, SyncToAsync.threadlocal.main_event_loop

    without, within, main_loop = await on_a_request_thread(body)
    assert without is server_loop and main_loop is server_loop
    assert within is not None and within is not server_loop


async def test_a_left_behind_task_may_still_make_sync_calls_as_it_is_cancelled() -> None:
    def body(loop: RequestLoop) -> list[str]:
        seen: list[str] = []
        tasks: list[asyncio.Task[None]] = []

        async def left() -> None:
            try:
                await asyncio.sleep(30)
            finally:
                seen.append(await sync_to_async(lambda: "cleaned up")())

        async def turn() -> None:
            tasks.append(asyncio.create_task(left()))
            await asyncio.sleep(0)

        loop.run(turn())
        return seen

    assert await on_a_request_thread(body) == ["cleaned up"]


async def test_run_async_from_a_sync_call_of_the_turn_goes_to_the_servers_loop() -> None:
    server_loop = asyncio.get_running_loop()

    async def where() -> asyncio.AbstractEventLoop | None:
        return running_loop()

    def body(loop: RequestLoop) -> Any:
        async def turn() -> Any:
            return await sync_to_async(run_async)(where)  # the request loop is busy then

        token = enter_request(loop)
        try:
            return loop.run(turn())
        finally:
            leave_request(token)

    assert await on_a_request_thread(body) is server_loop


async def test_blocking_calls_run_on_the_default_executor_given_which_close_leaves_open() -> None:
    pool = ThreadPoolExecutor(thread_name_prefix="shared-blocking")

    def body(loop: RequestLoop) -> str:
        async def turn() -> str:
            return await asyncio.to_thread(lambda: threading.current_thread().name)

        return loop.run(turn())

    try:
        assert (await on_a_request_thread(body, pool)).startswith("shared-blocking")
        assert pool.submit(lambda: "still open").result() == "still open"  # after loop.close()
    finally:
        pool.shutdown()
