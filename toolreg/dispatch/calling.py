"""The one place toolreg calls code it did not write, with one policy per call site.

| call site                      | function here    | what an exception means                      |
|--------------------------------|------------------|----------------------------------------------|
| the tool function              | `call`, `acall`  | the tool failed: propagated unchanged; the   |
|                                |                  | dispatcher turns it into `ToolExecutionError`|
|                                |                  | (a `ToolCallError` raised inside keeps its   |
|                                |                  | kind)                                        |
| a converter (`__post_init__`,  | `convert`        | the arguments are invalid: `ConversionError` |
| a pydantic validator, a class) |                  | (its text hidden by `errors="mask"`)         |
| `confirm=` callback            | `ask`            | the call is denied (`ToolDeniedError`, the   |
|                                |                  | exception chained)                           |
| `result_filter=`               | `filter_result`  | the tool failed (`ToolExecutionError`)       |
| a `default_factory`            | `fill_default`   | the tool failed (`ToolExecutionError`)       |
| a reshaped tool's value from   | `context_value`  | the call is not made (`ToolExecutionError`,  |
| the context (`Arg(from_context`|                  | not naming the hidden argument)              |
| `=...)`)                       |                  |                                              |
| a conversation hook, `on_text`,| `call_hook`;     | a bug in the application: propagated; the    |
| `on_event`                     | the drivers':    | turn ends and the history stays as it was.   |
|                                | `run_hook`,      | An awaitable answer: awaited by the async    |
|                                | `arun_hook`      | driver, a `UsageError` on the sync one       |
| a search `ranker=`             | `rank`           | a bug in the application: propagated (the    |
|                                |                  | search raises; nothing is half-ranked)       |
| a conversation's guardrail     | `guard`,         | the guardrail stops the turn: raised as      |
|                                | `aguard`; the    | `GuardrailTripped` (the exception chained).  |
|                                | drivers':        | An awaitable answer: awaited by the async    |
|                                | `run_guardrail`, | driver, a `UsageError` on the sync one       |
|                                | `arun_guardrail` |                                              |
| a conversation's state store   | `call_store`,    | propagated; the conversation's flow names    |
| (`state_store=`: load, save,   | `acall_store`    | the store in a `StateStoreError` (the        |
| claim)                         |                  | exception chained, its text unshown)         |
| an MCP server's `context=`     | `make_context`   | the call is refused (`ToolDeniedError`): a   |
| factory (deps from a request)  |                  | `ToolError`'s message as written, else a     |
|                                |                  | fixed text (the exception chained, unshown)  |
| a credential provider          | `credential`,    | the call fails: propagated unchanged, as the |
| (`toolreg.sources.Credentials`)| `acredential`    | tool's own exception (redacted by `errors=`) |
| a `lock=` function (the key of | `lock_key`       | the call is not run (`ToolExecutionError`,   |
| the resource a call uses)      |                  | the exception chained)                       |
| a mount's OAuth callbacks      | `oauth_callback` | the authorization fails: propagated to       |
| (`authorize=`, `assertion=` of |                  | `toolreg.mcp.oauth`, which tells the call (or|
| `toolreg.mcp.OAuth`)           |                  | the mount) so, the exception chained         |

A sync tool that must not block the caller (one with a time limit, or any sync tool under
async dispatch) runs in a thread of its own, with a copy of the caller's `contextvars`: an
idle thread of an earlier call when there is one, else a new thread — never a queue. Not
asyncio's default executor: that pool has `min(32, cpus + 4)` threads, so on a small
machine a few slow tools would queue behind each other, and a timed-out tool that keeps
running would hold a slot the application needs. Reusing an idle thread saves starting one
(~150-300 µs of CPU, thirty dispatches' worth; it dominated an MCP server's cost per call);
a thread idle for `_IDLE_SECONDS` ends. A time limit that runs out raises `ToolTimeoutError`,
which says the call was interrupted while running (it may have had effects). A caller that
bounds its threads hears when each one ends through `THREAD_WATCH`: a sync tool's thread
runs on past its time limit.

A tool that is asked to stop (its time limit, or its conversation turn stopped) has its
`ToolContext.cancelled` set and, when async, its task cancelled; it then has `CANCEL_GRACE`
seconds to end, and what it ends with in that time (its own words in a `ToolCancelled`, or
a result after all) answers the call. A call holding a resource lock (`lock=`) keeps it
until the tool has really stopped, also when it runs on in its thread past its time limit.

A sync function that returns an awaitable (a plain wrapper around an async function) has
that awaitable awaited, under the same time limit.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import inspect
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import (
    GuardrailTripped,
    ToolCancelled,
    ToolDeniedError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
    UsageError,
    exception_text,
)
from ..params import CancelSignal
from ..tool import Tool
from ..types import ConversionError, Converter

if TYPE_CHECKING:  # loaded only when needed: asyncio (~20 ms) when something is async,
    import asyncio  # queue (~2 ms) when a call needs a thread
    import queue

__all__ = [
    "CANCEL_GRACE",
    "THREAD_WATCH",
    "Lease",
    "acall",
    "acall_store",
    "acredential",
    "aguard",
    "arun_guardrail",
    "arun_hook",
    "ask",
    "awaitable",
    "call",
    "call_hook",
    "call_store",
    "context_value",
    "convert",
    "credential",
    "describe",
    "fill_default",
    "filter_result",
    "guard",
    "lock_key",
    "make_context",
    "oauth_callback",
    "rank",
    "run_coroutine",
    "run_guardrail",
    "run_hook",
]

T = TypeVar("T")
_PLAIN = frozenset({str, int, float, bool, dict, list, tuple, type(None)})  # never awaitable


def _timeout_error(tool: Tool, timeout: float) -> ToolTimeoutError:
    return ToolTimeoutError(
        f"Tool '{tool.name}' timed out after {timeout:g} s: interrupted while running, so it "
        "may have had effects.",
        tool_name=tool.name,
        timeout=timeout,
    )


THREAD_WATCH: contextvars.ContextVar[Callable[[], Callable[[], None]] | None] = (
    contextvars.ContextVar("toolreg_thread_watch", default=None)
)
"""Set by a caller that bounds the threads of the calls it makes (`toolreg serve`'s
`max_threads`): called when a sync tool's call starts its thread under async dispatch, in
that caller's context; the function it returns is called from the thread once the tool has
returned, also long after its time limit ended the call (Python cannot stop a thread)."""


def run_coroutine(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even under a running event loop."""
    import asyncio  # lazy: see the module's imports

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:  # under a running loop: in a thread of its own
        return _in_thread(lambda: asyncio.run(coro), None)
    # No loop here. Run outside the `except`, so that the tool's own exceptions do not carry
    # "no running event loop" as their context.
    return asyncio.run(coro)


_GRACE = 0.05  # seconds for the loop inside to report its own timeout first


class _Deadline(Exception):
    """The time limit ran out (distinct from a TimeoutError raised by the tool itself)."""


_IDLE_SECONDS = 30.0


_Work = Callable[[], Callable[[], None]]
"""A call to run in a thread: it returns how to hand its outcome over (neither may raise)."""


class _Threads:
    """Threads for calls that must not block their caller. An idle thread takes the next
    call; when none is idle a new one starts, so no call ever waits for another (a slow or
    stuck tool only holds its own thread). A thread is idle again before it hands the
    outcome over, so the caller's next call finds it free. Forgotten in a forked child,
    whose copy of the idle list names threads that do not exist there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Work]] = []
        self._pid = os.getpid()

    def run(self, work: _Work) -> None:
        """Run `work` in an idle or a new thread."""
        with self._lock:
            if self._pid != os.getpid():
                self._idle, self._pid = [], os.getpid()
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            import queue  # lazy: ~2 ms of import, for the first call that needs a thread

            inbox = queue.SimpleQueue()
            name = "toolreg-call"
            threading.Thread(target=self._serve, args=(inbox,), name=name, daemon=True).start()
        inbox.put(work)

    def _serve(self, inbox: queue.SimpleQueue[_Work]) -> None:
        import queue

        while True:
            try:
                work = inbox.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # still idle: end; else a call is on its way
                        self._idle.remove(inbox)
                        return
                continue
            hand_over = work()
            del work  # the call's frames and arguments go now, not at the next call
            with self._lock:
                self._idle.append(inbox)
            hand_over()
            del hand_over


_THREADS = _Threads()


def _start(work: _Work) -> None:
    """Run `work` in a thread, in a copy of the caller's context. A failure's traceback holds
    every frame of that thread's stack above it (each frame holds its caller, `f_back`): no
    frame between the thread's loop and the tool may hold the call's future or outcome once
    it is done, or every failed call would be a reference cycle (hence no closures here and
    in `_thread_future` / `_in_thread`, and their `del`s)."""
    _THREADS.run(functools.partial(contextvars.copy_context().run, work))


def _outcome(fn: Callable[[], T]) -> tuple[T | None, BaseException | None]:
    """`fn()`'s value, or the exception it raised, to hand over to another thread. This
    frame is in the exception's traceback: it keeps no local that refers to it."""
    try:
        return fn(), None
    except StopIteration as exc:  # a future cannot hold StopIteration
        return None, _stop_iteration(exc)
    except BaseException as exc:
        return None, exc


def _stop_iteration(exc: StopIteration) -> RuntimeError:
    error = RuntimeError(f"StopIteration: {exc}")
    error.__cause__ = exc
    return error


def _boxed(
    fn: Callable[[], T], box: list[tuple[T | None, BaseException | None]], done: threading.Event
) -> Callable[[], None]:
    """`_in_thread`'s work: `fn`'s outcome into `box` (see `_start` for the `del`)."""
    try:
        box.append(_outcome(fn))
        return done.set
    finally:
        del fn, box


def _in_thread(fn: Callable[[], T], timeout: float | None, signal: CancelSignal | None = None) -> T:
    """Run `fn` in a thread of its own; raise `_Deadline` if it is not done in time. With a
    `signal` (a tool that can read it): at the limit it is set, and the tool has
    `CANCEL_GRACE` more seconds to stop and say what it did (`ToolCancelled`)."""
    box: list[tuple[T | None, BaseException | None]] = []
    done = threading.Event()
    _start(functools.partial(_boxed, fn, box, done))
    if not done.wait(timeout):
        if signal is None:
            raise _Deadline
        signal.set()
        if not done.wait(CANCEL_GRACE):
            raise _Deadline
    value, error = box.pop()
    if error is not None:
        try:
            raise error
        finally:
            del error  # this frame is in its traceback: no cycle through it
    return value  # type: ignore[return-value]  # fn's own value, None included


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled: the time limit ran out or the caller gave up
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


def _thread_future(fn: Callable[[], T]) -> asyncio.Future[T]:
    """A future of the running loop, resolved when `fn` finishes in a thread of its own
    (`THREAD_WATCH`, when set, hears of the thread's start and end)."""
    import asyncio  # lazy: see the module's imports

    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    watch = THREAD_WATCH.get()
    ended = None if watch is None else watch()
    try:
        _start(functools.partial(_settling, fn, loop, future, ended))
    except BaseException:  # no thread could start: nothing runs, nothing stays held
        if ended is not None:
            ended()
        raise
    return future


def _settling(
    fn: Callable[[], T],
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[T],
    ended: Callable[[], None] | None,
) -> Callable[[], None]:
    """`_thread_future`'s work: how to hand `fn`'s outcome to `future` (see `_start` for the
    `del`)."""
    try:
        return functools.partial(_hand_over, loop, future, ended, *_outcome(fn))
    finally:
        del fn, loop, future, ended


def _hand_over(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    ended: Callable[[], None] | None,
    value: Any,
    error: BaseException | None,
) -> None:
    try:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(_settle, future, value, error)
    finally:
        if ended is not None:
            ended()


class Lease(Protocol):
    """A call's hold on its resource lock (`register_tool(lock=...)`): released once, when
    the tool has really stopped (a sync tool past its time limit runs on in its thread)."""

    def release(self) -> None: ...


def _leased_sync(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], lease: Lease | None
) -> Any:
    """`fn(*args, **kwargs)`, the lease released when it returns or raises; an awaitable it
    returns holds the lease until it is awaited (`_leased`)."""
    if lease is None:
        return fn(*args, **kwargs)
    try:
        value = fn(*args, **kwargs)
    except BaseException:
        lease.release()
        raise
    if type(value) not in _PLAIN and inspect.isawaitable(value):
        return _leased(value, lease)
    lease.release()
    return value


async def _leased(awaitable: Awaitable[T], lease: Lease) -> T:
    try:
        return await awaitable
    finally:
        lease.release()


def call(
    tool: Tool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    lease: Lease | None = None,
    signal: CancelSignal | None = None,
) -> Any:
    """Call the tool from sync code, enforcing `tool.timeout`; `lease` is released when the
    tool has stopped, `signal` set when it should (its time limit ran out)."""
    fn, timeout = tool.function, tool.timeout
    if tool.is_async:
        coro = fn(*args, **kwargs)
        return _run_async(tool, coro if lease is None else _leased(coro, lease), timeout, signal)
    if timeout is None:
        value = _leased_sync(fn, args, kwargs, lease)
    else:
        started = time.monotonic()
        heard = signal if tool.plan.reads_context else None  # a tool that can stop when asked
        try:
            value = _in_thread(
                functools.partial(_leased_sync, fn, args, kwargs, lease), timeout, heard
            )
        except _Deadline:
            if signal is not None:
                signal.set()
            raise _timeout_error(tool, timeout) from None
        timeout = max(0.0, timeout - (time.monotonic() - started))  # what is left for an await
    if type(value) not in _PLAIN and inspect.isawaitable(value):
        return _run_async(tool, value, timeout, signal)
    return value


def _run_async(
    tool: Tool, awaitable: Awaitable[T], limit: float | None, signal: CancelSignal | None = None
) -> T:
    """Await an async tool from sync code. With a time limit, the event loop runs in a thread
    of its own and the caller stops waiting at the limit: `asyncio.run` would otherwise
    wait for the cancelled tool (and the loop's executor) to wind down. `signal`, once set,
    cancels the tool's task."""
    coro = _with_deadline(tool, awaitable, limit, signal, bridge=True)
    if limit is None:
        return run_coroutine(coro)
    import asyncio  # lazy: see the module's imports

    try:
        return _in_thread(lambda: asyncio.run(coro), limit + CANCEL_GRACE + _GRACE)
    except _Deadline:
        raise _timeout_error(tool, tool.timeout or limit) from None


async def acall(
    tool: Tool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    lease: Lease | None = None,
    signal: CancelSignal | None = None,
) -> Any:
    """Call the tool from async code; a sync tool runs in a thread of its own (see `call`)."""
    fn, timeout = tool.function, tool.timeout
    if tool.is_async:
        coro = fn(*args, **kwargs)
        return await _with_deadline(
            tool, coro if lease is None else _leased(coro, lease), timeout, signal
        )
    twin = tool.async_function
    if twin is not None:  # a sync function with an async twin: the twin, here
        coro = twin(*args, **kwargs)
        return await _with_deadline(
            tool, coro if lease is None else _leased(coro, lease), timeout, signal
        )
    started = time.monotonic()
    heard = signal if tool.plan.reads_context else None
    work = functools.partial(_leased_sync, fn, args, kwargs, lease)
    # no local holds the thread's future: a failed one holds its exception (no cycle)
    value = await _with_deadline(tool, _thread_future(work), timeout, heard, in_thread=True)
    if type(value) not in _PLAIN and inspect.isawaitable(value):
        if timeout is not None:  # one time limit for the whole call, not one per step
            timeout = max(0.0, timeout - (time.monotonic() - started))
        return await _with_deadline(tool, value, timeout, signal)
    return value


CANCEL_GRACE = 0.5
"""Seconds a tool that was asked to stop (its time limit ran out, or its turn was stopped)
has to stop and say what it did (`ToolCancelled`) before its call is answered without it."""


async def _with_deadline(
    tool: Tool,
    awaitable: Awaitable[T],
    limit: float | None,
    signal: CancelSignal | None = None,
    in_thread: bool = False,
    bridge: bool = False,
) -> T:
    """Await `awaitable`, at most `limit` seconds (the error names the tool's own limit).

    Stopping it (the limit, or dispatch itself cancelled) sets `signal` and cancels the
    task; the tool then has `CANCEL_GRACE` seconds to end, and a result it reaches in that
    time (a value after all, or a `ToolCancelled` with its own words) answers the call. A
    sync tool (`in_thread`) cannot be cancelled, only signalled: without a `signal`, nothing
    is waited for. With `bridge` (sync dispatch: nothing else can cancel the task), setting
    the signal from outside cancels the task."""
    if limit is None and (signal is None or not (in_thread or bridge)):
        try:
            return await awaitable  # a cancellation reaches the tool itself
        except BaseException:
            if signal is not None:
                signal.set()
            raise
        finally:
            del awaitable  # a future that failed holds its exception: no cycle through here
    import asyncio  # lazy: see the module's imports

    task = asyncio.ensure_future(awaitable)
    if signal is not None and bridge:
        signal.on_set(functools.partial(_cancel_soon, asyncio.get_running_loop(), task))
    try:
        done, _ = await asyncio.wait({task}, timeout=limit)
    except asyncio.CancelledError:  # dispatch itself was cancelled: so is the tool
        if not await _stopped(task, signal, in_thread) or task.cancelled():
            raise
        own = task.exception()
        if not isinstance(own, ToolCancelled):  # only words about the cancel answer it
            raise
        # the tool answered the cancel: the call ends with its words (the cancellation
        # stays counted on the task, `Task.cancelling()`, for its caller to see)
        raise own from None
    except BaseException:  # an interrupt: nothing is waited for
        _stop_now(task, signal)
        raise
    if not done:  # past its limit: asked to stop
        if not await _stopped(task, signal, in_thread) or task.cancelled():
            raise _timeout_error(tool, tool.timeout or limit or 0.0)
        error = task.exception()
        if error is not None and not isinstance(error, ToolCancelled):
            raise _timeout_error(tool, tool.timeout or limit or 0.0)
        # it ended in its grace: a value after all, or its own words about the stop
    try:
        return task.result()
    finally:
        del task, awaitable  # a failed task holds its exception: no cycle through here


async def _stopped(task: asyncio.Future[Any], signal: CancelSignal | None, in_thread: bool) -> bool:
    """Ask a running tool to stop (`signal`, and a task's cancellation) and give it
    `CANCEL_GRACE` seconds: whether it ended (then `task` holds how); if not, it is left
    to end on its own (a thread) or cancelled, and nothing more is awaited."""
    import asyncio

    if in_thread and signal is None:  # a thread that cannot hear it: nothing to wait for
        task.cancel()
        task.add_done_callback(_retrieve)
        return False
    if signal is not None:
        signal.set()  # also cancels an async tool's task (its callback)
    if not in_thread:
        task.cancel()
    try:
        done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE)
    except BaseException:  # cancelled again: nothing more is waited for
        _stop_now(task, None)
        raise
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
        return False
    return True


def _stop_now(task: asyncio.Future[Any], signal: CancelSignal | None) -> None:
    if signal is not None:
        signal.set()
    task.cancel()
    task.add_done_callback(_retrieve)


def _cancel_soon(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any]) -> None:
    """A set signal's callback (from any thread): cancel the task on its loop."""
    with contextlib.suppress(RuntimeError):  # the loop closed: nothing left to cancel
        loop.call_soon_threadsafe(task.cancel)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Read a cancelled tool's outcome so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def convert(converter: Converter, value: Any) -> Any:
    """Run a converter built at registration; it may run the application's own classes."""
    try:
        return converter(value)
    except ConversionError:
        raise
    except Exception as exc:  # user code (__post_init__, a validator) or a bug
        text = exception_text(exc, 200)
        detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        raise ConversionError((), f"cannot be converted ({detail})", user_text=True) from exc


def lock_key(tool: Tool, arguments: dict[str, Any]) -> Any:
    """The key of the resource a call of `tool` locks (`register_tool(lock=...)`): its name,
    or what its function answers for the validated arguments (None: no lock)."""
    lock = tool.lock
    if lock is None or isinstance(lock, str):
        return lock
    try:
        key = lock(arguments)
        hash(key)
    except Exception as exc:
        raise ToolExecutionError(
            f"Tool '{tool.name}' was not run: the resource it locks could not be chosen.",
            tool_name=tool.name,
        ) from exc
    return key


def fill_default(tool: Tool, parameter: str, make: Callable[[], Any]) -> Any:
    """A default the function does not declare (`Field(default_factory=...)`), made now."""
    try:
        return make()
    except Exception as exc:
        raise ToolExecutionError(
            f"Tool '{tool.name}' failed: the default of '{parameter}' could not be made.",
            tool_name=tool.name,
        ) from exc


def context_value(make: Callable[[Any], Any], deps: Any, tool: str) -> Any:
    """A reshaped tool's hidden argument, made from the call's context (`deps`): the model
    never named it, so a failure says only that the application's value could not be made."""
    try:
        return make(deps)
    except Exception as exc:
        raise ToolExecutionError(
            f"Tool '{tool}' was not run: a value the application supplies for it could not "
            "be made.",
            tool_name=tool,
        ) from exc


def ask(confirm: Callable[[Tool, dict[str, Any]], Any], tool: Tool, args: dict[str, Any]) -> Any:
    """The `confirm=` callback's answer about this exact call (a deep copy of its arguments:
    the callback cannot change what runs)."""
    return confirm(tool, copy.deepcopy(args))


def filter_result(tool: Tool, result_filter: Callable[[Any], Any], value: Any) -> Any:
    """The tool's `result_filter` applied to its return value."""
    try:
        return result_filter(value)
    except Exception as exc:
        raise ToolExecutionError(
            f"Tool '{tool.name}' failed: its result could not be filtered.",
            tool_name=tool.name,
        ) from exc


def credential(provider: Callable[[Any], Any], request: Any) -> Any:
    """A credential provider asked for a call's credential, from sync code (an async provider
    runs to completion here); its exception propagates: the call fails with it."""
    value = provider(request)
    if awaitable(value):
        return run_coroutine(_awaited(value))
    return value


async def acredential(provider: Callable[[Any], Any], request: Any) -> Any:
    """A credential provider asked for a call's credential, from async code (a sync provider
    runs inline: it should be quick, a lookup); its exception propagates."""
    value = provider(request)
    if awaitable(value):
        return await value
    return value


async def oauth_callback(callback: Callable[[Any], Any], request: Any) -> Any:
    """A mount's OAuth callback (`authorize=`, `assertion=`) asked about `request`, from the
    mount's event loop: an async one awaited there; a sync one (it may wait on a person, a
    browser, a local HTTP server) in a thread, so that the loop goes on meanwhile; an
    awaitable it returns is awaited. Its exception propagates."""
    if inspect.iscoroutinefunction(callback):
        return await callback(request)
    value = await _thread_future(functools.partial(callback, request))
    if type(value) not in _PLAIN and inspect.isawaitable(value):
        return await value
    return value


async def _awaited(value: Awaitable[T]) -> T:
    return await value


def call_hook(hook: Callable[[Any], T], event: Any) -> T:
    """A conversation hook or `on_text`: its exception propagates (a bug to fix)."""
    return hook(event)


def awaitable(value: Any) -> bool:
    """Whether what user code answered is to be awaited (a plain value never is)."""
    return type(value) not in _PLAIN and inspect.isawaitable(value)


def describe(fn: Any) -> str:
    """How a message names a function of the application: its qualified name."""
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def run_hook(label: str, hook: Callable[[Any], Any], event: Any) -> Any:
    """A conversation hook, `on_text` or `on_event` (`label`), called by the sync driver:
    an awaitable answer is a mistake, never ignored (a veto would be lost)."""
    answer = hook(event)
    if awaitable(answer):
        _never_awaited(answer)
        raise UsageError(
            f"{label}={describe(hook)} returned {type(answer).__name__}, which "
            "Conversation cannot await (a veto would be lost); use AsyncConversation, "
            "or make the hook return its answer"
        )
    return answer


async def arun_hook(hook: Callable[[Any], Any], event: Any) -> Any:
    """A conversation hook, `on_text` or `on_event`, called by the async driver: an
    awaitable answer is awaited."""
    answer = hook(event)
    return (await answer) if awaitable(answer) else answer


def guard(guardrail: Callable[[Any], Any], event: Any, label: str, stage: str, tool: str) -> Any:
    """A conversation's guardrail on one call: its answer (an awaitable one as it is, for
    `aguard`); whatever it raises stops the turn, as `GuardrailTripped`."""
    try:
        return guardrail(event)
    except Exception as exc:
        raise _tripped(exc, label, stage, tool) from exc


async def aguard(answer: Awaitable[Any], label: str, stage: str, tool: str) -> Any:
    """What an async guardrail's awaitable answer comes to; an exception, as in `guard`."""
    try:
        return await answer
    except Exception as exc:
        raise _tripped(exc, label, stage, tool) from exc


def run_guardrail(
    guardrail: Callable[[Any], Any], event: Any, label: str, stage: str, tool: str
) -> Any:
    """A guardrail called by the sync driver (`guard`): an awaitable answer is a mistake."""
    answer = guard(guardrail, event, label, stage, tool)
    if awaitable(answer):
        _never_awaited(answer)
        raise UsageError(
            f"the {stage} guardrail {label} returned {type(answer).__name__}, which "
            "Conversation cannot await (its verdict would be lost); use AsyncConversation, "
            "or make it return its verdict"
        )
    return answer


async def arun_guardrail(
    guardrail: Callable[[Any], Any], event: Any, label: str, stage: str, tool: str
) -> Any:
    """A guardrail called by the async driver (`guard`, then `aguard`): an awaitable answer
    is awaited."""
    answer = guard(guardrail, event, label, stage, tool)
    return (await aguard(answer, label, stage, tool)) if awaitable(answer) else answer


def _never_awaited(answer: Any) -> None:
    if inspect.iscoroutine(answer):
        answer.close()  # never awaited: no "was never awaited" RuntimeWarning


def call_store(store: Any, kind: str, args: tuple[Any, ...]) -> Any:
    """A conversation's state store, called by the sync driver: `load`, `save` or `claim`
    (`kind`) with `args`; its exception propagates (the flow names the store)."""
    if kind == "load":
        return store.load(*args)
    if kind == "claim":
        return store.claim(*args)
    return store.save(*args)


async def acall_store(store: Any, kind: str, args: tuple[Any, ...]) -> Any:
    """`call_store` by the async driver: `aload`, `asave` or `aclaim`, awaited."""
    if kind == "load":
        return await store.aload(*args)
    if kind == "claim":
        return await store.aclaim(*args)
    return await store.asave(*args)


def _tripped(exc: Exception, label: str, stage: str, tool: str) -> GuardrailTripped:
    detail = exception_text(exc)
    return GuardrailTripped(
        f"the {stage} guardrail {label} stopped the turn at a call of tool '{tool}': "
        f"{type(exc).__name__}" + (f": {detail}" if detail else ""),
        guardrail=label,
        stage=stage,
        tool_name=tool,
    )


def rank(ranker: Callable[[str, list[Tool]], Any], query: str, candidates: list[Tool]) -> Any:
    """A registry's search `ranker=`: what it answers for `query` over a copy of the index's
    candidates (it may reorder and drop them); its exception propagates (a bug to fix)."""
    return ranker(query, list(candidates))


async def make_context(factory: Callable[[Any], Any], request: Any, tool_name: str) -> Any:
    """The deps an MCP server's `context=` factory builds from one request (sync or async).

    Whatever it raises refuses the call: a `ToolError`'s message is the answer as written
    (the application's words, e.g. "Sign in first."); anything else becomes a fixed text,
    so that nothing of the request or the application leaks into it.
    """
    try:
        value = factory(request)
        if awaitable(value):
            value = await value
    except ToolError as exc:
        raise ToolDeniedError(str(exc.message), tool_name=tool_name) from exc
    except Exception as exc:
        raise ToolDeniedError(
            f"Tool '{tool_name}' was not run: the server could not build its context.",
            tool_name=tool_name,
        ) from exc
    return value
