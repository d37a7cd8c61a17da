"""Rate limits for a served registry: token buckets per caller, overall and per tool.

`asgi_app(registry, rate_limit=RateLimit("60/min", tools={"search": "10/min"}))`: each
caller (its token's subject with `auth=`, else its address) may make 60 `tools/call`
requests a minute in all, 10 of them to `search`; a bucket holds as many calls as the
rate allows per period (the burst) and refills continuously. A call over a limit is
answered HTTP 429 with `Retry-After` (whole seconds) and a JSON-RPC error (-32000) that
says which limit and when to retry; the tool does not run. Other requests
(`tools/list`, `initialize`...) are not counted.

Where the buckets live:

- in the process (the default): with `--workers N` each worker keeps its own (so a caller
  may get up to N times the rate), and so does each machine; at most `MAX_CALLERS`
  callers are remembered (the least recently seen are forgotten);
- in Redis, with `RateLimit(..., redis="redis://host:6379/0")` (or `redis=` a `RedisStore`,
  whose client and key prefix it reuses): every worker and machine charges the same
  buckets. Each charge is one Lua script (`EVALSHA`), so it is atomic on the server, and
  reads the server's clock (`TIME`), so machines whose clocks differ agree. A bucket is one
  key, `<prefix>rate:{<caller digest>}:all` or `...:tool:<name>` (the caller's identity is
  hashed: a huge identity makes a short key; the braces keep a caller's keys in one Redis
  Cluster slot), holding the time at which the bucket will be full again (the GCRA form of
  a token bucket), with that moment as its expiry: a caller who stops calling leaves
  nothing behind once their buckets have refilled.

When Redis does not answer within `redis_timeout` seconds (down, unreachable, slow, a wrong
password), the call is refused: HTTP 503 with `Retry-After: 1` and a JSON-RPC error
(-32000) saying the limit could not be checked; the tool does not run. From then on, one
call at a time asks Redis again and every other call is refused at once (so a Redis that
hangs holds one connection and one waiting request, not one per call), until one gets an
answer. A limit that
vanished whenever its store did could be switched off by whoever overloads the store, so
it fails closed. One WARNING line on the `toolreg.mcp` logger says so when the store stops
answering (and one when it answers again); neither a message nor a log line shows the URL's
user name or password.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import UsageError
from ..stores.redis import RedisStore, redacted

__all__ = ["RATE_LIMIT_CODE", "Limiter", "RateLimit", "RateLimitUnavailable", "parse_rate"]

_log = logging.getLogger("toolreg.mcp")

RATE_LIMIT_CODE = -32000
"""The JSON-RPC error code of a call over its rate limit (implementation-defined range)."""
MAX_CALLERS = 10_000
"""Callers whose buckets are kept; beyond that the least recently seen are forgotten."""
_UNITS = {
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "min": 60.0,
    "minute": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
}

Rate = tuple[int, float]

_SCHEMES = ("redis", "rediss", "unix")
DEFAULT_REDIS_TIMEOUT = 0.5
"""Seconds a shared bucket's check may take before the call is refused (HTTP 503)."""


def parse_rate(text: object) -> Rate:
    """`"60/min"` -> (60, 60.0): calls, and the period in seconds (s, min or h)."""
    if isinstance(text, tuple) and len(text) == 2:
        calls, per = text
    elif isinstance(text, str) and "/" in text:
        count, _, unit = text.partition("/")
        per_unit = _UNITS.get(unit.strip().lower())
        try:
            calls = int(count.strip())
        except ValueError:
            calls = 0
        per = per_unit if per_unit is not None else 0.0
    else:
        calls, per = 0, 0.0
    if (
        isinstance(calls, bool)
        or not isinstance(calls, int)
        or calls < 1
        or not isinstance(per, (int, float))
        or not math.isfinite(per)
        or per <= 0
    ):
        raise UsageError(f"rate {text!r}: write calls per period, e.g. '60/min', '5/s' or '1000/h'")
    return calls, float(per)


@dataclass(frozen=True, slots=True)
class RateLimit:
    """`calls` (e.g. `"60/min"`): every caller's `tools/call` requests in all; `tools`:
    tighter limits per tool name (`{"search": "10/min"}`), per caller too. `redis`: a URL
    (`redis://`, `rediss://`, `unix://`) or a `RedisStore` whose buckets every process and
    machine share (None: buckets per process); `redis_timeout`: the seconds a check may
    take before the call is refused (503)."""

    calls: str | Rate | None = None
    tools: Mapping[str, str | Rate] = field(default_factory=dict)
    redis: str | RedisStore | None = field(default=None, repr=False)
    redis_timeout: float = DEFAULT_REDIS_TIMEOUT
    _overall: Rate | None = field(init=False, repr=False, compare=False)
    _tools: dict[str, Rate] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_overall", None if self.calls is None else parse_rate(self.calls))
        if not isinstance(self.tools, Mapping):
            raise UsageError("RateLimit(tools=) maps tool names to rates: {'search': '10/min'}")
        object.__setattr__(self, "_tools", {str(k): parse_rate(v) for k, v in self.tools.items()})
        if self._overall is None and not self._tools:
            raise UsageError("RateLimit needs calls='60/min' or tools={'name': '10/min'}")
        if self.redis is not None and not isinstance(self.redis, RedisStore):
            if not isinstance(self.redis, str):
                raise UsageError(
                    "RateLimit(redis=) takes a URL ('redis://host:6379/0') or a RedisStore"
                )
            scheme = self.redis.partition("://")[0].lower() if "://" in self.redis else ""
            if scheme not in _SCHEMES:
                raise UsageError(
                    f"RateLimit(redis={redacted(self.redis)!r}): a Redis URL starts with "
                    "redis://, rediss:// or unix://, e.g. 'redis://127.0.0.1:6379/0'"
                )
        timeout = self.redis_timeout
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise UsageError(
                f"RateLimit(redis_timeout={timeout!r}): a number of seconds > 0, e.g. 0.5"
            )

    def buckets(self) -> Limiter:
        """This limit's buckets: in Redis when `redis=` is given, else in this process."""
        if self.redis is None:
            return Buckets(self._overall, self._tools)
        return SharedBuckets(self._overall, self._tools, self.redis, float(self.redis_timeout))


class RateLimitUnavailable(Exception):
    """The shared buckets could not be checked (Redis down, slow or refusing us)."""


class Limiter(Protocol):
    """Charges calls to buckets: `Buckets` (this process) or `SharedBuckets` (Redis)."""

    def describe(self, tool: str) -> str:
        """The limit named by `take`'s second answer, in words (`"at most 3 tool calls per
        min"`)."""
        ...

    async def take(self, caller: str, tool: str) -> tuple[float, str]:
        """Charge one call of `tool` by `caller`: (0.0, "") when admitted, else (the seconds
        until it would be, the tool whose limit it is or "" for the overall one), with
        nothing charged. Raises `RateLimitUnavailable` when the buckets cannot be read."""
        ...


class Buckets:
    """The token buckets of one process. `take(caller, tool)` charges one call: 0.0 when
    admitted, else the seconds until it would be (nothing is charged then)."""

    __slots__ = ("_lock", "_overall", "_state", "_tools")

    def __init__(self, overall: Rate | None, tools: Mapping[str, Rate]) -> None:
        self._overall = overall
        self._tools = dict(tools)
        self._lock = threading.Lock()
        # caller -> {tool, or "" for the overall limit: [tokens, last refill (monotonic)]}
        self._state: collections.OrderedDict[str, dict[str, list[float]]] = (
            collections.OrderedDict()
        )

    def describe(self, tool: str) -> str:
        return _describe(self._overall, self._tools, tool)

    async def take(self, caller: str, tool: str) -> tuple[float, str]:
        """(seconds to wait, the tool whose limit it is or "" for the overall one)."""
        overall, rate = self._overall, self._tools.get(tool)
        now = time.monotonic()
        with self._lock:
            buckets = self._state.get(caller)
            if buckets is None:
                buckets = self._state[caller] = {}
                if len(self._state) > MAX_CALLERS:
                    self._state.popitem(last=False)
            else:
                self._state.move_to_end(caller)
            first = None if overall is None else _refill(buckets, "", overall, now)
            if first is not None and first[0] < 1.0:
                return (1.0 - first[0]) * overall[1] / overall[0], ""  # type: ignore[index]
            second = None if rate is None else _refill(buckets, tool, rate, now)
            if second is not None:
                if second[0] < 1.0:
                    return (1.0 - second[0]) * rate[1] / rate[0], tool  # type: ignore[index]
                second[0] -= 1.0
            if first is not None:
                first[0] -= 1.0
        return 0.0, ""


# KEYS: the buckets to charge, in order (overall first); ARGV: per bucket, its calls and
# its period in ms. Each key holds the time (server ms) at which its bucket is full again
# (GCRA): a call is admitted when it leaves that time at most one period ahead. Returns
# {0, 0} (charged, every key's expiry set to its new time) or {ms to wait, the bucket's
# index} (nothing written).
_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + tonumber(clock[2]) / 1000
local full = {}
for i = 1, #KEYS do
  local calls, per = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local interval = per / calls
  local at = tonumber(redis.call('GET', KEYS[i])) or now
  if at < now then at = now end
  if at > now + per then at = now + per end
  local wait = at + interval - per - now
  if wait > 0.001 then return {math.ceil(wait), i} end
  full[i] = at + interval
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], string.format('%.3f', full[i]), 'PX', math.ceil(full[i] - now) + 1)
end
return {0, 0}
"""


class SharedBuckets:
    """Token buckets in Redis, charged by every process that has the same store (see the
    module's text). `take` raises `RateLimitUnavailable` when Redis does not answer in time."""

    __slots__ = (
        "_client",
        "_failing",
        "_overall",
        "_prefix",
        "_probing",
        "_script",
        "_timeout",
        "_tools",
        "where",
    )

    def __init__(
        self,
        overall: Rate | None,
        tools: Mapping[str, Rate],
        redis: str | RedisStore,
        timeout: float,
    ) -> None:
        self._overall = overall
        self._tools = dict(tools)
        self._timeout = timeout
        self._failing = False
        self._probing = False
        if isinstance(redis, RedisStore):
            self._client: Any = redis.async_client
            self._prefix = redis.prefix
            self.where = "the RedisStore's Redis"
        else:
            try:
                import redis.asyncio as aioredis
            except ImportError:
                raise UsageError(
                    "RateLimit(redis=) needs the redis package: pip install 'toolreg[redis]'"
                ) from None
            self._client = aioredis.Redis.from_url(
                redis, socket_timeout=timeout, socket_connect_timeout=timeout
            )
            self._prefix = "toolreg:"
            self.where = f"Redis at {redacted(redis)}"
        self._script = self._client.register_script(_TAKE)

    def describe(self, tool: str) -> str:
        return _describe(self._overall, self._tools, tool)

    def _keys(self, caller: str, tool: str) -> tuple[list[str], list[str], list[str]]:
        """The keys `take` charges for `caller` and `tool`, their rates as script
        arguments, and the tool each limit belongs to ("" for the overall one)."""
        digest = hashlib.sha256(caller.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        base = f"{self._prefix}rate:{{{digest}}}:"
        keys: list[str] = []
        args: list[str] = []
        names: list[str] = []
        rate = self._tools.get(tool)
        for key, name, limit in (
            (f"{base}all", "", self._overall),
            (f"{base}tool:{tool}", tool, rate),
        ):
            if limit is not None:
                keys.append(key)
                args += [str(limit[0]), repr(limit[1] * 1000.0)]
                names.append(name)
        return keys, args, names

    async def take(self, caller: str, tool: str) -> tuple[float, str]:
        keys, args, names = self._keys(caller, tool)
        if not keys:
            return 0.0, ""
        if self._failing and self._probing:  # one call at a time asks a failing Redis
            raise RateLimitUnavailable(self.where)
        probe = self._failing
        self._probing = self._probing or probe
        try:
            answer = await asyncio.wait_for(self._script(keys=keys, args=args), self._timeout)
            wait, index = int(answer[0]), int(answer[1])
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # down, slow, refused, a wrong password: refuse the call
            if not self._failing:
                self._failing = True
                _log.warning(
                    "the rate limits in %s cannot be checked (%s); tool calls are refused "
                    "(503) until it answers",
                    self.where,
                    type(exc).__name__,
                )
            raise RateLimitUnavailable(self.where) from None
        finally:
            if probe:
                self._probing = False
        if self._failing:
            self._failing = False
            _log.warning("the rate limits in %s answer again", self.where)
        if wait <= 0:
            return 0.0, ""
        return wait / 1000.0, names[index - 1]


def _describe(overall: Rate | None, tools: Mapping[str, Rate], tool: str) -> str:
    rate = tools.get(tool)
    if rate is not None:
        count = "1 call" if rate[0] == 1 else f"{rate[0]} calls"
        return f"at most {count} of '{tool}' per {_period(rate[1])}"
    calls, per = overall or (0, 1.0)
    return f"at most {calls} tool calls per {_period(per)}"


def _refill(buckets: dict[str, list[float]], name: str, rate: Rate, now: float) -> list[float]:
    """The bucket `name` of one caller, refilled up to `now` (full when new)."""
    state = buckets.get(name)
    calls, per = rate
    if state is None:
        state = buckets[name] = [float(calls), now]
    else:
        state[0] = min(float(calls), state[0] + (now - state[1]) * calls / per)
        state[1] = now
    return state


def _period(seconds: float) -> str:
    for unit, size in (("h", 3600.0), ("min", 60.0)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return unit if count == 1 else f"{count} {unit}"
    return f"{seconds:g} s"
