"""Rate limits: sliding windows with exact retry times, atomic under concurrency, token budgets.

On the local-memory cache (a clock of the test's own), and on Redis through the limiter's own
client for a RedisCache alias: those tests run where REDIS_URL is set (CI, `make test`), and
are skipped without it; a Redis that does not answer is tested everywhere.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings as django_settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache

from chatomon import TokenUsage
from chatomon.chat.budget import TurnBudget
from chatomon.chat.pipeline import ChatService
from chatomon.chat.store.memory import MemoryStore
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.django.settings import RateLimitSettings
from chatomon.django.transports.ratelimit import (
    REDIS_TIMEOUT_SECONDS,
    Admission,
    RateLimiter,
    scope_key,
)
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


REDIS_BACKEND = "django.core.cache.backends.redis.RedisCache"
LOCAL_MEMORY_BACKEND = "django.core.cache.backends.locmem.LocMemCache"


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


async def exhausting_turn(limits: RateLimiter) -> list[dict[str, Any]]:
    """A turn whose one provider round spends 10 tokens and asks for a tool."""
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
    return [e async for e in service.run_turn(user, "Hi", budget=limits.budget("user:1"))]


async def test_an_exhausted_budget_ends_the_turn_with_rate_limited() -> None:
    """The reference: "Once a token budget is exhausted, GeneralManager records the completed
    provider usage and rejects the next tool, confirmation write, summary, or provider round.
    A rate_limited event includes retry_after_seconds."

    The round's 10 tokens are recorded past the limit of 5; the tool it asked for never runs.
    """
    limits = limiter(local_cache(), tokens=5)
    events = await exhausting_turn(limits)
    assert [e["type"] for e in events] == ["error"], "no tool_call, no tool_result"
    assert events[-1]["code"] == "rate_limited"
    assert 59 <= events[-1]["retry_after_seconds"] <= 60
    assert await limits.budget("user:1").check() is not None, "the usage was recorded"


def test_an_alias_of_another_backend_keeps_its_log_in_that_cache(settings: Any) -> None:
    settings.CACHES = {**settings.CACHES, "limits": {"BACKEND": LOCAL_MEMORY_BACKEND}}
    limits = limiter("limits", requests=2)
    assert limits.admit("user:1").allowed
    times, amounts = caches["limits"].get(f"{limits.prefix}:requests:user:1")
    assert len(times) == 1
    assert list(amounts) == [1]


def redis_alias_settings(location: Any, **extra: Any) -> dict[str, Any]:
    return {"BACKEND": REDIS_BACKEND, "LOCATION": location, **extra}


def test_a_redis_that_does_not_answer_admits_and_logs(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Port 1 refuses at once: the limiter's own client reports the failure like any cache.
    settings.CACHES = {**settings.CACHES, "limits": redis_alias_settings("redis://127.0.0.1:1/0")}
    limits = limiter("limits", requests=1)
    assert limits.admit("user:1").allowed
    assert asyncio.run(limits.hit("user:1")).allowed
    assert "ConnectionError" in caplog.text


def test_a_redis_that_never_answers_admits_within_the_timeout(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # It accepts the connection and then says nothing: the step gives up after
    # REDIS_TIMEOUT_SECONDS instead of holding a worker thread for ever.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        location = f"redis://127.0.0.1:{port}/0"
        settings.CACHES = {**settings.CACHES, "limits": redis_alias_settings(location)}
        limits = limiter("limits", requests=1)
        started = time.monotonic()
        assert limits.admit("user:1").allowed
        assert time.monotonic() - started < REDIS_TIMEOUT_SECONDS + 2
    assert "TimeoutError" in caplog.text


@pytest.fixture
def redis_probe() -> Iterator[redis.Redis]:
    """A client of the test's own, to look at what the limiter wrote."""
    if not REDIS_URL:
        pytest.skip("REDIS_URL is not set")
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def redis_alias(settings: Any, redis_probe: redis.Redis) -> Iterator[str]:
    """The alias "limits" of a RedisCache on REDIS_URL; its keys are deleted afterwards."""
    prefix = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **settings.CACHES,
        "limits": redis_alias_settings(REDIS_URL, KEY_PREFIX=prefix),
    }
    yield "limits"
    stale = list(redis_probe.scan_iter(f"{prefix}:*"))
    if stale:
        redis_probe.delete(*stale)


def stored_key(alias: str, limits: RateLimiter, scope: str) -> str:
    """The Redis key of a scope's request log: the cache's own key (KEY_PREFIX, VERSION)."""
    return caches[alias].make_key(f"{limits.prefix}:requests:{scope}")


@needs_redis
def test_a_redis_alias_keeps_the_log_in_redis_under_the_cache_keys(
    redis_alias: str, redis_probe: redis.Redis
) -> None:
    limits = limiter(redis_alias, requests=3)
    assert limits.admit("user:1").allowed
    assert limits.admit("user:1").allowed
    key = stored_key(redis_alias, limits, "user:1")
    assert key.startswith(django_settings.CACHES[redis_alias]["KEY_PREFIX"] + ":")
    assert redis_probe.zcard(key) == 2
    assert int(redis_probe.get(f"{key}:total") or 0) == 2


@needs_redis
def test_concurrent_requests_on_redis_from_threads_admit_exactly_the_budget(
    redis_alias: str,
) -> None:
    assert admitted_by_threads(limiter(redis_alias, requests=9), 40) == 9


def _hit_in_process(location: str, prefix: str, requests: int, start: Any, results: Any) -> None:
    # A process of its own, configured the way a project is: the alias in CACHES.
    django_settings.configure(CACHES={"default": redis_alias_settings(location)})
    limits = RateLimiter(RateLimitSettings(requests=13, window_seconds=30), prefix=prefix)
    start.wait()
    admitted = sum(asyncio.run(limits.hit("user:9")).allowed for _ in range(requests))
    results.put(admitted)


@needs_redis
def test_concurrent_requests_on_redis_from_processes_admit_exactly_the_budget(
    redis_probe: redis.Redis,
) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    prefix = f"test:{uuid.uuid4().hex}"
    workers = [
        context.Process(target=_hit_in_process, args=(REDIS_URL, prefix, 10, start, results))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    start.set()
    totals = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    assert sum(totals) == 13
    redis_probe.delete(*redis_probe.keys(f"*{prefix}*"))


@needs_redis
async def test_redis_retry_after_is_the_real_wait(redis_alias: str) -> None:
    limits = limiter(redis_alias, requests=1, window_seconds=5)
    assert (await limits.hit("user:1")).allowed
    refused = await limits.hit("user:1")
    assert not refused.allowed
    assert 4 <= refused.retry_after_seconds <= 5


@needs_redis
async def test_redis_token_budgets(redis_alias: str) -> None:
    limits = limiter(redis_alias, tokens=100, window_seconds=20)
    budget = limits.budget("user:1")
    await budget.record(TokenUsage(input_tokens=60, output_tokens=10))
    assert await budget.check() is None
    await budget.record(TokenUsage(input_tokens=30, output_tokens=0))
    wait = await budget.check()
    assert wait is not None
    assert 19 <= wait <= 20
    assert await limits.budget("user:2").check() is None, "another scope has its own budget"


@needs_redis
async def test_an_exhausted_redis_budget_rejects_the_next_tool(redis_alias: str) -> None:
    """The reference's exhausted token budget, kept in Redis: the completed usage is recorded
    and the next tool is rejected with rate_limited."""
    limits = limiter(redis_alias, tokens=5, window_seconds=20)
    events = await exhausting_turn(limits)
    assert [(e["type"], e["code"]) for e in events] == [("error", "rate_limited")]
    assert 19 <= events[-1]["retry_after_seconds"] <= 20
    wait = await limits.budget("user:1").check()
    assert wait is not None and 19 <= wait <= 20


@needs_redis
async def test_redis_requests_leaving_the_window_free_the_budget(redis_alias: str) -> None:
    limits = limiter(redis_alias, requests=2, window_seconds=1)
    assert [(await limits.hit("user:1")).allowed for _ in range(3)] == [True, True, False]
    await asyncio.sleep(1.1)  # both left the window
    assert [(await limits.hit("user:1")).allowed for _ in range(3)] == [True, True, False]


@needs_redis
async def test_redis_budget_holds_when_its_running_total_is_lost(
    redis_alias: str, redis_probe: redis.Redis
) -> None:
    # The log keeps a running total beside it; one evicted alone is summed again.
    limits = limiter(redis_alias, requests=3, window_seconds=60)
    assert (await limits.hit("user:1")).allowed
    assert (await limits.hit("user:1")).allowed
    key = stored_key(redis_alias, limits, "user:1")
    assert redis_probe.delete(f"{key}:total") == 1
    assert [(await limits.hit("user:1")).allowed for _ in range(2)] == [True, False]


@needs_redis
def test_redis_admission_reads_only_what_left_the_window(
    redis_alias: str, redis_probe: redis.Redis
) -> None:
    # Thousands admitted in the window: a step reads the running total and the expired
    # entries, never the whole log (which summing took milliseconds per request).
    limits = limiter(redis_alias, requests=5000, window_seconds=60)
    for _ in range(3000):
        limits.admit("user:1")
    key = stored_key(redis_alias, limits, "user:1")
    assert int(redis_probe.get(f"{key}:total") or 0) == redis_probe.zcard(key) == 3000

    def whole_log_reads() -> int:
        stats = redis_probe.info("commandstats")
        return int(stats.get("cmdstat_zrange", {}).get("calls", 0))

    before = whole_log_reads()
    assert all(limits.admit("user:1").allowed for _ in range(50))
    assert whole_log_reads() == before


def connections_made(probe: redis.Redis) -> int:
    return int(probe.info("stats")["total_connections_received"])


@needs_redis
def test_redis_keeps_one_connection_across_requests_threads_and_event_loops(
    redis_alias: str, redis_probe: redis.Redis
) -> None:
    # Under ASGI Django makes its cache objects anew in each request, and loops come and
    # go (asyncio.run, async_to_sync): the limiter connects to Redis once for all of them.
    rate = RateLimitSettings(requests=100, window_seconds=60)
    prefix = f"test:{uuid.uuid4().hex}"
    RateLimiter(rate, cache=redis_alias, prefix=prefix).admit("user:1")
    before = connections_made(redis_probe)
    admitted: list[bool] = []

    def one_request() -> None:
        # A thread of its own: Django's cache handler gives it cache objects of its own.
        limits = RateLimiter(rate, cache=redis_alias, prefix=prefix)
        admitted.append(limits.admit("user:1").allowed)
        admitted.append(asyncio.run(limits.hit("user:1")).allowed)  # a new event loop

    for _ in range(10):
        thread = threading.Thread(target=one_request)
        thread.start()
        thread.join()
    assert admitted == [True] * 20
    assert connections_made(redis_probe) - before <= 1  # the probe's own info call may reconnect
    limits = RateLimiter(rate, cache=redis_alias, prefix=prefix)
    assert redis_probe.zcard(stored_key(redis_alias, limits, "user:1")) == 21


@needs_redis
def test_redis_writes_to_the_first_server_with_the_cache_options(
    settings: Any, redis_probe: redis.Redis
) -> None:
    # Django's RedisCache writes to the first server of LOCATION and makes its pool with
    # OPTIONS (pool_class, the database...): the limiter's client follows the same config.
    url = urlsplit(str(REDIS_URL))
    database = int(url.path.strip("/") or 0)
    server = f"{url.scheme}://{url.netloc}"
    prefix = f"test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **settings.CACHES,
        "limits": redis_alias_settings(
            [server, "redis://127.0.0.1:1/0"],  # a replica that is down: never written to
            KEY_PREFIX=prefix,
            OPTIONS={"db": database, "pool_class": "redis.BlockingConnectionPool"},
        ),
    }
    limits = limiter("limits", requests=1)
    assert limits.admit("user:1").allowed
    assert limits.admit("user:1") == Admission(allowed=False, retry_after_seconds=60)
    key = stored_key("limits", limits, "user:1")
    assert redis_probe.zcard(key) == 1  # the probe's database is REDIS_URL's
    redis_probe.delete(key, f"{key}:total")
