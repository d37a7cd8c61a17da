"""Confirmation of destructive tools: ask the `confirm` callback about the exact call.

Anything but `True` from the callback (or an exception in it) denies the call; no callback
at all denies it too. Calls dispatched concurrently ask one at a time.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Union

from ._calling import run_coroutine
from .errors import ToolDeniedError
from .tool import Tool

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
    if confirm is None:
        raise _denied(tool, "it needs the user's confirmation and none was asked for")
    try:
        answer = confirm(tool, dict(args))
        if inspect.isawaitable(answer):
            answer = run_coroutine(_awaited(answer))
    except Exception as exc:
        raise _denied(tool, "the confirmation step failed") from exc
    if answer is not True:
        raise _denied(tool, "the user declined")


async def async_confirm(confirm: ConfirmCallback | None, tool: Tool, args: dict[str, Any]) -> None:
    if confirm is None:
        raise _denied(tool, "it needs the user's confirmation and none was asked for")
    try:
        answer = confirm(tool, dict(args))
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        raise _denied(tool, "the confirmation step failed") from exc
    if answer is not True:
        raise _denied(tool, "the user declined")


async def _awaited(awaitable: Awaitable[bool]) -> bool:
    return await awaitable


def _denied(tool: Tool, why: str) -> ToolDeniedError:
    return ToolDeniedError(
        f"Tool '{tool.name}' was not run: {why}. Do not retry it unless the user asks.",
        tool_name=tool.name,
    )
