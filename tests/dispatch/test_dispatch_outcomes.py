"""How a dispatched call ended (issue 32, section 3): `ToolResult.outcome` is "not_started",
"interrupted" or "completed"; a tool stopped at its time limit is asked to stop
(`ctx.cancelled`, or its task cancelled) and may say what it did (`ToolCancelled`)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolreg import ToolCancelled, ToolContext, ToolRegistry

HOLD = 30.0  # seconds a tool waits at most for what a test does (it never takes that long)
LIMIT = 0.05  # a time limit that has run out by the time a held tool is looked at


def registry(log: list[str]) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @reg.register_tool
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    @reg.register_tool(timeout=LIMIT)
    def transfer(amount: int, ctx: ToolContext[Any]) -> str:
        """Moves money in two steps; stops between them when asked."""
        log.append("debited")
        if ctx.cancelled.wait(HOLD):
            log.append("stopped")
            raise ToolCancelled(f"Stopped after the debit of {amount}: the credit was not made.")
        return "moved"

    @reg.register_tool(timeout=LIMIT)
    async def atransfer(amount: int) -> str:
        """The same, async: cancelled as a task."""
        log.append("debited")
        try:
            await asyncio.sleep(HOLD)
        except asyncio.CancelledError:
            log.append("stopped")
            raise ToolCancelled(f"Stopped after the debit of {amount}.") from None
        return "moved"

    release = threading.Event()
    reg.release = release  # type: ignore[attr-defined]

    @reg.register_tool(timeout=LIMIT)
    def deaf(amount: int) -> str:
        """Cannot hear a cancel signal (no ToolContext): runs on in its thread."""
        release.wait(HOLD)
        return "late"

    @reg.register_tool(timeout=LIMIT)
    async def stubborn() -> str:
        """Ignores its cancellation for a moment, then gives up some other way."""
        try:
            await asyncio.sleep(HOLD)
        except asyncio.CancelledError:
            raise RuntimeError("could not stop cleanly") from None
        return "never"

    return reg


def test_outcomes_of_dispatch() -> None:
    reg = registry([])
    assert reg.dispatch_tool("add", {"a": 1, "b": 2}).outcome == "completed"
    assert reg.dispatch_tool("boom").outcome == "completed"  # it ran, and raised
    assert reg.dispatch_tool("add", {"a": "x"}).outcome == "not_started"
    assert reg.dispatch_tool("nope").outcome == "not_started"


@pytest.mark.parametrize("tool", ["transfer", "atransfer"])
def test_a_tool_stopped_at_its_limit_says_what_it_did(tool: str) -> None:
    log: list[str] = []
    reg = registry(log)
    results = [
        reg.dispatch_tool(tool, {"amount": 5}),
        asyncio.run(reg.adispatch_tool(tool, {"amount": 5})),
    ]
    for result in results:
        assert (result.ok, result.outcome, result.error_kind) == (
            False,
            "interrupted",
            "interrupted",
        )
        assert result.content.startswith("Stopped after the debit of 5")
    assert log == ["debited", "stopped", "debited", "stopped"]


def test_a_tool_that_cannot_hear_is_answered_at_its_limit_as_interrupted() -> None:
    reg = registry([])
    try:
        result = reg.dispatch_tool("deaf", {"amount": 5})
        late = asyncio.run(reg.adispatch_tool("deaf", {"amount": 5}))
    finally:
        reg.release.set()  # type: ignore[attr-defined]
    for r in (result, late):
        assert (r.error_kind, r.outcome) == ("timeout", "interrupted")
        assert r.content == (
            "Tool 'deaf' timed out after 0.05 s: interrupted while running, so it may have had "
            "effects."
        )


def test_a_tool_that_fails_to_stop_cleanly_is_a_timeout_still() -> None:
    reg = registry([])
    for result in (
        reg.dispatch_tool("stubborn"),
        asyncio.run(reg.adispatch_tool("stubborn")),
    ):
        assert (result.error_kind, result.outcome) == ("timeout", "interrupted")


def test_cancelling_async_dispatch_cancels_the_tool_which_may_answer_it() -> None:
    log: list[str] = []
    reg = ToolRegistry()
    began = asyncio.Event()

    @reg.register_tool
    async def upload(name: str) -> str:
        """Uploads; says how far it got when cancelled."""
        began.set()
        try:
            await asyncio.sleep(HOLD)
        except asyncio.CancelledError:
            log.append("cancelled")
            raise ToolCancelled(f"Upload of {name} cancelled before any byte was sent.") from None
        return "uploaded"

    async def main() -> Any:
        task = asyncio.ensure_future(reg.adispatch_tool("upload", {"name": "a.txt"}))
        await began.wait()
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert (result.outcome, result.error_kind) == ("interrupted", "interrupted")
    assert result.content == "Upload of a.txt cancelled before any byte was sent."
    assert log == ["cancelled"]


def test_a_sync_tool_in_async_dispatch_hears_the_cancel() -> None:
    reg = ToolRegistry()
    began = threading.Event()

    @reg.register_tool
    def copy(name: str, ctx: ToolContext[Any]) -> str:
        """Copies in chunks; stops between two when asked."""
        began.set()
        if ctx.cancelled.wait(HOLD):
            raise ToolCancelled(f"Copy of {name} stopped after the first chunk.")
        return "copied"

    async def main() -> Any:
        task = asyncio.ensure_future(reg.adispatch_tool("copy", {"name": "b"}))
        while not began.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        return await task

    result = asyncio.run(main())
    assert (result.outcome, result.content) == (
        "interrupted",
        "Copy of b stopped after the first chunk.",
    )


def test_a_cancelled_dispatch_whose_tool_does_not_answer_is_cancelled() -> None:
    reg = ToolRegistry()
    began = asyncio.Event()

    @reg.register_tool
    async def wait() -> str:
        """Lets its cancellation through."""
        began.set()
        await asyncio.sleep(HOLD)
        return "never"

    async def main() -> None:
        task = asyncio.ensure_future(reg.adispatch_tool("wait"))
        await began.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
