"""`dispatch_many` / `adispatch_many`: several calls at once, results in call order."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from toolreg import ToolCall, ToolRegistry

NAP = 0.2

INTERRUPTED = "interrupted while running, so it may have had effects."


class Gauge:
    """Counts how many calls run at the same time (a counter under a lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


def make_registry(**settings: Any) -> tuple[ToolRegistry, Gauge]:
    reg = ToolRegistry(**settings)
    gauge = Gauge()

    @reg.register_tool
    def nap(i: int, seconds: float = NAP) -> int:
        """Sleeps, then returns i."""
        with gauge:
            time.sleep(seconds)
        return i

    @reg.register_tool
    async def anap(i: int, seconds: float = NAP) -> int:
        """Sleeps asynchronously, then returns i."""
        with gauge:
            await asyncio.sleep(seconds)
        return i * 10

    @reg.register_tool
    def fail(message: str) -> str:
        """Always fails."""
        raise ValueError(message)

    return reg, gauge


def naps(tool: str = "nap", n: int = 8, seconds: float = NAP) -> list[ToolCall]:
    # reversed sleep lengths: the last call finishes first, the order must still hold
    return [
        ToolCall(tool, {"i": i, "seconds": seconds * (1 + (n - i) / (4 * n))}, f"call_{i}")
        for i in range(n)
    ]


@pytest.mark.parametrize("tool", ["nap", "anap"])
def test_dispatch_many_runs_concurrently_in_call_order(tool: str) -> None:
    reg, gauge = make_registry()
    start = time.perf_counter()
    results = reg.dispatch_many(naps(tool))
    elapsed = time.perf_counter() - start
    scale = 10 if tool == "anap" else 1
    assert [r.value for r in results] == [i * scale for i in range(8)]
    assert [r.call_id for r in results] == [f"call_{i}" for i in range(8)]
    assert all(r.ok for r in results)
    assert gauge.peak == 8
    assert elapsed < 1.0  # 8 x 0.2 s one after the other would be 1.6 s or more


@pytest.mark.parametrize("tool", ["nap", "anap"])
def test_adispatch_many_runs_concurrently_in_call_order(tool: str) -> None:
    reg, gauge = make_registry()

    async def run() -> tuple[list[Any], float]:
        start = time.perf_counter()
        results = await reg.adispatch_many(naps(tool))
        return results, time.perf_counter() - start

    results, elapsed = asyncio.run(run())
    scale = 10 if tool == "anap" else 1
    assert [r.value for r in results] == [i * scale for i in range(8)]
    assert [r.call_id for r in results] == [f"call_{i}" for i in range(8)]
    assert gauge.peak == 8  # sync tools too: not limited by asyncio's default executor
    assert elapsed < 1.0


def test_mixed_sync_async_and_failing_calls_keep_their_places() -> None:
    reg, _ = make_registry()
    calls: list[Any] = [
        ("nap", {"i": 1, "seconds": 0.05}),
        ("anap", {"i": 2, "seconds": 0.01}),
        ("fail", {"message": "boom"}),
        ("missing", {}),
        ("nap", '{"i": "5", "seconds": 0}'),
        ("nap", "{oops"),
    ]
    expected = [
        "1",
        "20",
        "Tool 'fail' failed: ValueError: boom",
        "Unknown tool 'missing'. Available: nap, anap, fail.",
        "5",
        "Arguments are not valid JSON: Expecting property name enclosed in double quotes "
        "at line 1, column 2.",
    ]
    assert [r.content for r in reg.dispatch_many(calls)] == expected
    assert [r.content for r in asyncio.run(reg.adispatch_many(calls))] == expected


def test_call_forms_tool_call_tuple_dict_and_openai_entry() -> None:
    reg, _ = make_registry()
    calls: list[Any] = [
        ToolCall("nap", '{"i": 1, "seconds": 0}', "a"),
        ("nap", {"i": 2, "seconds": 0}),
        ("nap", {"i": 3, "seconds": 0}, "c"),
        ("nap",),
        {"name": "nap", "arguments": '{"i": 5, "seconds": 0}', "call_id": "e"},
        {"name": "nap", "arguments": {"i": 6, "seconds": 0}, "id": "f"},
        {
            "id": "g",
            "type": "function",
            "function": {"name": "nap", "arguments": '{"i": 7, "seconds": 0}'},
        },
        {"name": "nap"},
    ]
    for results in (reg.dispatch_many(calls), asyncio.run(reg.adispatch_many(calls))):
        assert [r.value for r in results] == [1, 2, 3, None, 5, 6, 7, None]
        assert [r.call_id for r in results] == ["a", None, "c", None, "e", "f", "g", None]
        assert results[3].content == (
            "Invalid arguments for tool 'nap': missing required property 'i'."
        )


def test_a_call_that_is_not_a_call_is_a_programming_error() -> None:
    reg, _ = make_registry()
    with pytest.raises(TypeError, match="a call must be a ToolCall, tuple or mapping, not str"):
        reg.dispatch_many(["nap"])


def test_empty_and_single_batches() -> None:
    reg, _ = make_registry()
    assert reg.dispatch_many([]) == []
    assert asyncio.run(reg.adispatch_many([])) == []
    (only,) = reg.dispatch_many([("nap", {"i": 4, "seconds": 0})])
    assert only.value == 4


def test_calls_may_be_any_iterable() -> None:
    reg, _ = make_registry()
    results = reg.dispatch_many(("nap", {"i": i, "seconds": 0}) for i in range(3))
    assert [r.value for r in results] == [0, 1, 2]


@pytest.mark.parametrize("limit", [1, 3])
def test_max_concurrency_is_respected_by_dispatch_many(limit: int) -> None:
    reg, gauge = make_registry(max_concurrency=limit)
    results = reg.dispatch_many(naps("nap", n=6, seconds=0.03))
    assert [r.value for r in results] == list(range(6))
    assert gauge.peak == limit


@pytest.mark.parametrize("limit", [1, 3])
@pytest.mark.parametrize("tool", ["nap", "anap"])
def test_max_concurrency_is_respected_by_adispatch_many(limit: int, tool: str) -> None:
    reg, gauge = make_registry(max_concurrency=limit)
    results = asyncio.run(reg.adispatch_many(naps(tool, n=6, seconds=0.03)))
    assert len(results) == 6
    assert all(r.ok for r in results)
    assert gauge.peak == limit


def test_allowed_context_and_confirm_apply_to_every_call() -> None:
    reg = ToolRegistry()

    @reg.register_tool(destructive=True)
    def wipe(what: str) -> str:
        return f"wiped {what}"

    @reg.register_tool
    def read(what: str) -> str:
        return what

    asked: list[str] = []

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append(arguments["what"])
        return arguments["what"] == "cache"

    calls = [("wipe", {"what": "cache"}), ("wipe", {"what": "db"}), ("read", {"what": "x"})]
    results = reg.dispatch_many(calls, confirm=confirm, allowed=("wipe",))
    assert [r.error_kind for r in results] == [None, "denied", "unknown_tool"]
    assert results[2].content == "Unknown tool 'read'. Available: wipe."
    assert sorted(asked) == ["cache", "db"]
    aresults = asyncio.run(reg.adispatch_many(calls, confirm=confirm, allowed=iter(["wipe"])))
    assert [r.error_kind for r in aresults] == [None, "denied", "unknown_tool"]


def test_dispatch_many_inside_a_running_loop() -> None:
    reg, _ = make_registry()

    async def run() -> list[Any]:
        return [r.value for r in reg.dispatch_many(naps("anap", n=4, seconds=0.01))]

    assert asyncio.run(run()) == [0, 10, 20, 30]


def test_each_call_sees_the_callers_context_variables() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    reg = ToolRegistry()

    @reg.register_tool
    def read_var(i: int) -> str:
        time.sleep(0.01)
        return var.get()

    token = var.set("caller")
    try:
        results = reg.dispatch_many([("read_var", {"i": i}) for i in range(4)])
    finally:
        var.reset(token)
    assert [r.content for r in results] == ["caller"] * 4


def test_timeouts_inside_a_batch() -> None:
    reg = ToolRegistry()

    @reg.register_tool(timeout=0.05)
    def stuck(i: int) -> int:
        time.sleep(0.5 if i == 1 else 0)
        return i

    results = reg.dispatch_many([("stuck", {"i": i}) for i in range(3)])
    assert [r.content for r in results] == [
        "0",
        f"Tool 'stuck' timed out after 0.05 s: {INTERRUPTED}",
        "2",
    ]
