"""Confirmation of destructive tools: ask the `confirm` callback about the exact call.

Anything but `True` from the callback (or an exception in it) denies the call; no callback
at all denies it too. Calls dispatched concurrently ask one at a time. The callback gets a
deep copy of the validated arguments: it cannot change the call.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Union

from ..errors import ToolDeniedError
from ..tool import Tool
from .calling import ask, run_coroutine

__all__ = [
    "ConfirmCallback",
    "async_confirm",
    "one_question",
    "one_question_async",
    "sync_confirm",
]

ConfirmCallback = Callable[[Tool, dict[str, Any]], Union[bool, Awaitable[bool]]]


# Confirmations ask a person. Calls dispatched concurrently must not ask at the same time:
# interleaved prompts let a "yes" approve a different call from the one the user read. A
# confirm callback may itself dispatch (also dispatch_many, whose threads and tasks copy its
# context): inside a question, `_ASKING` is set and further questions do not wait for it.
_ASKING: contextvars.ContextVar[bool] = contextvars.ContextVar("toolreg_asking", default=False)
_THREAD_GATE = threading.Lock()
_LOOP_GATES: weakref.WeakKeyDictionary[Any, _Gate] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def one_question() -> Iterator[None]:
    """Sync dispatch: one question at a time, across threads."""
    if _ASKING.get():
        yield
        return
    with _THREAD_GATE:
        token = _ASKING.set(True)
        try:
            yield
        finally:
            _ASKING.reset(token)


@contextlib.asynccontextmanager
async def one_question_async() -> AsyncIterator[None]:
    """Async dispatch: one question at a time, per event loop."""
    if _ASKING.get():
        yield
        return
    import asyncio  # lazy: already loaded by the running event loop

    loop = asyncio.get_running_loop()
    gate = _LOOP_GATES.get(loop)
    if gate is None:
        gate = _LOOP_GATES[loop] = _Gate()
    await gate.acquire()
    token = _ASKING.set(True)
    try:
        yield
    finally:
        _ASKING.reset(token)
        gate.release()


class _Gate:
    """A first-come, first-served async lock that keeps no reference to its event loop once
    nobody waits (asyncio.Lock remembers its loop, which would keep a closed loop alive
    through the table of gates)."""

    __slots__ = ("_busy", "_waiting")

    def __init__(self) -> None:
        self._busy = False
        self._waiting: collections.deque[Any] = collections.deque()

    async def acquire(self) -> None:
        if not self._busy:
            self._busy = True
            return
        import asyncio

        turn = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn  # resolved by release(): the gate is ours
        except BaseException:
            if turn.done() and not turn.cancelled():
                self.release()  # handed over, then cancelled: pass it on
            elif turn in self._waiting:
                self._waiting.remove(turn)
            raise

    def release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the next waiter holds it now
                return
        self._busy = False


def sync_confirm(confirm: ConfirmCallback | None, tool: Tool, args: dict[str, Any]) -> None:
    """Ask `confirm` about this exact call; anything but True denies it."""
    with _asking(tool):
        answer = _ask(confirm, tool, args)
        if inspect.isawaitable(answer):
            answer = run_coroutine(_awaited(answer))
    _judge(tool, answer)


async def async_confirm(confirm: ConfirmCallback | None, tool: Tool, args: dict[str, Any]) -> None:
    """`sync_confirm` for async dispatch: an async callback is awaited in the caller's loop."""
    with _asking(tool):
        answer = _ask(confirm, tool, args)
        if inspect.isawaitable(answer):
            answer = await answer
    _judge(tool, answer)


def _ask(confirm: ConfirmCallback | None, tool: Tool, args: dict[str, Any]) -> Any:
    if confirm is None:
        raise _denied(tool, "it needs the user's confirmation and none was asked for")
    return ask(confirm, tool, args)


@contextlib.contextmanager
def _asking(tool: Tool) -> Iterator[None]:
    """A callback that raises denies the call (the exception is kept as the cause)."""
    try:
        yield
    except ToolDeniedError:
        raise
    except Exception as exc:
        raise _denied(tool, "the confirmation step failed") from exc


def _judge(tool: Tool, answer: Any) -> None:
    if answer is not True:
        raise _denied(tool, "the user declined")


async def _awaited(awaitable: Awaitable[bool]) -> bool:
    return await awaitable


def _denied(tool: Tool, why: str) -> ToolDeniedError:
    return ToolDeniedError(
        f"Tool '{tool.name}' was not run: {why}. Do not retry it unless the user asks.",
        tool_name=tool.name,
    )
