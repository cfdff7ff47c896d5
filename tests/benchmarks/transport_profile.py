"""Where the server time of the transport benchmark's requests goes: cProfile, every thread.

Run: `python tests/benchmarks/transports.py --profile [floor|plain|read|service-plain|
service-read ...]` (default: plain and read over HTTP; `service-` ones straight through
ChatService). Each series of the benchmark's single client runs in process, on SQLite
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
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.benchmarks.transports import (
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
SERVICE_PREFIX = "service-"
"""`service-plain`, `service-read`: the turn straight through ChatService, not over HTTP."""


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
        """The worker threads' profiles as one, or None if none recorded anything."""
        merged: pstats.Stats | None = None
        for profile in self.workers:
            try:
                stats = pstats.Stats(profile)
            except TypeError:  # pstats refuses a profile that recorded nothing
                continue
            if merged is None:
                merged = stats
            else:
                merged.add(stats)
        return merged

    def clear(self) -> None:
        """Forget what every thread's profile recorded so far (the warm-up)."""
        with self._lock:
            for profile in self.workers:
                profile.clear()


async def profiled_series(application: Any, request: SingleRequest, service: bool) -> None:
    """The warm-up, then PROFILED_REQUESTS requests (or turns straight through ChatService,
    when `service`) under the profiles, printed.

    Threads are profiled from the warm-up on and their profiles cleared after it: the one
    thread asgiref runs ChatService's sync work on starts with the first turn and stays.
    """
    # Each request a turn of a new conversation, as the figures before conversations
    # continued by default: a conversation's growing history is another measurement.
    body = json.dumps({"text": request.text, "new_conversation": True}).encode()
    cookie = b"csrftoken=benchmarkbenchmarkbenchmarkbench"
    threads = ThreadProfiles()
    loop_profile = cProfile.Profile()
    with threads.recording():
        for number in range(WARMUP + PROFILED_REQUESTS):
            if number == WARMUP:
                threads.clear()
                loop_profile.enable()
            if service:
                await one_turn(request.text)
            else:
                await asgi_post(application, request.path, body, cookie)
        loop_profile.disable()
    label = f"{request.label}, ChatService alone" if service else request.label
    report(label, pstats.Stats(loop_profile), threads.merged())


async def one_turn(text: str) -> None:
    """One turn straight through ChatService, as the benchmark's ChatService series runs it."""
    from chatomon.chat.store.records import Owner  # noqa: PLC0415
    from chatomon.django.service import chat_service  # noqa: PLC0415

    async for _ in chat_service().run_turn(
        None, text, owner=Owner.session("bench"), new_conversation=True
    ):
        pass


def report(label: str, loop: pstats.Stats, workers: pstats.Stats | None) -> None:
    """Print the trips between threads, then the top costs of the loop's thread and of the
    worker threads."""
    from asgiref.sync import AsyncToSync, SyncToAsync  # noqa: PLC0415

    # Counted before printing: printing strips the directories from the stats' keys.
    hops = _calls(loop, SyncToAsync.__call__) / PROFILED_REQUESTS
    back = (_calls(workers, AsyncToSync.__call__) if workers else 0) / PROFILED_REQUESTS
    print(f"\n=== {label}: {PROFILED_REQUESTS} requests under cProfile ===")
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


def run_profile(stack: Stack, key: str) -> None:
    """Profile the series `key` names on a fresh database of `stack`, in this process."""
    service = key.startswith(SERVICE_PREFIX)
    request = next(r for r in SINGLE_REQUESTS if r.key == key.removeprefix(SERVICE_PREFIX))
    with tempfile.TemporaryDirectory() as folder, fresh_database(stack, folder, "profile") as url:
        os.environ.update(stack.environment(url))
        application = prepare_child()
        asyncio.run(profiled_series(application, request, service))
        from django.db import connections  # noqa: PLC0415

        connections.close_all()


def main() -> None:
    """Profile the series named on the command line (default: plain and read), each in a
    process of its own (a thread that outlives a series would escape the next one's
    profiles)."""
    keys = sys.argv[2:] or ["plain", "read"]
    stack = stacks()[-1]  # PostgreSQL when DATABASE_URL is set, else SQLite
    if len(keys) == 1:
        print(f"profiling on {stack.label}", flush=True)
        run_profile(stack, keys[0])
        return
    for key in keys:
        subprocess.run([sys.executable, sys.argv[0], "--profile", key], check=True)
