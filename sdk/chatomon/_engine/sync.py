"""Running a coroutine to completion from synchronous code, with or without a running loop."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(make_coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make_coroutine()` returns and give back its result.

    In a plain script this is `asyncio.run`. Inside a running event loop (a Jupyter cell,
    an async framework calling sync code) the loop cannot be re-entered, so the coroutine
    runs on a private loop in a worker thread while this thread waits; no global patching
    of the running loop (nest_asyncio style) is involved. Context variables are copied in.
    """
    # Imported here so that `import chatomon` does not load asyncio and its executors.
    import asyncio  # noqa: PLC0415
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chatomon-sync") as pool:
        return pool.submit(context.run, lambda: asyncio.run(make_coroutine())).result()
