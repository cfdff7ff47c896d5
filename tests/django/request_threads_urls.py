"""Views that show which thread and which database connection served a request."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import markcoroutinefunction, sync_to_async
from django.db import connection
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.urls import path

_THREAD = threading.local()


def _where() -> dict[str, int | bool]:
    # Thread idents are reused once a thread ends: count the requests each thread served.
    _THREAD.served = getattr(_THREAD, "served", 0) + 1
    was_open = connection.connection is not None
    connection.ensure_connection()
    return {"thread": threading.get_ident(), "served": _THREAD.served, "was_open": was_open}


def _slowly() -> dict[str, int | bool]:
    time.sleep(0.2)  # long enough for a concurrent request to need a thread of its own
    return _where()


async def where(request: HttpRequest) -> JsonResponse:
    """The thread that ran this request's sync work, and its database connection."""
    return JsonResponse(await sync_to_async(_where)())


async def slow(request: HttpRequest) -> JsonResponse:
    """Like `where`, holding its thread for a while first."""
    return JsonResponse(await sync_to_async(_slowly)())


async def fail(request: HttpRequest) -> JsonResponse:
    """A view that raises once its sync work ran (Django answers 500)."""
    await sync_to_async(_where)()
    raise RuntimeError("this view fails")


STREAMED: list[str] = []
"""What `stream` did, in order (the test that reads it empties the list)."""


async def stream(request: HttpRequest) -> StreamingHttpResponse:
    """Two chunks from an async iterator, noting when the last one was made."""

    async def chunks() -> AsyncIterator[bytes]:
        yield b"one "
        yield b"two"
        STREAMED.append("streamed")

    return StreamingHttpResponse(chunks())


async def hang(request: HttpRequest) -> JsonResponse:
    """Run its sync work, then wait until cancelled (a client that goes away)."""
    await sync_to_async(_where)()
    await asyncio.sleep(30)
    return JsonResponse({})


LEFT_BEHIND: list[asyncio.Task[dict[str, int | bool]]] = []
"""Tasks `leave_task` left running (the test that reads them empties the list)."""


async def leave_task(request: HttpRequest) -> JsonResponse:
    """Answer at once, leaving a task that makes a thread-sensitive call afterwards."""

    async def later() -> dict[str, int | bool]:
        await asyncio.sleep(0.05)
        return await sync_to_async(_where)()

    LEFT_BEHIND.append(asyncio.create_task(later()))
    return JsonResponse({})


urlpatterns = [
    path("where/", where),
    path("slow/", slow),
    path("fail/", fail),
    path("leave-task/", leave_task),
    path("stream/", stream),
    path("hang/", hang),
]


class AsyncOnlyMiddleware:
    """A middleware that can only run async (Django would adapt it for a sync chain)."""

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> Any:
        return await self.get_response(request)
