"""Resource locks (`register_tool(lock=...)`, issue 32, section 4): calls that use one resource
run one at a time while the others overlap. Overlap is counted (calls running at once), not
timed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from toolreg import ToolDefinitionError, ToolRegistry

HOLD = 20.0  # the longest a test waits for something that happens at once when it works
WIDEN = 0.02  # a locked call lingers this long, so that a broken lock would show overlap


class Gauge:
    """Calls running at once, by resource."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = defaultdict(int)
        self.peak: dict[str, int] = defaultdict(int)

    def enter(self, key: str) -> None:
        with self.lock:
            self.now[key] += 1
            self.peak[key] = max(self.peak[key], self.now[key])

    def leave(self, key: str) -> None:
        with self.lock:
            self.now[key] -= 1


def bank() -> tuple[ToolRegistry, Gauge, dict[str, threading.Event]]:
    reg = ToolRegistry(max_concurrency=8)
    gauge = Gauge()
    running = {"A": threading.Event(), "B": threading.Event()}

    def account(args: dict[str, Any]) -> str:
        return f"account:{args['account']}"

    def use(account: str) -> None:
        gauge.enter(account)
        try:
            running[account].set()
            other = "B" if account == "A" else "A"
            assert running[other].wait(HOLD), f"{account} never ran beside {other}"
            time.sleep(WIDEN)
        finally:
            gauge.leave(account)

    @reg.register_tool(lock=account)
    def debit(account: str, amount: int) -> str:
        """Take money from an account."""
        use(account)
        return f"debited {amount}"

    @reg.register_tool(lock=account)
    async def credit(account: str, amount: int) -> str:
        """Give money to an account (async: waits for the lock without blocking the loop)."""
        gauge.enter(account)
        try:
            running[account].set()
            other = "B" if account == "A" else "A"
            for _ in range(int(HOLD / 0.01)):
                if running[other].is_set():
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(WIDEN)
        finally:
            gauge.leave(account)
        return f"credited {amount}"

    return reg, gauge, running


CALLS = [
    ("debit", {"account": "A", "amount": 1}),
    ("credit", {"account": "A", "amount": 2}),
    ("debit", {"account": "A", "amount": 3}),
    ("debit", {"account": "B", "amount": 4}),
]


def test_calls_to_one_resource_run_one_at_a_time_while_others_overlap() -> None:
    reg, gauge, _ = bank()
    results = reg.dispatch_many(CALLS)
    assert [r.content for r in results] == ["debited 1", "credited 2", "debited 3", "debited 4"]
    assert gauge.peak["A"] == 1  # debit and credit of account A never overlapped
    assert len(reg.dispatcher.locks) == 0  # nothing held once done


def test_async_dispatch_takes_the_same_locks() -> None:
    reg, gauge, _ = bank()
    results = asyncio.run(reg.adispatch_many(CALLS))
    assert all(r.ok for r in results), [r.content for r in results]
    assert gauge.peak["A"] == 1
    assert len(reg.dispatcher.locks) == 0


def test_a_lock_name_is_shared_by_every_tool_that_names_it() -> None:
    reg = ToolRegistry()
    gauge = Gauge()

    def ledger_call() -> None:
        gauge.enter("ledger")
        time.sleep(WIDEN)
        gauge.leave("ledger")

    @reg.register_tool(lock="ledger")
    def post(amount: int) -> int:
        """Post to the ledger."""
        ledger_call()
        return amount

    @reg.register_tool(lock="ledger")
    def reverse(amount: int) -> int:
        """Reverse a posting."""
        ledger_call()
        return -amount

    results = reg.dispatch_many(
        [("post", {"amount": i}) for i in range(3)] + [("reverse", {"amount": 9})]
    )
    assert [r.value for r in results] == [0, 1, 2, -9]
    assert gauge.peak["ledger"] == 1


def test_a_lock_function_may_answer_none_for_no_lock() -> None:
    reg = ToolRegistry()
    both = threading.Barrier(2, timeout=HOLD)

    @reg.register_tool(lock=lambda args: args.get("account"))
    def note(text: str, account: str | None = None) -> str:
        """A note; only notes on an account are serialised."""
        both.wait()  # two notes without an account run at once, or this breaks
        return text

    results = reg.dispatch_many([("note", {"text": "a"}), ("note", {"text": "b"})])
    assert [r.content for r in results] == ["a", "b"]


def test_a_lock_function_that_fails_stops_the_call_before_it_runs() -> None:
    reg = ToolRegistry()
    ran: list[str] = []

    @reg.register_tool(lock=lambda args: args["missing"])
    def pay(amount: int) -> str:
        """Pay."""
        ran.append("pay")
        return "paid"

    result = reg.dispatch_tool("pay", {"amount": 1})
    assert (result.ok, result.outcome, result.error_kind) == (
        False,
        "not_started",
        "execution_error",
    )
    assert result.content == "Tool 'pay' was not run: the resource it locks could not be chosen."
    assert isinstance(result.exception, KeyError)
    assert ran == []


def test_a_call_that_waits_too_long_for_its_lock_is_not_run() -> None:
    reg = ToolRegistry()
    release = threading.Event()
    holding = threading.Event()

    @reg.register_tool(lock="printer")
    def long_job() -> str:
        """Holds the printer."""
        holding.set()
        release.wait(HOLD)
        return "printed"

    @reg.register_tool(lock="printer", timeout=0.05)
    def quick_job() -> str:
        """Needs the printer briefly."""
        return "quick"

    worker = threading.Thread(target=reg.dispatch_tool, args=("long_job",))
    worker.start()
    try:
        assert holding.wait(HOLD)
        waited = reg.dispatch_tool("quick_job")
        awaited = asyncio.run(reg.adispatch_tool("quick_job"))
    finally:
        release.set()
        worker.join()
    for result in (waited, awaited):
        assert (result.outcome, result.error_kind) == ("not_started", "timeout")
        assert result.content == (
            "Tool 'quick_job' was not run: it waited 0.05 s for the resource it uses, "
            "which another call held."
        )
    assert reg.dispatch_tool("quick_job").content == "quick"  # free again


def test_a_call_past_its_time_limit_keeps_the_lock_until_it_really_stops() -> None:
    """A sync tool past its limit runs on in its thread: the next call on its resource
    waits for it, never runs beside it."""
    reg = ToolRegistry()
    release = threading.Event()
    state = {"slow running": False}
    seen: list[bool] = []

    @reg.register_tool(lock="disk", timeout=0.05)
    def slow() -> str:
        """Cannot hear a cancel; runs past its limit."""
        state["slow running"] = True
        release.wait(HOLD)
        state["slow running"] = False
        return "done"

    @reg.register_tool(lock="disk")
    def after() -> str:
        """Uses the disk too."""
        seen.append(state["slow running"])
        return "after"

    first = reg.dispatch_tool("slow")
    assert (first.error_kind, first.outcome) == ("timeout", "interrupted")
    assert state["slow running"]
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(reg.dispatch_tool("after")))
    worker.start()
    worker.join(0.1)  # it waits for the lock (a broken lock would have run by now)
    assert seen == []
    release.set()
    worker.join(HOLD)
    assert seen == [False]
    assert results[0].content == "after"


def test_a_cancelled_waiter_gives_up_its_place() -> None:
    reg = ToolRegistry()
    release = threading.Event()
    holding = threading.Event()

    @reg.register_tool(lock="x")
    def hold() -> str:
        """Holds x."""
        holding.set()
        release.wait(HOLD)
        return "held"

    @reg.register_tool(lock="x")
    async def wait_for_x() -> str:
        """Waits for x."""
        return "got x"

    worker = threading.Thread(target=reg.dispatch_tool, args=("hold",))
    worker.start()

    async def main() -> str:
        task = asyncio.ensure_future(reg.adispatch_tool("wait_for_x"))
        await asyncio.sleep(0.05)  # it is waiting for the lock
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await asyncio.get_running_loop().run_in_executor(None, worker.join)
        return (await reg.adispatch_tool("wait_for_x")).content

    assert holding.wait(HOLD)
    assert asyncio.run(main()) == "got x"
    assert len(reg.dispatcher.locks) == 0


@pytest.mark.parametrize(
    ("lock", "problem"),
    [(5, "lock=5 must be"), ("", "lock='' must be"), (b"x", "lock=b'x' must be")],
)
def test_a_lock_that_is_neither_a_name_nor_a_function_is_refused(lock: Any, problem: str) -> None:
    reg = ToolRegistry()
    with pytest.raises(ToolDefinitionError, match=problem) as caught:

        @reg.register_tool(lock=lock)
        def f() -> None:
            """x"""

    assert "lock='ledger'" in str(caught.value)  # the fix


def test_dispatch_many_takes_its_own_concurrency() -> None:
    reg = ToolRegistry(max_concurrency=8)
    gauge = Gauge()

    @reg.register_tool
    def work(i: int) -> int:
        """Works a moment."""
        gauge.enter("all")
        time.sleep(WIDEN)
        gauge.leave("all")
        return i

    assert [
        r.value
        for r in reg.dispatch_many([("work", {"i": i}) for i in range(4)], max_concurrency=1)
    ] == [0, 1, 2, 3]
    assert gauge.peak["all"] == 1
    asyncio.run(reg.adispatch_many([("work", {"i": i}) for i in range(4)], max_concurrency=1))
    assert gauge.peak["all"] == 1
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_concurrency"):
            reg.dispatch_many([("work", {"i": 1})], max_concurrency=bad)
