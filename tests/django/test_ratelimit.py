"""Rate limits: sliding windows with exact retry times, atomic under concurrency, token budgets.

The Redis tests run where REDIS_URL is set (CI); with it unset they are skipped.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import uuid
from typing import Any

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

from chatomon import TokenUsage
from chatomon.chat.budget import TurnBudget
from chatomon.chat.service import ChatService
from chatomon.chat.store.memory import MemoryStore
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.django.settings import RateLimitSettings
from chatomon.django.transports.ratelimit import Admission, RateLimiter, scope_key
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call

REDIS_URL = os.environ.get("REDIS_URL")
needs_redis = pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is not set")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def local_cache() -> LocMemCache:
    return LocMemCache(f"ratelimit-{uuid.uuid4().hex}", {})


def redis_cache() -> RedisCache:
    return RedisCache(str(REDIS_URL), {})


def limiter(cache: Any, clock: Clock | None = None, **limits: Any) -> RateLimiter:
    settings = RateLimitSettings(**{"requests": None, "window_seconds": 60, **limits})
    return RateLimiter(
        settings, cache=cache, prefix=f"test:{uuid.uuid4().hex}", clock=clock or Clock()
    )


def test_scope_is_user_then_session_then_ip() -> None:
    user = SimpleActor(id=7, is_authenticated=True)
    anonymous = SimpleActor(id=None)
    assert scope_key(user, "s", "10.0.0.1") == "user:7"
    assert scope_key(anonymous, "s", "10.0.0.1") == "session:s"
    assert scope_key(anonymous, None, "10.0.0.1") == "ip:10.0.0.1"
    assert scope_key(None) == "anonymous"


async def test_requests_are_admitted_up_to_the_limit_then_refused_with_the_real_wait() -> None:
    clock = Clock()
    limits = limiter(local_cache(), clock, requests=3, window_seconds=60)
    first = clock.now
    assert await limits.hit("user:1") == Admission(allowed=True)
    clock.now = first + 10
    assert (await limits.hit("user:1")).allowed
    assert (await limits.hit("user:1")).allowed
    clock.now = first + 15
    assert await limits.hit("user:1") == Admission(allowed=False, retry_after_seconds=45)
    clock.now = first + 59.5
    assert await limits.hit("user:1") == Admission(allowed=False, retry_after_seconds=1)
    clock.now = first + 60.5  # the first request left the window
    assert (await limits.hit("user:1")).allowed
    assert not (await limits.hit("user:1")).allowed


def test_sync_admission_counts_against_the_same_budget() -> None:
    limits = limiter(local_cache(), requests=2, window_seconds=60)
    assert limits.admit("user:1").allowed
    assert asyncio.run(limits.hit("user:1")).allowed
    assert limits.admit("user:1") == Admission(allowed=False, retry_after_seconds=60)


async def test_a_clock_stepping_back_keeps_every_request_counted() -> None:
    clock = Clock()
    limits = limiter(local_cache(), clock, requests=2, window_seconds=60)
    start = clock.now
    assert (await limits.hit("user:1")).allowed
    clock.now = start - 30  # the system clock was set back
    assert (await limits.hit("user:1")).allowed
    clock.now = start + 59
    assert await limits.hit("user:1") == Admission(allowed=False, retry_after_seconds=1)
    clock.now = start + 60.5  # both were recorded at `start`: both have left the window
    assert (await limits.hit("user:1")).allowed


async def test_scopes_are_counted_apart() -> None:
    limits = limiter(local_cache(), requests=1)
    assert (await limits.hit("user:1")).allowed
    assert (await limits.hit("user:2")).allowed
    assert not (await limits.hit("user:1")).allowed


async def test_no_request_limit_admits_everything() -> None:
    limits = limiter(local_cache(), requests=None)
    assert all([(await limits.hit("ip:1")).allowed for _ in range(100)])


async def test_a_broken_cache_admits_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(LocMemCache):
        def get(self, *args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("cache down")

    limits = limiter(Broken("broken", {}), requests=1)
    assert (await limits.hit("user:1")).allowed
    assert "ConnectionError" in caplog.text


def admitted_by_threads(limits: RateLimiter, requests: int) -> int:
    barrier = threading.Barrier(requests)
    results: list[bool] = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait()
        admission = asyncio.run(limits.hit("user:42"))
        with lock:
            results.append(admission.allowed)

    threads = [threading.Thread(target=one) for _ in range(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == requests
    return sum(results)


def test_concurrent_requests_on_local_memory_admit_exactly_the_budget() -> None:
    assert admitted_by_threads(limiter(local_cache(), requests=7), 40) == 7


async def test_token_budgets_refuse_once_reached_and_free_as_usage_ages() -> None:
    clock = Clock()
    limits = limiter(local_cache(), clock, tokens=100, output_tokens=30, window_seconds=60)
    budget = limits.budget("user:1")
    assert isinstance(budget, TurnBudget)
    start = clock.now
    assert await budget.check() is None
    await budget.record(TokenUsage(input_tokens=50, output_tokens=10))
    clock.now = start + 20
    await budget.record(TokenUsage(input_tokens=30, output_tokens=5))
    assert await budget.check() is None  # 95 tokens, 15 output
    clock.now = start + 30
    await budget.record(TokenUsage(input_tokens=0, output_tokens=20))
    # 115 tokens: frees when the first round (60) leaves at start + 60; 35 output: same.
    assert await budget.check() == pytest.approx(30)
    clock.now = start + 61
    assert await budget.check() is None
    assert await limits.budget("user:2").check() is None, "another scope has its own budget"


async def test_an_exhausted_budget_ends_the_turn_with_rate_limited() -> None:
    limits = limiter(local_cache(), tokens=5)
    provider = ScriptedProvider(
        [
            [
                tool_call("search_managers", {"query": "x"}),
                TokenUsage(input_tokens=8, output_tokens=2),
            ],
            ["never sent"],
        ]
    )
    service = ChatService(store=MemoryStore(), provider=provider, toolset=Toolset(toy_registry()))
    user = SimpleActor(id=1, is_authenticated=True)
    events = [e async for e in service.run_turn(user, "Hi", budget=limits.budget("user:1"))]
    assert events[-1]["type"] == "error"
    assert events[-1]["code"] == "rate_limited"
    assert 59 <= events[-1]["retry_after_seconds"] <= 60


@needs_redis
def test_concurrent_requests_on_redis_from_threads_admit_exactly_the_budget() -> None:
    assert admitted_by_threads(limiter(redis_cache(), requests=9), 40) == 9


def _hit_in_process(prefix: str, requests: int, start: Any, results: Any) -> None:
    limits = RateLimiter(
        RateLimitSettings(requests=13, window_seconds=30), cache=redis_cache(), prefix=prefix
    )
    start.wait()
    admitted = sum(asyncio.run(limits.hit("user:9")).allowed for _ in range(requests))
    results.put(admitted)


@needs_redis
def test_concurrent_requests_on_redis_from_processes_admit_exactly_the_budget() -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    prefix = f"test:{uuid.uuid4().hex}"
    workers = [
        context.Process(target=_hit_in_process, args=(prefix, 10, start, results)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    start.set()
    totals = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    assert sum(totals) == 13


@needs_redis
async def test_redis_retry_after_is_the_real_wait() -> None:
    limits = limiter(redis_cache(), requests=1, window_seconds=5)
    assert (await limits.hit("user:1")).allowed
    refused = await limits.hit("user:1")
    assert not refused.allowed
    assert 4 <= refused.retry_after_seconds <= 5


@needs_redis
async def test_redis_token_budgets() -> None:
    limits = limiter(redis_cache(), tokens=100, window_seconds=20)
    budget = limits.budget("user:1")
    await budget.record(TokenUsage(input_tokens=60, output_tokens=10))
    assert await budget.check() is None
    await budget.record(TokenUsage(input_tokens=30, output_tokens=0))
    wait = await budget.check()
    assert wait is not None
    assert 19 <= wait <= 20


@needs_redis
async def test_redis_requests_leaving_the_window_free_the_budget() -> None:
    limits = limiter(redis_cache(), requests=2, window_seconds=1)
    assert [(await limits.hit("user:1")).allowed for _ in range(3)] == [True, True, False]
    await asyncio.sleep(1.1)  # both left the window
    assert [(await limits.hit("user:1")).allowed for _ in range(3)] == [True, True, False]


@needs_redis
async def test_redis_budget_holds_when_its_running_total_is_lost() -> None:
    # The log keeps a running total beside it; one evicted alone is summed again.
    cache = redis_cache()
    limits = limiter(cache, requests=3, window_seconds=60)
    assert (await limits.hit("user:1")).allowed
    assert (await limits.hit("user:1")).allowed
    key = cache.make_key(f"{limits.prefix}:requests:user:1")
    client = cache._cache.get_client(key, write=True)
    assert client.delete(f"{key}:total") == 1
    assert [(await limits.hit("user:1")).allowed for _ in range(2)] == [True, False]


@needs_redis
async def test_redis_admission_reads_only_what_left_the_window() -> None:
    # Thousands admitted in the window: a step reads the running total and the expired
    # entries, never the whole log (which summing took milliseconds per request).
    cache = redis_cache()
    limits = limiter(cache, requests=5000, window_seconds=60)
    for _ in range(3000):
        limits.admit("user:1")
    key = cache.make_key(f"{limits.prefix}:requests:user:1")
    client = cache._cache.get_client(key, write=True)
    assert int(client.get(f"{key}:total")) == client.zcard(key) == 3000

    def whole_log_reads() -> int:
        return int(client.info("commandstats").get("cmdstat_zrange", {}).get("calls", 0))

    before = whole_log_reads()
    assert all(limits.admit("user:1").allowed for _ in range(50))
    assert whole_log_reads() == before
    client.delete(key, f"{key}:total")


@needs_redis
def test_redis_admissions_keep_one_connection_across_cache_objects() -> None:
    # Under ASGI Django makes its cache objects anew in each request: the limiter does not
    # connect to Redis again for each of them.
    probe = redis_cache()._cache.get_client(write=True)

    def connections_made() -> int:
        return int(probe.info("stats")["total_connections_received"])

    settings = RateLimitSettings(requests=100, window_seconds=60)
    prefix = f"test:{uuid.uuid4().hex}"
    RateLimiter(settings, cache=redis_cache(), prefix=prefix).admit("user:1")
    before = connections_made()
    for _ in range(20):
        assert RateLimiter(settings, cache=redis_cache(), prefix=prefix).admit("user:1").allowed
    assert connections_made() - before <= 1  # the probe's own info call may reconnect
