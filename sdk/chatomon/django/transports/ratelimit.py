"""Rate limits per scope: requests, and token budgets per turn, kept in a Django cache's store.

```python
limiter = RateLimiter(chat_settings())
admission = await limiter.hit(scope_key(user, session_key, client_ip))  # sync: limiter.admit
if not admission.allowed:
    ...  # error "rate_limited" with admission.retry_after_seconds
budget = limiter.budget(scope)          # a TurnBudget for ChatService.run_turn(budget=...)
```

Every counter is a sliding window log: the times (and token amounts) of the last
`window_seconds`. A request is admitted while fewer than `requests` were admitted in the
window; `retry_after_seconds` is the real time until the oldest of them leaves it. A token
budget is exhausted once the tokens recorded in the window reach the limit; it frees when
enough of them have left the window.

A request may count in two budgets (an anonymous asker's: its session's `requests` and
its client address' `anonymous_requests_per_ip`, see `RateScope`): both are stepped at
once, atomically, and it is admitted (and recorded in both) only when both have room. The
staff console's chat counts in `console_requests` (`console_scope`).

Where the counters live depends on the cache alias the limiter is given ("default" unless
told otherwise), read from `settings.CACHES`:

- Its BACKEND is `django.core.cache.backends.redis.RedisCache` (or a subclass): the limiter
  talks to Redis itself, through its own redis-py client for the first server of LOCATION
  (the one Django's RedisCache writes to), made with the alias' OPTIONS as that cache makes
  its pool (`pool_class`, `parser_class`, the rest passed to the pool; `serializer` does not
  apply: the log is the script's own). Keys are the cache's own (`make_key`: KEY_PREFIX,
  VERSION, KEY_FUNCTION). Each step is one Lua script on the Redis server (its clock, too),
  atomic across processes; it keeps a running total beside the log and so reads only the
  entries that left the window, however long the log.
- Any other backend, or a cache object given directly: the log is read and written with
  the cache's documented `get` and `set`, under a process-wide lock. That is exact within
  one process, which is what the local-memory cache serves anyway (the system checks warn
  about it with several workers).

Cache failures are logged and admit the request: a broken cache never stops chat.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import math
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis
from django.conf import settings as django_settings
from django.core.cache import BaseCache, caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.utils.module_loading import import_string
from redis.commands.core import Script

from chatomon.chat.store.records import Owner
from chatomon.data.actor import is_authenticated
from chatomon.django.settings import ChatSettings, RateLimitSettings
from chatomon.schemas import TokenUsage

__all__ = [
    "REDIS_TIMEOUT_SECONDS",
    "Admission",
    "RateLimiter",
    "RateScope",
    "TokenBudget",
    "console_scope",
    "scope_key",
]

logger = logging.getLogger(__name__)

# KEYS: the log and the running total of its amounts, for each counter in turn; ARGV: mode
# ("hit", "check", "add"), amount, member, window (ms), then each counter's limit. Returns
# {admitted (1/0/-1 for "add"), milliseconds until every refusing counter frees}. A "hit"
# records in every log or in none: one request refused by any counter is counted by none.
# A total is updated by what enters and leaves the window, so a step costs the entries
# that expired, not the whole log: a budget of thousands of requests an hour stays as
# cheap as one of ten. A log and its total are written and expire together; a total
# missing beside a log (one evicted) is summed again once.
_SCRIPT = """
local mode, amount, member = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local window = tonumber(ARGV[4])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function amount_of(entry) return tonumber(string.match(entry, ':(%d+)$')) end
local function pruned(key, total_key)
  local expired = redis.call('ZRANGEBYSCORE', key, '-inf', now - window)
  local total = tonumber(redis.call('GET', total_key))
  local changed = #expired > 0
  if changed then redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window) end
  if redis.call('EXISTS', key) == 0 then
    return 0, total ~= nil
  elseif total == nil then
    total = 0
    for _, entry in ipairs(redis.call('ZRANGE', key, 0, -1)) do total = total + amount_of(entry) end
    return total, true
  end
  for _, entry in ipairs(expired) do total = total - amount_of(entry) end
  return total, changed
end
local function wait_of(key, total, limit)
  local left, first = total, 0
  while true do
    local entries = redis.call('ZRANGE', key, first, first + 99, 'WITHSCORES')
    if #entries == 0 then return window end
    for i = 1, #entries, 2 do
      left = left - amount_of(entries[i])
      if left + amount <= limit then return tonumber(entries[i + 1]) + window - now end
    end
    first = first + 100
  end
end
local logs, admitted = {}, true
for i = 1, #KEYS / 2 do
  local total, changed = pruned(KEYS[2 * i - 1], KEYS[2 * i])
  local limit = tonumber(ARGV[4 + i])
  logs[i] = {KEYS[2 * i - 1], KEYS[2 * i], limit, total, changed}
  if total + amount > limit then admitted = false end
end
if mode == 'add' or (mode == 'hit' and admitted) then
  for _, log in ipairs(logs) do
    redis.call('ZADD', log[1], now, member .. ':' .. amount)
    redis.call('SET', log[2], log[4] + amount, 'PX', window)
    redis.call('PEXPIRE', log[1], window)
  end
  if mode == 'add' then return {-1, 0} end
  return {1, 0}
end
local wait = 0
for _, log in ipairs(logs) do
  if log[5] then
    local ttl = redis.call('PTTL', log[1])
    if log[4] > 0 and ttl > 0 then
      redis.call('SET', log[2], log[4], 'PX', ttl)
    else
      redis.call('DEL', log[2])
    end
  end
  if log[4] + amount > log[3] then wait = math.max(wait, wait_of(log[1], log[4], log[3])) end
end
if admitted then return {1, 0} end
return {0, wait}
"""


@dataclass(frozen=True)
class Admission:
    """Whether a request may run; if not, how long until it may (whole seconds, rounded up)."""

    allowed: bool
    retry_after_seconds: int = 0


class RateScope(str):
    """A rate-limit scope: its key ("user:7", "session:...", "ip:..."), and what `hit` counts.

    A str, so that it is the key wherever one is read (token budgets, `owner_budget`'s
    match, logs); a plain str scope counts the `requests` budget alone. Besides:

    - `client_ip`: the address of an anonymous asker, whose request also counts in the
      `anonymous_requests_per_ip` budget of that address;
    - `console`: a staff member's console chat, counted in `console_requests` instead
      of `requests`.

    Examples:
        >>> scope = RateScope("session:abc", client_ip="10.0.0.1")
        >>> scope == "session:abc", f"{scope}", scope.client_ip
        (True, 'session:abc', '10.0.0.1')
    """

    __slots__ = ("client_ip", "console")

    client_ip: str | None
    console: bool

    def __new__(cls, key: str, *, client_ip: str | None = None, console: bool = False) -> RateScope:
        """The scope `key`, counted per `client_ip` too (anonymous), or as the console's."""
        scope = super().__new__(cls, key)
        scope.client_ip = client_ip or None
        scope.console = console
        return scope


def scope_key(user: Any, session_key: str | None = None, client_ip: str | None = None) -> str:
    """The rate-limit scope: the user id, else the session key, else the client IP.

    An anonymous asker's scope carries the client IP (a `RateScope`), so that its requests
    count in the per-address budget too, whatever session they come with.
    """
    if is_authenticated(user) and getattr(user, "id", None) is not None:
        return RateScope(f"user:{user.id}")
    if session_key:
        return RateScope(f"session:{session_key}", client_ip=client_ip)
    if client_ip:
        return RateScope(f"ip:{client_ip}", client_ip=client_ip)
    return RateScope("anonymous")


def console_scope(user: Any) -> RateScope:
    """The scope of a staff user's console chat: their user scope, on `console_requests`.

    Its token budgets are the user's own (`budget(console_scope(user))` spends what the
    user's chat elsewhere spends).
    """
    return RateScope(f"user:{user.id}", console=True)


class _WindowLog(Protocol):
    """Where a limiter's counters live: one sliding window log per key."""

    # True when a step waits on the network (or a database): `hit` then runs it off the
    # event loop. False for the in-process caches, whose step takes microseconds.
    waits_on_io: bool

    def run(
        self, limits: Sequence[tuple[str, int]], window: float, mode: str, amount: int
    ) -> float | None:
        """Apply `mode` to the logs of `limits` (key, limit) at once; see `RateLimiter._apply`."""
        ...


class _RedisWindowLog:
    """The logs on a Redis server, stepped by the window script through the limiter's client.

    The client is redis-py's sync one, used from the calling thread (`admit`, or a worker
    thread for `hit`), never a `redis.asyncio` one: an asyncio client's connections belong
    to the event loop that opened them, and a process has loops that come and go (each
    `async_to_sync` call outside a loop, each `asyncio.run`), with no public hook to close a
    client when its loop closes. One thread-safe client per server serves every loop and
    thread of the process; the hop to a worker thread costs a few tens of microseconds
    against a network round trip.
    """

    waits_on_io = True

    def __init__(self, cache: BaseCache, server: str, options: Mapping[str, Any]) -> None:
        self.make_key = cache.make_key
        self.server = server
        self.options = options

    def run(
        self, limits: Sequence[tuple[str, int]], window: float, mode: str, amount: int
    ) -> float | None:
        """Apply `mode` to the logs of `limits` at once, in one script on the server."""
        keys = [self.make_key(key) for key, _ in limits]
        window_ms = max(1, round(window * 1000))
        member = uuid.uuid4().hex  # two steps in one millisecond are two entries
        admitted, wait_ms = _window_script(self.server, self.options)(
            keys=[part for key in keys for part in (key, f"{key}:total")],
            args=[mode, amount, member, window_ms, *(limit for _, limit in limits)],
        )
        return None if int(admitted) != 0 else max(int(wait_ms), 0) / 1000


_SCRIPTS: dict[str, Script] = {}
"""The window script of each Redis server (and client options), bound to a client of its own.

Under ASGI Django makes the cache objects anew in every request (its cache handler keeps
them per async context), each with a pool of its own, so that reaching Redis through them
would connect again on every request. The limiter's client per server keeps its pooled
connections, which are thread-safe and reopened after a fork, for the process.
"""


def _window_script(server: str, options: Mapping[str, Any]) -> Script:
    """The window script on `server`, through the process' client for it (see `_SCRIPTS`)."""
    name = f"{server} {sorted((option, repr(value)) for option, value in options.items())!r}"
    script = _SCRIPTS.get(name)
    if script is None:
        # Two threads meeting here build two clients; neither has connected yet, and
        # setdefault keeps one.
        script = _SCRIPTS.setdefault(name, _redis_client(server, options).register_script(_SCRIPT))
    return script


REDIS_TIMEOUT_SECONDS = 1.0
"""The rate limiter's Redis socket timeouts, unless the cache's OPTIONS set them."""


def _redis_client(server: str, options: Mapping[str, Any]) -> redis.Redis:
    """A client for `server` whose pool is made as Django's RedisCache makes its own."""
    # The serializer is the cache's, for its values: the script keeps its own entries.
    pool_options = {
        option: value
        for option, value in options.items()
        if option not in {"pool_class", "serializer"}
    }
    # A Redis that accepts connections but never answers must not hold the calling
    # thread for ever (the loop's worker threads serve the store too): unless the cache's
    # OPTIONS say otherwise, a step gives up after a second, and the request is admitted.
    for timeout in ("socket_timeout", "socket_connect_timeout"):
        pool_options.setdefault(timeout, REDIS_TIMEOUT_SECONDS)
    if isinstance(pool_options.get("parser_class"), str):
        pool_options["parser_class"] = import_string(pool_options["parser_class"])
    pool_class = options.get("pool_class") or redis.ConnectionPool
    if isinstance(pool_class, str):
        pool_class = import_string(pool_class)
    return redis.Redis(connection_pool=pool_class.from_url(server, **pool_options))


def _redis_servers(location: Any) -> list[str]:
    """The server URLs of a RedisCache LOCATION: a list, or one string split at `,` or `;`."""
    if isinstance(location, str):
        return [part.strip() for part in location.replace(";", ",").split(",") if part.strip()]
    return [str(server) for server in location or ()]


def _log_for_alias(alias: str, clock: Callable[[], float]) -> _WindowLog:
    """The log of cache `alias`: the limiter's own Redis client for a RedisCache, else the cache."""
    config = django_settings.CACHES.get(alias, {})
    backend = config.get("BACKEND", "")
    servers = _redis_servers(config.get("LOCATION"))
    if servers and issubclass(import_string(backend), RedisCache):
        # Django's RedisCache writes every key to the first server (the others are replicas
        # it reads from), so the counters, which are read and written in one step, live there.
        return _RedisWindowLog(caches[alias], servers[0], config.get("OPTIONS") or {})
    return _CacheWindowLog(caches[alias], clock)


_LOCAL_LOCK = threading.Lock()  # serializes the read-modify-write of the cache logs


class _CacheWindowLog:
    """A log in any Django cache, through its documented `get` and `set`, under a lock."""

    def __init__(self, cache: BaseCache, clock: Callable[[], float]) -> None:
        self.cache = cache
        self.clock = clock
        self.waits_on_io = not isinstance(cache, LocMemCache | DummyCache)

    def run(
        self, limits: Sequence[tuple[str, int]], window: float, mode: str, amount: int
    ) -> float | None:
        """Apply `mode` to the logs of `limits` at once, under the process-wide lock."""
        with _LOCAL_LOCK:
            return self._run_locked(limits, window, mode, amount)

    def _run_locked(
        self, limits: Sequence[tuple[str, int]], window: float, mode: str, amount: int
    ) -> float | None:
        now = self.clock()
        logs = []
        for key, limit in limits:
            times, amounts = _packed(self.cache.get(key))
            start = bisect.bisect_right(times, now - window)  # times only grow: the rest is live
            logs.append((key, limit, times[start:], amounts[start:]))
        waits = [
            _wait(times, amounts, limit - amount, now - window)
            for _, limit, times, amounts in logs
            if sum(amounts) + amount > limit
        ]
        if mode == "add" or (mode == "hit" and not waits):
            for key, _, times, amounts in logs:
                self._append(key, times, amounts, now, amount, window)
            return None
        return max(waits) if waits else None

    def _append(  # noqa: PLR0917 - the log's parts, and where it goes
        self,
        key: str,
        times: array[float],
        amounts: array[int],
        now: float,
        amount: int,
        window: float,
    ) -> None:
        # A clock that stepped back records the last time again, keeping the times sorted.
        times.append(max(now, times[-1]) if times else now)
        amounts.append(amount)
        self.cache.set(key, (times, amounts), timeout=math.ceil(window))


def _wait(times: array[float], amounts: array[int], room: int, window_start: float) -> float:
    """Seconds until a log over its limit holds at most `room`.

    That is until enough of its oldest entries leave the window (which starts at
    `window_start` now).
    """
    total = sum(amounts)
    for at, count in zip(times, amounts, strict=True):
        total -= count
        if total <= room:
            return at - window_start
    return (times[-1] if times else window_start) - window_start


def _packed(stored: Any) -> tuple[array[float], array[int]]:
    """A cached log as two arrays, times and amounts: one copy to read and write each.

    Not an object per entry, which pickling would visit one by one. Nothing stored yet,
    or anything else, is an empty log.
    """
    if isinstance(stored, tuple) and len(stored) == 2:
        return stored[0], stored[1]
    return array("d"), array("q")  # nothing yet, or a value of another format


_Step = tuple[list[tuple[str, int]], str, int]
"""One step of the window logs: the (key, limit) of each log, the mode, the amount."""


class RateLimiter:
    """The request and token budgets of `settings.rate_limit`, kept in a Django cache's store.

    Args:
        settings: The chat settings (or their rate_limit part).
        cache: The alias of a cache in `settings.CACHES` (default "default"), or a cache
            object. An alias of a RedisCache is served by the limiter's own Redis client,
            atomic across processes; anything else through the cache's `get` and `set`
            (see the module's docstring).
        prefix: Prefix of the cache keys.
        clock: Seconds since the epoch, for non-Redis caches (Redis uses its own clock).
    """

    def __init__(
        self,
        settings: ChatSettings | RateLimitSettings,
        *,
        cache: str | BaseCache = "default",
        prefix: str = "chatomon:ratelimit",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings.rate_limit if isinstance(settings, ChatSettings) else settings
        self.prefix = prefix
        self._log: _WindowLog = (
            _log_for_alias(cache, clock)
            if isinstance(cache, str)
            else _CacheWindowLog(cache, clock)
        )

    async def hit(self, scope: str) -> Admission:
        """Count one request of `scope`; refused while its budgets are spent in the window.

        The budgets are `requests` of the scope (`console_requests` for a console
        `RateScope`), and `anonymous_requests_per_ip` of the client address an anonymous
        `RateScope` carries. Either refusing refuses, and a refused request is counted by
        none of them.
        """
        limits = self._request_limits(scope)
        if not limits:
            return Admission(allowed=True)
        return _admission(await self._apply(limits, "hit", 1))

    def admit(self, scope: str) -> Admission:
        """`hit` for sync code (a view's request thread): the cache is called right here."""
        limits = self._request_limits(scope)
        if not limits:
            return Admission(allowed=True)
        return _admission(self._apply_here(limits, "hit", 1))

    def budget(self, scope: str) -> TokenBudget:
        """The token budgets of `scope`, for one turn (`ChatService.run_turn(budget=...)`)."""
        return TokenBudget(self, scope)

    def owner_budget(self, owner: Owner) -> TokenBudget:
        """The token budgets of a conversation owner (`ChatService(budget_for=...)`).

        The scope `scope_key` gives the same asker: "user:<id>" or "session:<identity>".

        Examples:
            >>> RateLimiter.__new__(RateLimiter).owner_budget(Owner.user(7)).scope
            'user:7'
        """
        return TokenBudget(self, f"{owner.kind}:{owner.key}")

    def _request_limits(self, scope: str) -> list[tuple[str, int]]:
        """The (key, limit) of each request budget `scope` counts in (those in force)."""
        console = isinstance(scope, RateScope) and scope.console
        counter = "console_requests" if console else "requests"
        budgets = [
            (f"{self.prefix}:{counter}:{scope}", getattr(self.settings, counter)),
        ]
        client_ip = scope.client_ip if isinstance(scope, RateScope) else None
        if client_ip is not None:
            budgets.append(
                (
                    f"{self.prefix}:anonymous_requests_per_ip:{client_ip}",
                    self.settings.anonymous_requests_per_ip,
                )
            )
        return [(key, limit) for key, limit in budgets if limit is not None]

    async def _apply(self, limits: list[tuple[str, int]], mode: str, amount: int) -> float | None:
        """Apply `mode` to the logs of `limits` (key, limit) at once.

        "hit" records `amount` in every log when all have room, else in none; "check" only
        asks; "add" records whatever the limits. Returns the seconds until every log over
        its limit has room, None when all have room.
        """
        return (await self._steps([(limits, mode, amount)]))[0]

    async def _steps(self, steps: Sequence[_Step]) -> list[float | None]:
        """`_apply` each step in order; their results. One trip off the loop for them all.

        A log on a server (Redis) is stepped on a worker thread, off the event loop: a
        turn's token budgets (several counters, each with its own amount) then cost one
        trip to a thread, not one per counter.
        """

        def run() -> list[float | None]:
            return [self._apply_here(limits, mode, amount) for limits, mode, amount in steps]

        if self._log.waits_on_io:
            return await asyncio.to_thread(run)
        return run()

    def _apply_here(self, limits: list[tuple[str, int]], mode: str, amount: int) -> float | None:
        try:
            return self._log.run(limits, self.settings.window_seconds, mode, amount)
        except Exception as error:  # noqa: BLE001 - a broken cache admits (logged)
            logger.error("rate limit cache failed (%s): admitting", type(error).__name__)
            return None


def _admission(wait: float | None) -> Admission:
    if wait is None:
        return Admission(allowed=True)
    return Admission(allowed=False, retry_after_seconds=max(1, math.ceil(wait)))


class TokenBudget:
    """A `chatomon.chat.budget.TurnBudget` over the limiter's token counters of one scope.

    The chat service records every completed provider round and summary here, even past a
    limit (the reference: "GeneralManager records the completed provider usage"), and asks
    `check` before the next provider round, round of tools, confirmed write or summary.
    """

    def __init__(self, limiter: RateLimiter, scope: str) -> None:
        self.limiter = limiter
        self.scope = scope

    def _key(self, counter: str) -> str:
        return f"{self.limiter.prefix}:{counter}:{self.scope}"

    async def check(self) -> float | None:
        """Seconds until every exhausted token budget frees, or None while there is room.

        One step for all of them: room for one more token (amount 1, not recorded) in
        every budget, the wait the longest of those that have none.
        """
        limits = [
            (self._key(counter), limit)
            for counter, limit in self.limiter.settings.token_limits().items()
        ]
        if not limits:
            return None
        return await self.limiter._apply(limits, "check", 1)

    async def record(self, usage: TokenUsage) -> None:
        """Count the tokens of one completed provider round (one trip for every counter)."""
        amounts = {
            "tokens": usage.input_tokens + usage.output_tokens,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
        }
        steps: list[_Step] = [
            ([(self._key(counter), limit)], "add", amounts[counter])
            for counter, limit in self.limiter.settings.token_limits().items()
            if amounts[counter] > 0
        ]
        if steps:
            await self.limiter._steps(steps)
