"""Where the server time of the transport benchmark's requests goes: cProfile, every thread.

Run: `python tests/benchmarks/transports.py --profile [floor|plain|read ...]` (default:
plain and read). Each series of the benchmark's single client runs in process, on SQLite
in a temporary file, or on a fresh PostgreSQL database when DATABASE_URL is set, with the
benchmark's settings (`tests/benchmarks/transports_settings.py`).

Django's `ASGIHandler` runs a request's sync work (sync middleware methods, signals, ORM
calls) on a worker thread of the request's own, so one profile of the event loop's thread
would only show the loop waiting. Every thread started during the series gets a profile
of its own (`threading.setprofile`); printed are the event loop's thread, then all worker
threads merged, by own time and by cumulative time, and how many trips to a worker thread
(`SyncToAsync.__call__`) and back (`AsyncToSync.__call__`) a request took. Profiling slows
everything down several times: read the shares, not the milliseconds.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.benchmarks.transports import (
    SETTINGS,
    SINGLE_REQUESTS,
    WARMUP,
    SingleRequest,
    Stack,
    asgi_post,
    fresh_database,
    prepare_child,
    stacks,
)

PROFILED_REQUESTS = 200
TOP = 25


class ThreadProfiles:
    """A cProfile profile for each thread started while `recording`."""

    def __init__(self) -> None:
        self.workers: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _start_in_thread(self, *_: Any) -> None:
        # Called once, on the new thread's first profiling event: the thread's own
        # profile replaces this hook (cProfile profiles the thread that enables it).
        sys.setprofile(None)
        profile = cProfile.Profile()
        with self._lock:
            self.workers.append(profile)
        profile.enable()

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Profile every thread started inside the block."""
        threading.setprofile(self._start_in_thread)
        try:
            yield
        finally:
            threading.setprofile(None)

    def merged(self) -> pstats.Stats | None:
        """The worker threads' profiles as one, or None if no thread started."""
        if not self.workers:
            return None
        stats = pstats.Stats(self.workers[0])
        for profile in self.workers[1:]:
            stats.add(profile)
        return stats


async def profiled_series(application: Any, request: SingleRequest) -> None:
    """The warm-up, then PROFILED_REQUESTS requests under the profiles, printed."""
    import json  # noqa: PLC0415

    body = json.dumps({"text": request.text}).encode()
    cookie = b"csrftoken=benchmarkbenchmarkbenchmarkbench"
    for _ in range(WARMUP):
        await asgi_post(application, request.path, body, cookie)
    threads = ThreadProfiles()
    loop_profile = cProfile.Profile()
    with threads.recording():
        loop_profile.enable()
        for _ in range(PROFILED_REQUESTS):
            await asgi_post(application, request.path, body, cookie)
        loop_profile.disable()
    report(request, pstats.Stats(loop_profile), threads.merged())


def report(request: SingleRequest, loop: pstats.Stats, workers: pstats.Stats | None) -> None:
    """Print the trips between threads, then the top costs of the loop's thread and of the
    worker threads."""
    from asgiref.sync import AsyncToSync, SyncToAsync  # noqa: PLC0415

    # Counted before printing: printing strips the directories from the stats' keys.
    hops = _calls(loop, SyncToAsync.__call__) / PROFILED_REQUESTS
    back = (_calls(workers, AsyncToSync.__call__) if workers else 0) / PROFILED_REQUESTS
    print(f"\n=== {request.label}: {PROFILED_REQUESTS} requests under cProfile ===")
    print(f"per request: {hops:.1f} trips to a worker thread, {back:.1f} back to the loop")
    for title, stats in (("event loop thread", loop), ("worker threads, merged", workers)):
        if stats is None:
            continue
        for order in ("tottime", "cumulative"):
            print(f"\n--- {title}, by {order} ---")
            print(_top(stats, order))


def _calls(stats: pstats.Stats, function: Any) -> int:
    """How many times `function` (a Python function) was called."""
    code = function.__code__
    key = (code.co_filename, code.co_firstlineno, code.co_name)
    entry = stats.stats.get(key)
    return int(entry[1]) if entry else 0


def _top(stats: pstats.Stats, order: str) -> str:
    buffer = io.StringIO()
    stats.stream = buffer
    stats.strip_dirs().sort_stats(order).print_stats(TOP)
    lines = buffer.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[start:])


def run_profiles(stack: Stack, keys: list[str]) -> None:
    """Profile the requests named by `keys` on `stack`, in this process."""
    with tempfile.TemporaryDirectory() as folder, fresh_database(stack, folder, "profile") as url:
        os.environ.update(stack.environment(url))
        os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
        application = prepare_child()
        for request in SINGLE_REQUESTS:
            if request.key in keys:
                asyncio.run(profiled_series(application, request))
        from django.db import connections  # noqa: PLC0415

        connections.close_all()


def main() -> None:
    """Profile the requests named on the command line (default: plain and read)."""
    keys = sys.argv[2:] or ["plain", "read"]
    stack = stacks()[-1]  # PostgreSQL when DATABASE_URL is set, else SQLite
    print(f"profiling on {stack.label}")
    run_profiles(stack, keys)
