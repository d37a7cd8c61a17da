"""Running a tool function: sync or async, with or without a time limit.

This is the only module that calls user tool code. Exceptions from the tool propagate to
dispatch unchanged; a time limit that runs out raises `ToolTimeoutError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from .errors import ToolTimeoutError
from .tool import Tool

__all__ = ["acall", "call", "run_coroutine"]

T = TypeVar("T")


def _timeout_error(tool: Tool, timeout: float) -> ToolTimeoutError:
    return ToolTimeoutError(
        f"Tool '{tool.name}' timed out after {timeout:g} s.", tool_name=tool.name, timeout=timeout
    )


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even under a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return _in_thread(lambda: asyncio.run(coro), None)


class _Deadline(Exception):
    """The time limit ran out (distinct from a TimeoutError raised by the tool itself)."""


def _in_thread(fn: Callable[[], T], timeout: float | None) -> T:
    """Run `fn` in a fresh daemon thread; raise `_Deadline` if it is not done in time."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed over to the caller, who re-raises it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="toolreg-call", daemon=True).start()
    if not done.wait(timeout):
        raise _Deadline
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def call(tool: Tool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call the tool from sync code, enforcing `tool.timeout`."""
    fn, timeout = tool.function, tool.timeout
    if tool.is_async:
        return run_coroutine(_with_deadline(tool, fn(*args, **kwargs)))
    if timeout is None:
        return fn(*args, **kwargs)
    try:
        return _in_thread(lambda: fn(*args, **kwargs), timeout)
    except _Deadline:
        raise _timeout_error(tool, timeout) from None


async def acall(tool: Tool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call the tool from async code; a sync tool runs in a worker thread."""
    fn = tool.function
    if tool.is_async:
        return await _with_deadline(tool, fn(*args, **kwargs))
    return await _with_deadline(tool, asyncio.to_thread(fn, *args, **kwargs))


async def _with_deadline(tool: Tool, awaitable: Awaitable[T]) -> T:
    if tool.timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=tool.timeout)
    if not done:
        task.cancel()
        raise _timeout_error(tool, tool.timeout)
    return task.result()
