"""A turn's tool runs, as the drivers start them: at most `max_concurrency` at once, each
telling whether it began and how it ended, and all of them asked to stop together.

Every run of a turn (a round's, or one started early while the answer streams) passes its
turn's gate (`TurnRuns` for the sync driver: a semaphore; `AsyncTurnRuns`: an asyncio one)
and records itself in a `RunRecord`: whether it began (it had passed the gate and gone to
dispatch) and its result. When a turn is stopped (an exception, a reader that closed the
stream, a cancelled task), `stop()` sets every running call's cancel signal (the turn's
`CancelScope`: an async tool's task is cancelled, a sync tool's `ToolContext.cancelled`
set), a run that has not passed the gate yet never begins, and the driver gives the running
ones `CANCEL_GRACE` seconds to end; then the loop answers each call with what its record
says (`RoundProgress`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..params import CancelScope, cancel_scope
from ..result import ToolResult
from .loop import RoundProgress

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncTurnRuns", "RunRecord", "TurnRuns", "progress_of"]


@dataclass(slots=True)
class RunRecord:
    """One call's run: whether it began (dispatch took it; a run whose dispatch raised an
    application error, which it does only before the tool runs, did not), and its result
    once it has one."""

    started: bool = False
    result: ToolResult | None = None


def progress_of(records: list[RunRecord], progress: RoundProgress) -> None:
    """What the records of a stopped round's calls know, for the loop."""
    for index, record in enumerate(records):
        if record.started:
            progress.started.add(index)
        if record.result is not None:
            progress.results[index] = record.result


_GATES = threading.Lock()  # guards every sync gate's count (a few operations per run)


class TurnRuns:
    """The sync driver's runs of one turn: a gate of `limit` runs at once and one cancel
    scope. The records of runs started early are kept by their future until a round
    claims them. Made per turn: the gate's condition only when a run has to wait."""

    __slots__ = ("_waiting", "early", "limit", "running", "scope")

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self._waiting: threading.Condition | None = None
        self.scope = CancelScope()
        self.early: dict[Any, RunRecord] = {}

    def wrap(
        self, run: Callable[[], ToolResult], record: RunRecord
    ) -> Callable[[], ToolResult | None]:
        """`run` behind the gate, recorded; None when the turn stopped before it began."""
        return functools.partial(self.run, run, record)

    def run(self, run: Callable[[], ToolResult], record: RunRecord) -> ToolResult | None:
        """`wrap`'s run, now (in the caller's thread)."""
        self._enter()
        try:
            if self.scope.cancelled:
                return None
            record.started = True
            token = cancel_scope.set(self.scope)  # the caller's own context, at times
            try:
                result = run()
            except Exception:  # dispatch refused it before the tool (no context...)
                record.started = False
                raise
            finally:
                cancel_scope.reset(token)
            record.result = result
            return result
        finally:
            self._leave()

    def run_here(self, run: Callable[[], ToolResult], record: RunRecord) -> ToolResult | None:
        """A run in the driver's own thread, which starts every run of the turn: while no
        other runs (none started early is still going) nothing can start beside it, so it
        passes no gate and needs no cancel scope (an interrupt reaches it directly)."""
        if self.running:  # read unlocked: others only lower it, and a stale count gates
            return self.run(run, record)
        record.started = True
        try:
            result = run()
        except Exception:  # dispatch refused it before the tool (no context...)
            record.started = False
            raise
        record.result = result
        return result

    def _enter(self) -> None:
        with _GATES:
            if self.running >= self.limit:
                if self._waiting is None:
                    self._waiting = threading.Condition(_GATES)
                while self.running >= self.limit:
                    self._waiting.wait()
            self.running += 1

    def _leave(self) -> None:
        with _GATES:
            self.running -= 1
            if self._waiting is not None:
                self._waiting.notify()

    def stop(self) -> None:
        """Ask every running call to stop; a call not begun yet never begins."""
        self.scope.cancel()


class AsyncTurnRuns:
    """`TurnRuns` for the async driver (its gate is made on the running event loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.gate: asyncio.Semaphore | None = None
        self.scope = CancelScope()
        self.early: dict[Any, RunRecord] = {}

    def wrap(
        self, run: Callable[[], Awaitable[ToolResult]], record: RunRecord
    ) -> Callable[[], Awaitable[ToolResult | None]]:
        async def gated() -> ToolResult | None:
            if self.gate is None:
                import asyncio  # loaded by the running event loop already

                self.gate = asyncio.Semaphore(self.limit)
            async with self.gate:
                if self.scope.cancelled:
                    return None
                record.started = True
                token = cancel_scope.set(self.scope)  # the caller's own context, at times
                try:
                    result = await run()
                except Exception:  # dispatch refused it before the tool (no context...)
                    record.started = False
                    raise
                finally:
                    cancel_scope.reset(token)
                record.result = result
                return result

        return gated

    def stop(self) -> None:
        self.scope.cancel()
