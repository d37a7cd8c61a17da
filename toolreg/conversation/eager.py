"""Eager start: calls that run while the model's answer still streams.

A driver reading a stream asks its assembler for the calls complete so far
(`Assembler.completed`), drives the loop's `ModelStep.early` for each (its prechecks: the
`before_tool_call` hook, the repeat guard, the conversation's own answers) and starts the
ones it returns here. When the loop's `ToolsStep` asks for a call, `claim` gives the run
that answers it (matched by name, arguments and id, each run once), so nothing runs twice;
`discard` drops the runs no round asked for, and all of them when the stream fails:

- `EarlyRuns` (sync driver): a bounded thread pool; a call not started yet is cancelled,
  one running is abandoned (it finishes in its thread, its result is discarded);
- `AsyncEarlyRuns` (async driver): tasks, at most `workers` at a time; discarding cancels
  them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..result import ToolCall, ToolResult

if TYPE_CHECKING:  # imported when used: `import toolreg` stays light
    import asyncio
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["AsyncEarlyRuns", "EarlyRuns"]

H = TypeVar("H")


class _Runs(Generic[H]):
    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.runs: list[tuple[ToolCall, H]] = []

    def claim(self, call: ToolCall) -> H | None:
        """The run started for this call (given out once), or None."""
        for i, (started, handle) in enumerate(self.runs):
            if started == call:
                del self.runs[i]
                return handle
        return None


class EarlyRuns(_Runs["Future[ToolResult]"]):
    """The sync driver's early runs, in threads (at most `workers`, made when needed)."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.pool: ThreadPoolExecutor | None = None

    def start(self, call: ToolCall, run: Callable[[], ToolResult | None]) -> Future[ToolResult]:
        """Start `run` for `call`; its future (what `claim` gives the round)."""
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(self.workers, thread_name_prefix="toolreg-eager")
        context = contextvars.copy_context()  # the caller's, as dispatch_many gives
        future: Future[ToolResult] = self.pool.submit(context.run, run)  # type: ignore[arg-type]
        self.runs.append((call, future))
        return future

    def discard(self) -> None:
        """Cancel the runs no round took that have not started; abandon the others."""
        for _, future in self.runs:
            future.cancel()
        self.runs.clear()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


class AsyncEarlyRuns(_Runs["asyncio.Task[ToolResult]"]):
    """The async driver's early runs, as tasks (at most `workers` run at a time)."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.gate: asyncio.Semaphore | None = None

    def start(
        self, call: ToolCall, run: Callable[[], Awaitable[ToolResult | None]]
    ) -> asyncio.Task[ToolResult]:
        """Start `run` for `call` as a task (what `claim` gives the round)."""
        import asyncio  # loaded by the running event loop already

        if self.gate is None:
            self.gate = asyncio.Semaphore(self.workers)
        gate = self.gate

        async def gated() -> ToolResult:
            async with gate:
                return await run()  # type: ignore[return-value]  # None: a stopped turn's

        task = asyncio.ensure_future(gated())
        self.runs.append((call, task))
        return task

    async def discard(self) -> None:
        """Cancel the runs no round took, and wait until they have stopped."""
        import asyncio

        tasks = [task for _, task in self.runs]
        self.runs.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def drive_checks(checks: Any, run_hook: Callable[[Any], Any]) -> ToolCall | None:
    """Drive the loop's `early` generator with a sync hook runner: the call, or None."""
    try:
        step = next(checks)
        while True:
            step = checks.send(run_hook(step))
    except StopIteration as done:
        found: ToolCall | None = done.value
        return found
