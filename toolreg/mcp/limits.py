"""Rate limits for a served registry: token buckets per caller, overall and per tool.

`asgi_app(registry, rate_limit=RateLimit("60/min", tools={"search": "10/min"}))`: each
caller (its token's subject with `auth=`, else its address) may make 60 `tools/call`
requests a minute in all, 10 of them to `search`; a bucket holds as many calls as the
rate allows per period (the burst) and refills continuously. A call over a limit is
answered HTTP 429 with `Retry-After` (whole seconds) and a JSON-RPC error (-32000) that
says which limit and when to retry; the tool does not run. Other requests
(`tools/list`, `initialize`...) are not counted.

The buckets live in the process: with `--workers N` each worker keeps its own (so a
caller may get up to N times the rate), and so does each machine. Shared limits (Redis)
are not built yet.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import UsageError

__all__ = ["RATE_LIMIT_CODE", "RateLimit", "parse_rate"]

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
    tighter limits per tool name (`{"search": "10/min"}`), per caller too."""

    calls: str | Rate | None = None
    tools: Mapping[str, str | Rate] = field(default_factory=dict)
    _overall: Rate | None = field(init=False, repr=False, compare=False)
    _tools: dict[str, Rate] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_overall", None if self.calls is None else parse_rate(self.calls))
        if not isinstance(self.tools, Mapping):
            raise UsageError("RateLimit(tools=) maps tool names to rates: {'search': '10/min'}")
        object.__setattr__(self, "_tools", {str(k): parse_rate(v) for k, v in self.tools.items()})
        if self._overall is None and not self._tools:
            raise UsageError("RateLimit needs calls='60/min' or tools={'name': '10/min'}")

    def buckets(self) -> Buckets:
        return Buckets(self._overall, self._tools)


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
        rate = self._tools.get(tool)
        if rate is not None:
            count = "1 call" if rate[0] == 1 else f"{rate[0]} calls"
            return f"at most {count} of '{tool}' per {_period(rate[1])}"
        calls, per = self._overall or (0, 1.0)
        return f"at most {calls} tool calls per {_period(per)}"

    def take(self, caller: str, tool: str) -> tuple[float, str]:
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
