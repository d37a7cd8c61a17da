"""Dispatch: the model's (name, arguments) -> a `ToolResult`, never an exception.

Steps: whitelist -> decode -> validate (and coerce) -> convert -> inject context ->
confirm -> call (sync/async, time limit) -> render. Each step's failure becomes a
`ToolResult(ok=False)` whose `content` is a short message the model can act on.
"""

from __future__ import annotations

import contextvars
import dataclasses
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from time import perf_counter as _clock
from typing import Any, Union

from ._calling import acall, call
from ._confirm import CONFIRM_LOCK, ConfirmCallback, async_confirm, loop_confirm_lock, sync_confirm
from ._decode import decode_arguments
from ._plan import CallPlan, plan_for
from ._render import render_result
from .errors import (
    InvalidArgumentsError,
    ToolCallError,
    ToolError,
    ToolExecutionError,
    UnknownToolError,
    exception_text,
)
from .params import ToolContext
from .result import ToolCall, ToolResult
from .tool import Tool

__all__ = ["CallLike", "ConfirmCallback", "DispatchMixin", "DispatchSettings"]


CallLike = Union[ToolCall, tuple[Any, ...], Mapping[str, Any]]
_MAX_NAME = 64
_MAX_LISTED = 20
_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class DispatchSettings:
    """Per-registry dispatch options (see `ToolRegistry`)."""

    coerce: bool = True
    mask_errors: bool = False
    max_payload_bytes: int = 1 << 20
    max_depth: int = 64
    max_concurrency: int = 8
    max_result_chars: int | None = None


# What `_prepare` hands on: the tool, the validated arguments (what `confirm` and the
# result show), and the positional and keyword arguments of the call. A plain tuple: this
# is the hot path, and a tuple costs a fraction of an object.
_Prepared = tuple[Tool, dict[str, Any], tuple[Any, ...], dict[str, Any]]


class DispatchMixin:
    """The dispatch verbs of `ToolRegistry`."""

    settings: DispatchSettings
    _tools: dict[str, Tool]

    def names(self) -> list[str]:
        raise NotImplementedError

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
    ) -> ToolResult:
        """Run one call from a model. Never raises for the model's mistakes or the tool's."""
        start = _clock()
        try:
            tool, args, positional, kwargs = self._prepare(
                name, arguments, context, allowed, call_id
            )
            if tool.needs_confirmation:
                with CONFIRM_LOCK:  # one question at a time, also from dispatch_many
                    sync_confirm(confirm, tool, args)
            try:
                value = call(tool, positional, kwargs)
            except ToolCallError:
                raise
            except Exception as exc:
                raise self._execution_error(tool, exc) from exc
            content = render_result(tool, value, self.settings.max_result_chars)
        except ToolCallError as err:
            return _failure(name, call_id, err, start)
        return _success(tool, call_id, content, value, args, start)

    def dispatch_many(
        self,
        calls: Iterable[CallLike],
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
        confirm: ConfirmCallback | None = None,
    ) -> list[ToolResult]:
        """Run several calls concurrently (threads); results in the order of the calls."""
        batch = [_as_call(c) for c in calls]
        allowed_set = _allowed_set(allowed)

        def run(c: ToolCall) -> ToolResult:
            return self.dispatch_tool(
                c.name,
                c.arguments,
                context=context,
                allowed=allowed_set,
                call_id=c.call_id,
                confirm=confirm,
            )

        if len(batch) <= 1:
            return [run(c) for c in batch]
        workers = max(1, min(len(batch), self.settings.max_concurrency))
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
    ) -> ToolResult:
        """`dispatch_tool` for async code: async tools are awaited, sync ones run in a thread."""
        start = _clock()
        try:
            tool, args, positional, kwargs = self._prepare(
                name, arguments, context, allowed, call_id
            )
            if tool.needs_confirmation:
                async with loop_confirm_lock():  # one question at a time per event loop
                    await async_confirm(confirm, tool, args)
            try:
                value = await acall(tool, positional, kwargs)
            except ToolCallError:
                raise
            except Exception as exc:
                raise self._execution_error(tool, exc) from exc
            content = render_result(tool, value, self.settings.max_result_chars)
        except ToolCallError as err:
            return _failure(name, call_id, err, start)
        return _success(tool, call_id, content, value, args, start)

    async def adispatch_many(
        self,
        calls: Iterable[CallLike],
        *,
        context: Any = None,
        allowed: Iterable[str] | None = None,
        confirm: ConfirmCallback | None = None,
    ) -> list[ToolResult]:
        """Run several calls concurrently (tasks), at most `max_concurrency` at a time."""
        batch = [_as_call(c) for c in calls]
        allowed_set = _allowed_set(allowed)
        import asyncio  # lazy: already loaded by the running event loop

        gate = asyncio.Semaphore(max(1, self.settings.max_concurrency))

        async def run(c: ToolCall) -> ToolResult:
            async with gate:
                return await self.adispatch_tool(
                    c.name,
                    c.arguments,
                    context=context,
                    allowed=allowed_set,
                    call_id=c.call_id,
                    confirm=confirm,
                )

        return list(await asyncio.gather(*(run(c) for c in batch)))

    # -- steps ----------------------------------------------------------------------------
    def _prepare(
        self,
        name: str,
        arguments: object,
        context: Any,
        allowed: Iterable[str] | None,
        call_id: str | None,
    ) -> _Prepared:
        tool = self._tools.get(name) if type(name) is str else None
        allowed_set = None if allowed is None else _allowed_set(allowed)
        if tool is not None and allowed_set is not None and name not in allowed_set:
            tool = None  # not allowed: answered exactly like an unknown name
        if tool is None:
            raise self._unknown(name, allowed_set)
        settings = self.settings
        try:
            args = decode_arguments(arguments, settings.max_payload_bytes, settings.max_depth)
            plan = plan_for(tool)
            coerce = settings.coerce if tool.coerce is None else tool.coerce
            args = plan.prepare(tool, args, coerce, settings.max_depth, settings.mask_errors)
        except InvalidArgumentsError as err:
            err.tool_name = tool.name
            raise
        kwargs = _inject(plan, args, context, tool, call_id) if plan.context else args
        if plan.absent_is_none:
            kwargs = {**dict.fromkeys(plan.absent_is_none), **kwargs}
        if plan.positional:
            return (tool, args, *_split_positional(plan, kwargs))
        return tool, args, (), kwargs

    def _unknown(self, name: object, allowed: frozenset[str] | None) -> UnknownToolError:
        shown = _safe_name(name)
        names = self.names()
        if allowed is not None:
            names = [n for n in names if n in allowed]
        matches = _close_matches(shown, names)
        message = f"Unknown tool '{shown}'."
        if matches:
            message += f" Did you mean {_either([_quoted(m) for m in matches])}?"
        if len(names) > _MAX_LISTED:
            more = len(names) - _MAX_LISTED
            message += f" Available: {', '.join(names[:_MAX_LISTED])} and {more} more."
        elif names:
            message += f" Available: {', '.join(names)}."
        else:
            message += " No tools are available."
        return UnknownToolError(message, tool_name=shown, suggestions=matches)

    def _execution_error(self, tool: Tool, exc: Exception) -> ToolExecutionError:
        _debug("tool %r raised", tool.name, exc_info=exc)
        chosen = _chosen_message(exc) if isinstance(exc, ToolError) else None
        if chosen:  # the tool author's own words for the model, exactly
            message = chosen
        elif self.settings.mask_errors:
            message = f"Tool '{tool.name}' failed."
        else:
            detail = exception_text(exc)
            message = f"Tool '{tool.name}' failed: {type(exc).__name__}" + (
                f": {detail}" if detail else ""
            )
        return ToolExecutionError(message, tool_name=tool.name)


def _chosen_message(exc: ToolError) -> str | None:
    try:
        return str(exc.message)
    except Exception:  # a message object whose __str__ fails: fall back to the generic text
        return None


def _debug(message: str, *args: Any, exc_info: BaseException | None = None) -> None:
    """Log to the "toolreg" logger at DEBUG. If the application never imported `logging`,
    nothing is configured to show the record, so the import (~5 ms) is skipped."""
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger("toolreg").debug(message, *args, exc_info=exc_info)


def _success(
    tool: Tool,
    call_id: str | None,
    content: str,
    value: Any,
    args: dict[str, Any],
    start: float,
) -> ToolResult:
    # positional: the hot path; the order is ToolResult's field order
    elapsed = _clock() - start
    return ToolResult(
        tool.name, call_id, True, content, value, None, None, tool.return_direct, elapsed, args
    )


def _failure(name: object, call_id: str | None, err: ToolCallError, start: float) -> ToolResult:
    # past the lookup, `name` is exactly a registered name: keep it whole, whatever the error
    # says (a ToolCallError raised inside the tool may name some other tool)
    if isinstance(name, str) and not isinstance(err, UnknownToolError):
        tool_name = name
    else:
        tool_name = err.tool_name or _safe_name(name)
    return ToolResult(
        tool_name=tool_name,
        call_id=call_id,
        ok=False,
        content=err.message,
        error=err,
        exception=err.__cause__,
        elapsed=_clock() - start,
    )


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


def _split_positional(
    plan: CallPlan, kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Positional-only values in order; a missing one before a given one gets its default."""
    rest = dict(kwargs)
    given = [rest.pop(n, _ABSENT) for n, _ in plan.positional]
    while given and given[-1] is _ABSENT:
        given.pop()
    values = tuple(
        default if value is _ABSENT else value
        for value, (_, default) in zip(given, plan.positional)
    )
    return values, rest


def _safe_name(name: object) -> str:
    if not isinstance(name, str):
        return f"<{type(name).__name__}>"
    clean = "".join(ch if ch.isprintable() else "?" for ch in name[: _MAX_NAME + 1])
    return clean if len(clean) <= _MAX_NAME else clean[:_MAX_NAME] + "..."


def _inject(
    plan: CallPlan, args: dict[str, Any], context: Any, tool: Tool, call_id: str | None
) -> dict[str, Any]:
    kwargs = dict(args)
    for name, kind in plan.context:
        if kind == "raw":
            kwargs[name] = context
        elif isinstance(context, ToolContext):
            kwargs[name] = dataclasses.replace(context, tool_name=tool.name, call_id=call_id)
        else:
            kwargs[name] = ToolContext(deps=context, tool_name=tool.name, call_id=call_id)
    return kwargs


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
        )
    raise TypeError(f"a call must be a ToolCall, tuple or mapping, not {type(item).__name__}")
