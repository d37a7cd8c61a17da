"""Eager start: calls that run while the model's answer still streams.

A driver reading a stream asks its assembler for the calls complete so far
(`Assembler.completed`), drives the loop's `ModelStep.early` for each (its prechecks: the
`before_tool_call` hook, the repeat guard, the conversation's own answers) and starts the
ones it returns here. When the loop's `ToolsStep` asks for a call, `claim` gives the run
that answers it (matched by id: every call of an answer has its own, see `CallIds`; each run
once, whatever arguments the whole answer ends with: the loop tells the model which ran),
so nothing runs twice; `discard` drops the runs no round asked for, and all of them when the
stream fails (`cut_short` names the ones that had started in the error):

- `EarlyRuns` (sync driver): a bounded thread pool; a call not started yet is cancelled,
  one running is abandoned (it finishes in its thread, its result is discarded);
- `AsyncEarlyRuns` (async driver): tasks, at most `workers` at a time; discarding cancels
  them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import ConversationError
from ..result import ToolCall, ToolResult

if TYPE_CHECKING:  # imported when used: `import toolreg` stays light
    import asyncio
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["AsyncEarlyRuns", "EarlyRuns", "adrive_checks", "cut_short", "drive_checks"]

H = TypeVar("H")


class _Runs(Generic[H]):
    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.runs: list[tuple[ToolCall, H]] = []

    def claim(self, call: ToolCall) -> H | None:
        """The run started for the call with this id (given out once), or None."""
        if self.runs and call.call_id:
            for i, (started, handle) in enumerate(self.runs):
                if started.call_id == call.call_id:
                    del self.runs[i]
                    return handle
        return None

    def fates(self) -> list[tuple[ToolCall, str]]:
        """The calls that had started, each with what became of it; the others will not
        start (the driver's `discard` follows)."""
        raise NotImplementedError


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

    def fates(self) -> list[tuple[ToolCall, str]]:
        return [
            (call, "finished" if future.done() else "left to finish")
            for call, future in self.runs
            if not future.cancel()  # cancelled: it never started
        ]

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
        self.begun: set[str | None] = set()  # the ids of the calls whose run began

    def start(
        self, call: ToolCall, run: Callable[[], Awaitable[ToolResult | None]]
    ) -> asyncio.Task[ToolResult]:
        """Start `run` for `call` as a task (what `claim` gives the round)."""
        import asyncio  # loaded by the running event loop already

        if self.gate is None:
            self.gate = asyncio.Semaphore(self.workers)
        gate, begun = self.gate, self.begun

        async def gated() -> ToolResult:
            async with gate:
                begun.add(call.call_id)
                return await run()  # type: ignore[return-value]  # None: a stopped turn's

        task = asyncio.ensure_future(gated())
        self.runs.append((call, task))
        return task

    def fates(self) -> list[tuple[ToolCall, str]]:
        return [
            (call, "finished" if task.done() and not task.cancelled() else "cancelled")
            for call, task in self.runs
            if call.call_id in self.begun
        ]

    async def discard(self) -> None:
        """Cancel the runs no round took, and wait until they have stopped."""
        import asyncio

        tasks = [task for _, task in self.runs]
        self.runs.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def cut_short(error: BaseException, runs: _Runs[Any]) -> BaseException:
    """The failure of a model call (a stream cut short, an endpoint error): a
    `ConversationError` names the calls that had started while the answer streamed (and
    lists them in `started`): they ran, or still run, and are not run again in this turn.
    Any other failure, or one that started nothing, as it is."""
    if not isinstance(error, ConversationError) or not runs.runs:
        return error
    fates = runs.fates()
    if not fates:
        return error
    shown = ", ".join(f"{c.name} ({c.call_id}): {fate}" for c, fate in fates)
    count = "1 call" if len(fates) == 1 else f"{len(fates)} calls"
    text = f"{error.args[0] if error.args else error}; {count} had started while the answer "
    text += f"streamed and will not run again in this turn: {shown}"
    error.args = (text,)
    error.started = tuple(c for c, _ in fates)
    return error


def drive_checks(checks: Generator[Any, Any, ToolCall | None]) -> ToolCall | None:
    """Drive the loop's `early` generator on the sync driver (each hook or guardrail step
    `run()`): the call to start, or None."""
    try:
        step = next(checks)
        while True:
            step = checks.send(step.run())
    except StopIteration as done:
        found: ToolCall | None = done.value
        return found


async def adrive_checks(checks: Generator[Any, Any, ToolCall | None]) -> ToolCall | None:
    """`drive_checks` on the async driver: an async hook or guardrail is awaited."""
    try:
        step = next(checks)
        while True:
            step = checks.send(await step.arun())
    except StopIteration as done:
        found: ToolCall | None = done.value
        return found
