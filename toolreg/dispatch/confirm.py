"""Confirmation of destructive tools: ask the `confirm` callback about the exact call.

Anything but `True` from the callback (or an exception in it) denies the call; no callback
at all denies it too. Calls dispatched concurrently ask one at a time.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Union

from ..errors import ToolDeniedError
from ..tool import Tool
from .calling import ask, run_coroutine

__all__ = ["CONFIRM_LOCK", "ConfirmCallback", "async_confirm", "loop_confirm_lock", "sync_confirm"]

ConfirmCallback = Callable[[Tool, dict[str, Any]], Union[bool, Awaitable[bool]]]


# Confirmations ask a person. Calls dispatched concurrently must not ask at the same time:
# interleaved prompts let a "yes" approve a different call from the one the user read.
CONFIRM_LOCK = threading.RLock()  # re-entrant: a callback may itself dispatch


_LOOP_LOCKS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def loop_confirm_lock() -> Any:
    import asyncio  # lazy: already loaded by the running event loop

    loop = asyncio.get_running_loop()
    lock = _LOOP_LOCKS.get(loop)
    if lock is None:
        lock = _LOOP_LOCKS[loop] = asyncio.Lock()
    return lock


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
