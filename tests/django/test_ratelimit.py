"""Rate limits: sliding windows with exact retry times, atomic under concurrency, token budgets.

On the local-memory cache (a clock of the test's own), and on Redis through the limiter's own
client for a RedisCache alias: those tests run where REDIS_URL is set (CI, `make test`), and
are skipped without it; a Redis that does not answer is tested everywhere.
"""

from __future__ import annotations

import asyncio
import json
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
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator
from channels.testing.websocket import WebsocketCommunicator
from django.conf import settings as django_settings
from django.core.asgi import get_asgi_application
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.test import AsyncClient

from chatomon import TokenUsage
from chatomon.chat.budget import TurnBudget
from chatomon.chat.pipeline import ChatService
from chatomon.chat.store.memory import MemoryStore
from chatomon.chat.tools.toolset import Toolset
from chatomon.data.actor import SimpleActor
from chatomon.data.fixtures import toy_registry
from chatomon.django.settings import (
    DEFAULTS,
    RateLimitSettings,
    build_chat_settings,
    chat_settings,
)
from chatomon.django.transports.ratelimit import (
    REDIS_TIMEOUT_SECONDS,
    Admission,
    RateLimiter,
    console_scope,
    scope_key,
)
from chatomon.errors import ChatConfigurationError
from chatomon.providers import ScriptedProvider
from chatomon.providers.testing import tool_call
from tests.asgi_app import project
from tests.asgi_app.fixtures import chat_project, configure, sse_events

__all__ = ["chat_project"]  # the fixture the transport tests below build on

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


@pytest.fixture
def thread_trips(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The functions sent to a worker thread through `asyncio.to_thread` during the test."""
    trips: list[Any] = []
    real = asyncio.to_thread

    async def counted(function: Any, /, *args: Any, **kwargs: Any) -> Any:
        trips.append(function)
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    return trips


@needs_redis
async def test_redis_token_budgets_step_every_counter_in_one_trip(
    redis_alias: str, thread_trips: list[Any]
) -> None:
    # Checked before every provider round and recorded after it: each is one trip to a
    # worker thread whatever the number of counters (it was one per counter).
    limits = limiter(redis_alias, tokens=1000, input_tokens=50, output_tokens=30, window_seconds=20)
    budget = limits.budget("user:1")
    await budget.record(TokenUsage(input_tokens=60, output_tokens=10))
    assert len(thread_trips) == 1
    wait = await budget.check()  # 60 input tokens of 50: that budget refuses
    assert len(thread_trips) == 2
    assert wait is not None and 19 <= wait <= 20
    await budget.record(TokenUsage(input_tokens=0, output_tokens=0))  # nothing to count
    assert len(thread_trips) == 2
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


# Issue 19, item 9: an anonymous client that drops its session cookie gets a fresh session
# budget, never a fresh address budget; the staff console's chat counts in a budget of its
# own. Each on local memory and on Redis.


@pytest.fixture(params=["local", "redis"])
def any_cache(request: pytest.FixtureRequest) -> Any:
    """A limiter's cache: a local-memory one of the test's own, or the Redis alias."""
    if request.param == "local":
        return local_cache()
    return request.getfixturevalue("redis_alias")


def anonymous(session: str, ip: str = "10.0.0.1") -> str:
    """The scope of an anonymous asker, as `identify` makes it."""
    return scope_key(SimpleActor(id=None), session, ip)


async def allowed(limits: RateLimiter, scopes: list[str]) -> list[bool]:
    return [(await limits.hit(scope)).allowed for scope in scopes]


async def test_anonymous_requests_count_per_address_whatever_the_session(any_cache: Any) -> None:
    limits = limiter(any_cache, requests=5, anonymous_requests_per_ip=3, window_seconds=60)
    # Four askers from one address, each with a fresh session (a dropped cookie).
    fresh = [anonymous(f"s{n}") for n in range(4)]
    assert await allowed(limits, fresh) == [True, True, True, False]
    refused = await limits.hit(anonymous("s9"))
    assert not refused.allowed and 59 <= refused.retry_after_seconds <= 60
    assert (await limits.hit(anonymous("s9", ip="10.0.0.2"))).allowed, "another address"
    # Without a session the address is the scope, and still its address budget counts.
    assert not (await limits.hit(anonymous("", ip="10.0.0.1"))).allowed
    user = scope_key(SimpleActor(id=3, is_authenticated=True), None, "10.0.0.1")
    assert (await limits.hit(user)).allowed, "a signed-in user is counted as the user"


async def test_a_request_either_budget_refuses_is_counted_by_neither(any_cache: Any) -> None:
    limits = limiter(any_cache, requests=1, anonymous_requests_per_ip=2, window_seconds=60)
    assert (await limits.hit(anonymous("a"))).allowed
    for _ in range(3):  # refused by the session's budget: the address' is not spent
        assert not (await limits.hit(anonymous("a"))).allowed
    assert (await limits.hit(anonymous("b"))).allowed
    assert not (await limits.hit(anonymous("c"))).allowed  # the address' budget is spent
    assert (await limits.hit(anonymous("c", ip="10.0.0.2"))).allowed, "c's own budget was not"


@pytest.mark.parametrize("off", [None, 0])
async def test_no_address_budget_counts_sessions_alone(any_cache: Any, off: int | None) -> None:
    limits = limiter(any_cache, requests=1, anonymous_requests_per_ip=off)
    assert await allowed(limits, [anonymous(f"s{n}") for n in range(20)]) == [True] * 20


async def test_console_chat_counts_in_its_own_budget(any_cache: Any) -> None:
    limits = limiter(any_cache, requests=1, console_requests=2, window_seconds=60)
    staff = SimpleActor(id=5, is_authenticated=True, is_staff=True)
    console = console_scope(staff)
    assert console == "user:5", "its token budgets are the user's own"
    assert await allowed(limits, [console] * 3) == [True, True, False]
    assert (await limits.hit(scope_key(staff))).allowed, "the user's chat budget is apart"
    refused = await limits.hit(console)
    assert 59 <= refused.retry_after_seconds <= 60
    assert not limits.admit(console).allowed


def test_the_new_budgets_are_validated_with_their_defaults() -> None:
    defaults = build_chat_settings(get_chat_settings_with({})).rate_limit
    assert (defaults.console_requests, defaults.anonymous_requests_per_ip) == (600, None)
    turned = build_chat_settings(
        get_chat_settings_with({"console_requests": 0, "anonymous_requests_per_ip": 30})
    ).rate_limit
    assert (turned.console_requests, turned.anonymous_requests_per_ip) == (None, 30)
    for key in ("console_requests", "anonymous_requests_per_ip"):
        with pytest.raises(ChatConfigurationError) as raised:
            build_chat_settings(get_chat_settings_with({key: "30"}))
        assert raised.value.key == f"rate_limit.{key}"
        assert "a whole number, or None" in str(raised.value)


def get_chat_settings_with(rate_limit: dict[str, Any]) -> dict[str, Any]:
    return {**DEFAULTS, "rate_limit": {**DEFAULTS["rate_limit"], **rate_limit}}


@pytest.fixture(params=["local", "redis"])
def counters(request: pytest.FixtureRequest, settings: Any) -> Iterator[str]:
    """The chat's rate-limit counters in a local-memory cache of their own, or in Redis.

    Asked for after `chat_project` (which gives each test a local-memory cache).
    """
    prefix = f"test-{uuid.uuid4().hex}"
    if request.param == "local":
        settings.CACHES = {"default": {"BACKEND": LOCAL_MEMORY_BACKEND, "LOCATION": prefix}}
        yield "local"
        return
    probe = request.getfixturevalue("redis_probe")
    settings.CACHES = {"default": redis_alias_settings(REDIS_URL, KEY_PREFIX=prefix)}
    yield "redis"
    stale = list(probe.scan_iter(f"{prefix}:*"))
    assert stale, "the counters were kept in Redis"
    probe.delete(*stale)


CLIENT = ("10.20.30.40", 50000)


@pytest.fixture
def address_budget(chat_project: Any, counters: str, settings: Any) -> str:
    """The test project's chat: 10 requests per session, 2 per anonymous client address."""
    configure(
        settings,
        rate_limit={"requests": 10, "anonymous_requests_per_ip": 2, "window_seconds": 60},
    )
    return counters


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections", "address_budget")
async def test_http_clients_dropping_their_cookie_share_the_address_budget() -> None:

    async def fresh_client(path: str, client: tuple[str, int] = CLIENT) -> dict[str, Any]:
        # Straight to the ASGI application, as a server passes a request: the peer's
        # address in the scope, no session cookie (a new session every time).
        token = "t" * 32  # Django's CSRF check: the cookie and the header agree
        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "query_string": b"",
            "client": client,
            "headers": [
                (b"host", b"testserver"),
                (b"content-type", b"application/json"),
                (b"cookie", f"csrftoken={token}".encode()),
                (b"x-csrftoken", token.encode()),
            ],
        }
        request = ApplicationCommunicator(get_asgi_application(), scope)  # type: ignore[no-untyped-call]
        body = json.dumps({"text": "hi"}).encode()
        await request.send_input({"type": "http.request", "body": body})
        start = await request.receive_output(10)
        response = {"status": start["status"], "body": b""}
        response["header"] = {k.decode().lower(): v.decode() for k, v in start["headers"]}
        while True:
            chunk = await request.receive_output(10)
            response["body"] += chunk.get("body", b"")
            if not chunk.get("more_body"):
                return response

    assert (await fresh_client("/chat/"))["status"] == 200
    assert (await fresh_client("/chat/stream/"))["status"] == 200
    refused = await fresh_client("/chat/")
    assert refused["status"] == 429
    event = json.loads(refused["body"])["events"][0]
    assert event["code"] == "rate_limited" and 0 < event["retry_after_seconds"] <= 60
    assert refused["header"]["retry-after"] == str(event["retry_after_seconds"])
    streamed = await fresh_client("/chat/stream/")
    assert streamed["status"] == 429
    assert sse_events(streamed["body"])[0]["code"] == "rate_limited"
    assert (await fresh_client("/chat/", ("10.20.30.41", 1)))["status"] == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections", "address_budget")
async def test_a_chat_request_is_counted_in_the_trip_of_its_checks(
    thread_trips: list[Any],
) -> None:
    # Permission, body, identity and the rate limit take one trip to the request's
    # thread: on Redis the limiter's round trip is made there, not in a trip of its own.
    client = AsyncClient(enforce_csrf_checks=False)
    answers = [
        await client.post("/chat/", {"text": "hi"}, content_type="application/json")
        for _ in range(3)
    ]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[-1].json()["events"][0]["code"] == "rate_limited"
    assert answers[-1]["Retry-After"] == str(answers[-1].json()["events"][0]["retry_after_seconds"])
    assert thread_trips == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections", "address_budget")
async def test_sockets_with_fresh_sessions_share_the_address_budget() -> None:
    from chatomon.django.routing import chat_websocket_application  # noqa: PLC0415

    async def first_answer(client: tuple[str, int]) -> dict[str, Any]:
        # No cookie: the socket's session is new, as a client that dropped its cookie.
        socket = WebsocketCommunicator(
            chat_websocket_application(), "/chat/", headers=[(b"origin", b"http://testserver")]
        )
        socket.scope["client"] = client  # the server's view of the peer, as uvicorn's
        assert (await socket.connect())[0]
        await socket.send_to(text_data=json.dumps({"type": "message", "text": "hi"}))
        event: dict[str, Any] = json.loads(await socket.receive_from(5))
        while event["type"] not in ("done", "error"):
            event = json.loads(await socket.receive_from(5))
        await socket.disconnect()
        return event

    assert [(await first_answer(CLIENT))["type"] for _ in range(2)] == ["done", "done"]
    refused = await first_answer(CLIENT)
    assert refused["code"] == "rate_limited" and 0 < refused["retry_after_seconds"] <= 60
    assert (await first_answer(("10.20.30.41", 1)))["type"] == "done"


def console_staff() -> Any:
    from tests.console.conftest import make_user  # noqa: PLC0415 - the console's own users

    return make_user("ops")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_worker_connections")
async def test_console_chat_is_refused_past_its_own_budget(counters: str, settings: Any) -> None:
    # The console's URLs (the tests' default), the test project's chat and provider.
    settings.CHATOMON = project.chatomon(
        rate_limit={"requests": 1, "console_requests": 2, "window_seconds": 60}
    )
    staff = await sync_to_async(console_staff)()
    client = AsyncClient()
    await client.aforce_login(staff)
    stream = {"Accept": "text/event-stream"}

    async def send(**headers: str) -> Any:
        return await client.post("/console/chat/send/", {"text": "hi"}, headers=headers)

    for _ in range(2):  # past `requests` (1): the console has a budget of its own
        answered = await send(**stream)
        events = sse_events(b"".join([chunk async for chunk in answered.streaming_content]))
        assert events[-1]["type"] == "done"
    refused = await send(**stream)
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("text/event-stream")
    [event] = sse_events(refused.content)
    assert event["code"] == "rate_limited" and 0 < event["retry_after_seconds"] <= 60
    assert refused["Retry-After"] == str(event["retry_after_seconds"])
    page = await send()  # a plain form post: the page with the notice
    assert page.status_code == 429 and page["Retry-After"]
    assert "Too many messages right now: try again in" in page.content.decode()
    fragment = await send(**{"HX-Request": "true"})
    assert fragment.status_code == 429 and "<html" not in fragment.content.decode()
    decided = await client.post(
        f"/console/chat/confirm/{uuid.uuid4()}/", {"decision": "approve"}, headers=stream
    )
    assert decided.status_code == 429, "a confirmation counts too"
    from chatomon.django.models import Turn  # noqa: PLC0415 - the module loads without apps

    assert await Turn.objects.acount() == 2
    limits = RateLimiter(chat_settings())
    assert (await limits.hit(scope_key(staff))).allowed, "their chat budget was not spent"
