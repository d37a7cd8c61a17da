"""`Dispatcher`: the model's (name, arguments) -> a `ToolResult`, never an exception.

Steps: whitelist -> decode -> validate (and coerce) -> convert -> inject context ->
confirm -> call (sync/async, time limit) -> render. Each step's failure becomes a
`ToolResult(ok=False)` whose `content` is a short message the model can act on.

The steps and every decision are written once, as plain methods: `_begin` (whitelist to
context injection), `_passed_on` and `_answered` (whether an exception goes on to the
caller, else what answers it, by the step it came from), `_finish` (rendering).
`dispatch_tool` / `adispatch_tool` are shells of one `try` that only do the I/O between
them: ask for confirmation, call the tool (sync, or awaited); `dispatch_many` /
`adispatch_many` run a batch in threads or tasks.
"""

from __future__ import annotations

import contextvars
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from time import perf_counter as _clock
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, Union, overload

from ..content import MAX_RESULT_BYTES
from ..errors import (
    InvalidArgumentsError,
    MissingContextError,
    RetryRequestedError,
    ToolCallError,
    ToolCancelled,
    ToolError,
    ToolExecutionError,
    ToolFailed,
    ToolFailedError,
    ToolInterruptedError,
    ToolRetry,
    ToolTimeoutError,
    UnknownToolError,
    UsageError,
    exception_text,
)
from ..jsonvalues import copy_json, safe_text
from ..observe import OBSERVER, Trace
from ..params import CancelSignal, cancel_scope
from ..result import Outcome, ToolCall, ToolResult
from ..tool import Tool
from .binding import bind, prepare
from .calling import Lease, acall, call, lock_key
from .confirm import (
    ConfirmCallback,
    async_confirm,
    one_question,
    one_question_async,
    sync_confirm,
)
from .decode import decode_arguments
from .locks import ResourceLocks
from .redaction import ERROR_MODES, ErrorMode, failure_text
from .render import render_parts

__all__ = ["CallLike", "ConfirmCallback", "DispatchSettings", "DispatchVerb", "Dispatcher"]


CallLike = Union[ToolCall, tuple[Any, ...], Mapping[str, Any]]
_MAX_NAME = 64
_MAX_LISTED = 8  # names an unknown-tool answer lists at most (else the nearest only)
_MAX_LISTING = 240  # characters of that list at most


@dataclass(frozen=True, slots=True)
class DispatchSettings:
    """How a registry dispatches; the defaults and their meaning are `ToolRegistry`'s.

    `coerce`: fix a model's near-miss arguments (`"42"` for an integer) before rejecting them;
    `errors`: what the model reads of an exception ("redact", "mask", "full": see
    `redaction`); `max_payload_bytes` / `max_depth`:
    limits on the arguments; `max_concurrency`: calls at once in `dispatch_many`;
    `max_result_chars`: where results are cut (None: never; a tool's own limit wins);
    `max_result_bytes`: how many bytes of images, audio and files one result may hold
    (None: no bound; a tool's own limit wins).
    """

    coerce: bool
    errors: ErrorMode
    max_payload_bytes: int
    max_depth: int
    max_concurrency: int
    max_result_chars: int | None
    max_result_bytes: int | None = MAX_RESULT_BYTES

    def __post_init__(self) -> None:
        if not isinstance(self.coerce, bool):
            raise UsageError("ToolRegistry(coerce=...): must be True or False")
        if self.errors not in ERROR_MODES:
            raise UsageError(
                f"ToolRegistry(errors={self.errors!r}): must be one of "
                + ", ".join(map(repr, ERROR_MODES))
            )
        for key in (
            "max_payload_bytes",
            "max_depth",
            "max_concurrency",
            "max_result_chars",
            "max_result_bytes",
        ):
            value = getattr(self, key)
            if value is None and key in ("max_result_chars", "max_result_bytes"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"ToolRegistry({key}={value!r}): must be a whole number >= 1")


# What `_begin` hands on: the tool, the validated arguments (what `confirm` and the
# result show), the positional and keyword arguments of the call, and its cancel signal
# (None when nothing could hear it). A plain tuple: this is the hot path, and a tuple
# costs a fraction of an object.
_Prepared = tuple[Tool, dict[str, Any], tuple[Any, ...], dict[str, Any], CancelSignal | None]


class Dispatcher:
    """Runs calls against a name -> `Tool` map it reads (the registry's own, not a copy)."""

    __slots__ = ("_tools", "locks", "settings")

    def __init__(self, tools: Mapping[str, Tool], settings: DispatchSettings) -> None:
        self._tools = tools
        self.settings = settings
        self.locks = ResourceLocks()  # the resources its tools lock (`lock=`)

    # -- sync -----------------------------------------------------------------------------
    def dispatch_tool(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
        call_id: str | None = None,
        confirm: ConfirmCallback | None = None,
        idempotency_key: str | None = None,
    ) -> ToolResult:
        """Run one call from a model. Never raises for the model's mistakes or the tool's.

        The call goes through every step: the whitelist, decoding, validation, safe coercion,
        conversion, context injection, confirmation, the call (with its time limit) and the
        rendering of the result as text. Anything that fails is a `ToolResult` with
        `ok=False`, an `error_kind` and a message the model can act on.

        Args:
            name: the tool's name, as the model sent it (checked against the registry only).
            arguments: JSON text (`""` means `{}`), bytes, a mapping or None.
            context: the value a `ToolContext` / `Injected` parameter receives (never the model's).
            allowed: names the model may call in this request; any other is answered like an
                unknown tool.
            call_id: the provider's id of the call, kept in the result.
            confirm: asked about a tool that needs confirmation, with the tool and a copy of the
                validated arguments; anything but True denies the call.
            idempotency_key: the call's idempotency key, for the tool's
                `ToolContext.idempotency_key` and the result (a loop of your own can make
                one with `toolreg.idempotency.idempotency_key`; a conversation gives every
                call one).

        The result's `outcome` says whether the tool ran: "not_started" (refused before it
        began), "interrupted" (its time limit ran out while it ran, or it stopped on its
        cancel signal) or "completed".

        Raises:
            MissingContextError: the tool needs a context and none was given (the application's
                mistake, not the model's).
            UsageError: `idempotency_key` is not a str.

        Example:
            result = registry.dispatch_tool("get_weather", '{"city": "Paris"}')
            print(result.ok, result.content)
        """
        start = _clock()
        observer = OBSERVER.current
        trace = None if observer is None else observer.tool_call(name, call_id, self._tools)
        called = None
        key = idempotency_key
        try:
            tool, args, positional, kwargs, signal = self._begin(
                name, arguments, context, allowed, call_id, key, sync=True
            )
            if tool.needs_confirmation:
                with one_question():  # also from dispatch_many's threads
                    sync_confirm(confirm, tool, args)
            lease = None if tool.lock is None else self._lease(tool, args)
            called = tool
            value = call(tool, positional, kwargs, lease, signal)
        except BaseException as exc:
            if _passed_on(exc, called, trace):
                raise
            return self._answered(name, called, call_id, exc, start, trace, context, key)
        return self._finish(tool, call_id, value, args, start, trace, key)

    def dispatch_many(
        self,
        calls: Iterable[CallLike],
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
        confirm: ConfirmCallback | None = None,
        max_concurrency: int | None = None,
    ) -> list[ToolResult]:
        """Run several calls concurrently (threads); results in the order of the calls.

        At most `max_concurrency` run at a time; each call is dispatched as `dispatch_tool`
        would, so none raises for the model's mistakes or the tool's.

        Args:
            calls: `ToolCall`s (what the formats' `parse_calls` return; their
                `idempotency_key` goes to the tool), `(name, arguments)` tuples (a call id
                third, an idempotency key fourth), or mappings (`{"name", "arguments", "id",
                "idempotency_key"}`, or an OpenAI `tool_calls` entry).
            context: the value every call's `ToolContext` parameter receives.
            allowed: names the model may call in this request.
            confirm: asked about each call that needs confirmation, one question at a time.
            max_concurrency: calls at once (None: the registry's `max_concurrency`).

        Raises:
            MissingContextError: a tool needs a context and none was given.
            UsageError: a call that is none of those, or a `max_concurrency` below 1.

        Example:
            results = registry.dispatch_many(openai.parse_calls(completion))
        """
        batch = [_as_call(c) for c in calls]
        allowed_set = _allowed_set(allowed)
        limit = self._concurrency(max_concurrency, "dispatch_many")

        def run(c: ToolCall) -> ToolResult:
            return self.dispatch_tool(
                c.name,
                c.arguments,
                context=context,
                allowed=allowed_set,
                call_id=c.call_id,
                confirm=confirm,
                idempotency_key=c.idempotency_key,
            )

        if len(batch) <= 1:
            return [run(c) for c in batch]
        workers = max(1, min(len(batch), limit))
        contexts = [contextvars.copy_context() for _ in batch]  # each call sees the caller's
        from concurrent.futures import ThreadPoolExecutor  # lazy: ~10 ms, for batches only

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="toolreg") as pool:
            return list(pool.map(lambda c, ctx: ctx.run(run, c), batch, contexts))

    # -- async ----------------------------------------------------------------------------
    async def adispatch_tool(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
        call_id: str | None = None,
        confirm: ConfirmCallback | None = None,
        idempotency_key: str | None = None,
    ) -> ToolResult:
        """`dispatch_tool` for async code: async tools are awaited, sync ones run in a thread.

        Args:
            name: the tool's name, as the model sent it (checked against the registry only).
            arguments: JSON text (`""` means `{}`), bytes, a mapping or None.
            context: the value a `ToolContext` / `Injected` parameter receives.
            allowed: names the model may call in this request.
            call_id: the provider's id of the call, kept in the result.
            confirm: asked about a tool that needs confirmation (it may be `async def`).
            idempotency_key: the call's idempotency key (see `dispatch_tool`).

        Cancelling the task that awaits it cancels an async tool's task and sets a sync
        tool's `ToolContext.cancelled`.

        Raises:
            MissingContextError: the tool needs a context and none was given.
            UsageError: `idempotency_key` is not a str.
        """
        start = _clock()
        observer = OBSERVER.current
        trace = None if observer is None else observer.tool_call(name, call_id, self._tools)
        called = None
        key = idempotency_key
        try:
            tool, args, positional, kwargs, signal = self._begin(
                name, arguments, context, allowed, call_id, key
            )
            if tool.needs_confirmation:
                async with one_question_async():  # also from adispatch_many's tasks
                    await async_confirm(confirm, tool, args)
            lease = None if tool.lock is None else await self._alease(tool, args)
            called = tool
            value = await acall(tool, positional, kwargs, lease, signal)
        except BaseException as exc:
            if _passed_on(exc, called, trace):
                raise
            return self._answered(name, called, call_id, exc, start, trace, context, key)
        return self._finish(tool, call_id, value, args, start, trace, key)

    async def adispatch_many(
        self,
        calls: Iterable[CallLike],
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
        confirm: ConfirmCallback | None = None,
        max_concurrency: int | None = None,
    ) -> list[ToolResult]:
        """Run several calls concurrently (tasks), at most `max_concurrency` at a time.

        Results come in the order of the calls; sync tools run in threads.

        Args:
            calls: as for `dispatch_many` (`ToolCall`s, tuples or mappings, each with an
                idempotency key if it has one).
            context: the value every call's `ToolContext` parameter receives.
            allowed: names the model may call in this request.
            confirm: asked about each call that needs confirmation (it may be `async def`).
            max_concurrency: calls at once (None: the registry's `max_concurrency`).

        Raises:
            MissingContextError: a tool needs a context and none was given.
            UsageError: a call that is none of those, or a `max_concurrency` below 1.
        """
        batch = [_as_call(c) for c in calls]
        allowed_set = _allowed_set(allowed)
        limit = self._concurrency(max_concurrency, "adispatch_many")
        import asyncio  # lazy: already loaded by the running event loop

        gate = asyncio.Semaphore(max(1, limit))

        async def run(c: ToolCall) -> ToolResult:
            async with gate:
                return await self.adispatch_tool(
                    c.name,
                    c.arguments,
                    context=context,
                    allowed=allowed_set,
                    call_id=c.call_id,
                    confirm=confirm,
                    idempotency_key=c.idempotency_key,
                )

        return list(await asyncio.gather(*(run(c) for c in batch)))

    def _concurrency(self, given: int | None, verb: str) -> int:
        if given is None:
            return self.settings.max_concurrency
        if isinstance(given, bool) or not isinstance(given, int) or given < 1:
            raise UsageError(f"{verb}(max_concurrency={given!r}): must be a whole number >= 1")
        return given

    # -- resource locks -------------------------------------------------------------------
    def _lease(self, tool: Tool, args: dict[str, Any]) -> Lease | None:
        """The call's hold on the resource it locks (`lock=`), waiting for it at most the
        tool's time limit; the `ToolCallError` that stops the call instead."""
        key = lock_key(tool, args)
        if key is None:
            return None
        lease = self.locks.acquire(key, tool.timeout)
        if lease is None:
            raise _lock_timeout(tool)
        return lease

    async def _alease(self, tool: Tool, args: dict[str, Any]) -> Lease | None:
        key = lock_key(tool, args)
        if key is None:
            return None
        lease = await self.locks.aacquire(key, tool.timeout)
        if lease is None:
            raise _lock_timeout(tool)
        return lease

    # -- checking without running ---------------------------------------------------------
    def check_call(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] | None = None,
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
    ) -> tuple[Tool, dict[str, Any]]:
        """The tool and the arguments dispatch would accept, as JSON values (decoded,
        validated, coerced; a copy), without running anything but the argument converters;
        raise the `ToolCallError` dispatch would answer instead."""
        tool = self._lookup(name, allowed, context)
        return tool, copy_json(self._arguments(tool, arguments, context, convert=False))

    # -- decisions ------------------------------------------------------------------------
    def _begin(
        self,
        name: str,
        arguments: object,
        context: Any,
        allowed: Iterable[str] | None,
        call_id: str | None,
        key: str | None = None,
        sync: bool = False,
    ) -> _Prepared:
        """The tool and its call, or the `ToolCallError` that stops it (the model's fault).
        The call gets a cancel signal when something could hear it: a tool that reads its
        `ToolContext`; and, under a conversation's round (`cancel_scope`, whose stop sets
        it), an async tool run from sync code (the signal cancels its task)."""
        if key is not None and type(key) is not str:
            raise UsageError(
                f"dispatch_tool(idempotency_key={key!r}): must be a str (or None), "
                f"not {type(key).__name__}"
            )
        tool = self._lookup(name, allowed, context)
        args = self._arguments(tool, arguments, context)
        plan = tool.plan
        signal = None
        if plan.reads_context or (sync and tool.is_async):
            scope = cancel_scope.get()
            if plan.reads_context or scope is not None:
                signal = CancelSignal()
                if scope is not None:
                    scope.add(signal)
        positional, kwargs = bind(tool, args, context, call_id, self.settings.errors, key, signal)
        return tool, args, positional, kwargs, signal

    def _arguments(
        self, tool: Tool, arguments: object, context: Any, *, convert: bool = True
    ) -> dict[str, Any]:
        """The model's arguments decoded, validated (coerced) and, with `convert`, converted;
        or the `InvalidArgumentsError` that names the tool."""
        settings = self.settings
        try:
            args = decode_arguments(arguments, settings.max_payload_bytes, settings.max_depth)
            coerce = settings.coerce if tool.coerce is None else tool.coerce
            return prepare(
                tool, args, coerce, settings.max_depth, settings.errors, context, convert=convert
            )
        except InvalidArgumentsError as err:
            err.tool_name = tool.name
            raise

    def _lookup(self, name: object, allowed: Iterable[str] | None, context: Any) -> Tool:
        """The tool `name` names, if it is allowed; else the `UnknownToolError` to answer (or,
        for a tool that needs a context and got none, the application's `MissingContextError`)."""
        tool = self._tools.get(name) if type(name) is str else None
        allowed_set = None if allowed is None else _allowed_set(allowed)
        if tool is not None and allowed_set is not None and name not in allowed_set:
            tool = None  # not allowed: answered exactly like an unknown name
        if tool is None:
            raise self._unknown(name, allowed_set)
        if context is None and tool.plan.needs_context:  # the application's mistake
            raise MissingContextError(tool.name, tool.plan.needs_context[0])
        return tool

    def _finish(
        self,
        tool: Tool,
        call_id: str | None,
        value: Any,
        args: dict[str, Any],
        start: float,
        trace: Trace | None,
        key: str | None = None,
    ) -> ToolResult:
        """The result of a tool that returned `value`: rendered as text for the model."""
        settings = self.settings
        try:
            content, parts = render_parts(
                tool, value, settings.max_result_chars, settings.max_result_bytes
            )
        except ToolCallError as err:
            return _failed(tool.name, call_id, err, start, trace, "completed", key)
        # positional: the hot path; the order is ToolResult's field order
        elapsed = _clock() - start
        result = ToolResult(
            tool.name,
            call_id,
            True,
            content,
            value,
            None,
            None,
            tool.return_direct,
            elapsed,
            args,
            "completed",
            key,
            parts,
        )
        if trace is not None:
            trace.end(result)
        return result

    def _answered(
        self,
        name: object,
        called: Tool | None,
        call_id: str | None,
        exc: BaseException,
        start: float,
        trace: Trace | None,
        context: Any,
        key: str | None = None,
    ) -> ToolResult:
        """The result that answers `exc` (one `_passed_on` did not raise): before the call
        (`called` None), a `ToolCallError`, the model's mistake (the tool did not start);
        from the call, a `ToolCallError` raised inside (a time limit, a nested dispatch)
        keeps its kind and any other exception is an execution error. A call stopped while
        it ran (its time limit; its own `ToolCancelled`) was interrupted."""
        if called is None:
            assert isinstance(exc, ToolCallError)  # `_passed_on` raised anything else
            return _failed(name, call_id, exc, start, trace, "not_started", key)
        if isinstance(exc, ToolCallError):
            outcome: Outcome = "interrupted" if isinstance(exc, ToolTimeoutError) else "completed"
            return _failed(called.name, call_id, exc, start, trace, outcome, key)
        assert isinstance(exc, Exception)  # `_passed_on` raised every BaseException
        error = self._execution_error(called, exc, context)
        error.__cause__ = exc
        outcome = "interrupted" if isinstance(error, ToolInterruptedError) else "completed"
        return _failed(called.name, call_id, error, start, trace, outcome, key)

    def _unknown(self, name: object, allowed: frozenset[str] | None) -> UnknownToolError:
        """The answer to a name no allowed tool has: the nearest allowed names, and the
        list of them when it is short (`_MAX_LISTED` names, `_MAX_LISTING` characters);
        never a deferred tool (`defer_loading`: the model finds those by searching), nor
        one `allowed` leaves out."""
        shown = _safe_name(name)
        names = [
            n
            for n, tool in dict(self._tools).items()  # a copy: another thread may register
            if not tool.defer_loading and (allowed is None or n in allowed)
        ]
        matches = _close_matches(shown, names)
        message = f"Unknown tool '{shown}'."
        if matches:
            message += f" Did you mean {_either([_quoted(m) for m in matches])}?"
        listing = ", ".join(names)
        if not names:
            message += " No tools are available."
        elif len(names) <= _MAX_LISTED and len(listing) <= _MAX_LISTING:
            message += f" Available: {listing}."
        elif not matches:
            message += " Call one of the tools you were offered, by its exact name."
        return UnknownToolError(message, tool_name=shown, suggestions=matches)

    def _execution_error(
        self, tool: Tool, exc: Exception, context: Any
    ) -> ToolExecutionError | ToolInterruptedError:
        chosen = _chosen_message(exc) if isinstance(exc, ToolError) else None
        if isinstance(exc, ToolCancelled):  # it stopped when asked, and says what it did
            _log_refusal(tool.name, chosen or "(cancelled)")
            text = chosen or f"Tool '{tool.name}' was stopped while it was running."
            return ToolInterruptedError(text, tool_name=tool.name)
        if isinstance(exc, ToolRetry):  # the model is asked to call again, corrected
            _log_refusal(tool.name, chosen or "(retry)")
            text = chosen or f"Tool '{tool.name}' asked for the call to be made again, corrected."
            return RetryRequestedError(text, tool_name=tool.name)
        if isinstance(exc, ToolFailed):  # final: the model is told not to retry
            _log_refusal(tool.name, chosen or "(failed)")
            text = chosen or f"Tool '{tool.name}' failed."
            return ToolFailedError(f"{text}\n{_FINAL}", tool_name=tool.name)
        if chosen:  # the tool author's own words for the model, exactly
            _log_refusal(tool.name, chosen)
            message = chosen
        else:
            # The exception's text, made once per failure: its __str__ is the application's
            # code and may be slow (or raise: then ""). The log line and the model's message
            # share it.
            detail = exception_text(exc)
            _log_failure(tool.name, exc, detail)
            message = failure_text(tool.name, exc, detail, self.settings.errors, context)
        return ToolExecutionError(message, tool_name=tool.name)


_FINAL = "This failure is final: do not call the tool again for it."


def _chosen_message(exc: ToolError) -> str | None:
    try:
        return str(exc.message)
    except Exception:  # a message object whose __str__ fails: fall back to the generic text
        return None


_MAX_LOGGED = 600  # characters of a failure's log line, at most
_INFO, _WARNING, _DEBUG = 20, 30, 10  # logging's levels, without importing logging


def _logger() -> Any:
    """The "toolreg" logger; `logging` is imported on the first failure, not by
    `import toolreg`."""
    import logging

    return logging.getLogger("toolreg")


def _log_line(message: str) -> str:
    """`message` fit for any handler: one line, at most `_MAX_LOGGED` characters, no lone
    surrogate (which a UTF-8 stream, or a test runner's worker, cannot encode)."""
    line = " ".join(safe_text(message).split())
    return line if len(line) <= _MAX_LOGGED else line[: _MAX_LOGGED - 3] + "..."


def _log_refusal(tool: str, chosen: str) -> None:
    """A tool that refused with a `ToolError`: one INFO line with its words."""
    logger = _logger()
    if logger.isEnabledFor(_INFO):
        logger.info("%s", _log_line(f"tool {tool!r} refused: {chosen}"))


def _log_failure(tool: str, exc: BaseException, detail: str) -> None:
    """A tool that raised: one WARNING line, never a traceback (so logging's last resort,
    when the application set no logging up, prints just the line), and the traceback at
    DEBUG, for an application that asks for it.

    The WARNING record carries the exception as `tool_exception`: the command's --debug
    prints its traceback from there. `detail` is the exception's text, already made."""
    logger = _logger()
    if not logger.isEnabledFor(_WARNING):
        return
    summary = type(exc).__name__ + (f": {detail}" if detail else "")
    line = _log_line(f"tool {tool!r} failed: {summary}")
    logger.warning("%s", line, extra={"tool_exception": exc})
    if logger.isEnabledFor(_DEBUG):
        logger.debug("%s", line, exc_info=exc)


def _passed_on(exc: BaseException, called: Tool | None, trace: Trace | None) -> bool:
    """Whether dispatch raises `exc` to its caller instead of answering it (the trace
    aborted): `KeyboardInterrupt`, `SystemExit` and cancellation always; before the call
    (`called` None), anything but a `ToolCallError`: the application's mistake (no
    context...), not the model's.

    The shells raise it themselves (a bare `raise`: the traceback stays the tool's), and
    keep no result in a local: a failed result holds the exception, whose traceback holds
    the shell's frame, and a local there would make a reference cycle of every failure."""
    if isinstance(exc, Exception) and (called is not None or isinstance(exc, ToolCallError)):
        return False
    if trace is not None:
        trace.abort(exc)
    return True


def _lock_timeout(tool: Tool) -> ToolTimeoutError:
    limit = tool.timeout or 0.0
    return ToolTimeoutError(
        f"Tool '{tool.name}' was not run: it waited {limit:g} s for the resource it uses, "
        "which another call held.",
        tool_name=tool.name,
        timeout=limit,
    )


def _failed(
    name: object,
    call_id: str | None,
    err: ToolCallError,
    start: float,
    trace: Trace | None,
    outcome: Outcome = "not_started",
    key: str | None = None,
) -> ToolResult:
    # past the lookup, `name` is exactly a registered name: keep it whole, whatever the error
    # says (a ToolCallError raised inside the tool may name some other tool)
    if isinstance(name, str) and not isinstance(err, UnknownToolError):
        tool_name = name
    else:
        tool_name = err.tool_name or _safe_name(name)
    # A tool's own words (a ToolError, an exception's text) may hold a lone surrogate, which
    # would crash whatever encodes the text for the model: replaced, in the error too.
    err.message = safe_text(err.message)
    result = ToolResult(
        tool_name=tool_name,
        call_id=call_id,
        ok=False,
        content=err.message,
        error=err,
        exception=err.__cause__,
        elapsed=_clock() - start,
        outcome=outcome,
        idempotency_key=key,
    )
    if trace is not None:
        trace.end(result)
    return result


def _close_matches(word: str, names: list[str]) -> list[str]:
    """Up to 3 names like `word` (difflib's ratio >= 0.6), best first, ties in registry order."""
    import difflib  # lazy: only an unknown tool name needs it

    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    scored = []
    for index, candidate in enumerate(names):
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6:
            score = matcher.ratio()
            if score >= 0.6:
                scored.append((-score, index, candidate))
    return [candidate for _, _, candidate in sorted(scored)[:3]]


def _quoted(name: str) -> str:
    return f"'{name}'"


def _either(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _allowed_set(allowed: Iterable[str] | None) -> frozenset[str] | None:
    """`allowed=` as a set; one string is one name (never a set of its characters)."""
    if allowed is None or isinstance(allowed, frozenset):
        return allowed
    if isinstance(allowed, str):
        return frozenset((allowed,))
    return frozenset(allowed)


def _safe_name(name: object) -> str:
    if not isinstance(name, str):
        return f"<{type(name).__name__}>"
    clean = "".join(ch if ch.isprintable() else "?" for ch in name[: _MAX_NAME + 1])
    return clean if len(clean) <= _MAX_NAME else clean[:_MAX_NAME] + "..."


def _as_call(item: CallLike) -> ToolCall:
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, tuple):
        return ToolCall(*item)
    if isinstance(item, Mapping):
        function = item.get("function")
        if isinstance(function, Mapping):  # an OpenAI chat `tool_calls` entry
            return ToolCall(
                name=function.get("name", ""),
                arguments=function.get("arguments"),
                call_id=item.get("id"),
            )
        return ToolCall(
            name=item.get("name", ""),
            arguments=item.get("arguments"),
            call_id=item.get("call_id", item.get("id")),
            idempotency_key=item.get("idempotency_key"),
        )
    raise UsageError(f"a call must be a ToolCall, tuple or mapping, not {type(item).__name__}")


P = ParamSpec("P")
R = TypeVar("R")


class DispatchVerb(Generic[P, R]):
    """A dispatch verb of a class that holds a `dispatcher` (a `ToolRegistry`):
    `registry.dispatch_tool` is `registry.dispatcher.dispatch_tool`, the `Dispatcher`'s own
    bound method (its signature, its docstring; `inspect.iscoroutinefunction` holds for the
    async ones), so each verb is declared once, in `Dispatcher`.

    `method`: the `Dispatcher` method, e.g. `DispatchVerb(Dispatcher.dispatch_tool)`.
    """

    def __init__(self, method: Callable[Concatenate[Dispatcher, P], R]) -> None:
        self.method = method
        self.__doc__ = method.__doc__
        self.__wrapped__ = method
        self.__signature__ = inspect.signature(method)  # (self, name, ...): a method's

    def __call__(self, holder: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """`ToolRegistry.dispatch_tool(registry, ...)`, as an unbound method is called."""
        return self.method(holder.dispatcher, *args, **kwargs)

    @overload
    def __get__(self, holder: None, owner: type | None = None) -> DispatchVerb[P, R]: ...

    @overload
    def __get__(self, holder: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, holder: object, owner: type | None = None) -> Any:
        if holder is None:
            return self
        return types.MethodType(self.method, holder.dispatcher)  # type: ignore[attr-defined]
