"""A tool's `CallPlan` applied to a model's decoded arguments: the values the function gets.

`prepare` checks and converts the arguments:

1. a `null` for a parameter with a default (strict mode) is dropped, so the default applies;
2. validate; only when that fails: drop the `null`s of optional properties of nested objects
   (strict mode makes them nullable too), coerce when allowed, and validate again;
3. convert the JSON values into the annotated Python types.

`bind` then adds what the model never sends: the injected context, `None` for ChatGLM3's
optional parameters without a default, and positional-only parameters in order.

The fast path (valid arguments, nothing to convert) is one validator call.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection
from typing import Any

from ..errors import InvalidArgumentsError
from ..params import CancelSignal, ToolContext, no_progress, progress_sink
from ..tool import CallPlan, Tool
from ..types import ConversionError
from ..validation import Problem
from ..validation.untrusted import pattern_budget
from .calling import convert, fill_default
from .decode import check_limits
from .redaction import ErrorMode, redact

__all__ = ["MAX_PROBLEMS_SHOWN", "bind", "invalid_arguments", "prepare"]

MAX_PROBLEMS_SHOWN = 20
_MAX_COERCIBLE = 100
_ABSENT: Any = object()


def prepare(
    tool: Tool,
    args: dict[str, Any],
    coerce: bool,
    max_depth: int,
    errors: ErrorMode = "redact",
    context: Any = None,
    convert: bool = True,
) -> dict[str, Any]:
    """Validate (and coerce) `args`, then convert them; raise InvalidArgumentsError.

    With `convert=False` the result is the checked JSON values (every converter still runs,
    so that a value which does not convert fails the same)."""
    plan = tool.plan
    nulls = plan.null_means_default
    for key in nulls:  # a plain loop: cheaper than any() over a generator
        if args.get(key, _ABSENT) is None:
            args = {k: v for k, v in args.items() if v is not None or k not in nulls}
            break
    if plan.validator.untrusted:  # a remote schema's patterns: one budget for the call
        with pattern_budget():
            args, problems = _validate(plan, args, coerce, max_depth)
    else:
        args, problems = _validate(plan, args, coerce, max_depth)
    reserved: Collection[str] = plan.reserved.intersection(args) if plan.reserved else ()
    if plan.closed_keys is not None:  # an explicit schema in front of a closed signature
        reserved = {*reserved, *(args.keys() - plan.closed_keys)}
    if problems or reserved:
        # Every problem at once: also those of the values that validated but do not convert
        # (inside a value with problems too: its valid parts are converted).
        _, more, cause = _convert(tool, args, errors, context, [p.blamed for p in problems])
        extra = [Problem((), f"unexpected property '{k}'") for k in sorted(reserved)]
        raise invalid_arguments(tool.name, [*problems, *extra, *more]) from cause
    if plan.converters:
        converted, more, cause = _convert(tool, args, errors, context)
        if more:
            raise invalid_arguments(tool.name, more) from cause
        if convert:
            args = converted
    return args


def _validate(
    plan: CallPlan, args: dict[str, Any], coerce: bool, max_depth: int
) -> tuple[dict[str, Any], list[Problem]]:
    found = plan.validator.check(args)  # arguments nest at most max_depth levels
    if found is None:
        return args, []
    return _repair(plan, args, found, coerce, max_depth)


def _build_record(
    tool: Tool, args: dict[str, Any], errors: ErrorMode, context: Any
) -> dict[str, Any]:
    """`flatten=True`: the arguments object becomes the one record parameter."""
    name, converter = tool.plan.record  # type: ignore[misc]  # checked by the caller
    try:
        return {name: convert(converter, args)}
    except ConversionError as exc:
        problems = [
            Problem(p.path, _conversion_text(p, errors, context), p.key) for p in exc.problems()
        ]
        raise invalid_arguments(tool.name, problems) from exc.__cause__


def _repair(
    plan: CallPlan, args: dict[str, Any], problems: list[Problem], coerce: bool, max_depth: int
) -> tuple[dict[str, Any], list[Problem]]:
    """Invalid `args` fixed by dropping nested nulls and coercing, or the problems."""
    stripped = plan.nulls.drop(args)
    if stripped is not args:
        problems = plan.validator.validate(stripped)
        if not problems:
            return stripped, []
    if coerce and len(problems) <= _MAX_COERCIBLE:  # slips, not a mass of bad values
        coerced = plan.validator.coerce(stripped)
        if coerced is not stripped and isinstance(coerced, dict):
            # a JSON-encoded string may hide what the decoder's limits refused
            check_limits(coerced, max_depth, python=True)
            if not plan.validator.validate(coerced):
                return coerced, []
    return args, problems


def _convert(
    tool: Tool,
    args: dict[str, Any],
    errors: ErrorMode,
    context: Any,
    invalid: list[tuple[str | int, ...]] | None = None,
) -> tuple[dict[str, Any], list[Problem], BaseException | None]:
    """The converted arguments, the problems of those that do not convert, and the first
    exception the application's code raised (kept as the cause, never shown).

    `invalid`: where the validator found problems (for reporting only). A value with
    problems inside is converted without the offending parts, and a conversion problem
    about an offending part (or a consequence of its absence: at it, inside it or around
    it) is left out, so nothing is said twice."""
    out = args  # copied on the first change only: `args` may be the caller's dict
    problems: list[Problem] = []
    cause: BaseException | None = None
    for name, converter in tool.plan.converters:
        if name not in args:
            continue
        value = args[name]
        inside = [p[1:] for p in invalid or () if p and p[0] == name]
        if inside:
            value = _pruned(value, inside)
            if value is _ABSENT:  # the value itself is wrong: nothing to convert
                continue
        try:
            new = convert(converter, value)
        except ConversionError as exc:
            for found in exc.problems():
                if not any(_related(found.blamed, p) for p in inside):
                    text = _conversion_text(found, errors, context)
                    problems.append(Problem((name, *found.path), text, found.key))
            cause = cause or exc.__cause__
            continue
        if new is not value:
            if out is args:
                out = dict(args)
            out[name] = new
    return out, problems, cause


def _related(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether one path is the other or inside it."""
    return a[: len(b)] == b or b[: len(a)] == a


def _pruned(value: Any, paths: list[tuple[str | int, ...]]) -> Any:
    """`value` without what is at each of `paths` (a copy along them only); `_ABSENT` when
    a path is empty (the value itself) or crosses a list (its items would shift)."""
    for path in paths:
        value = _without(value, path)
        if value is _ABSENT:
            break
    return value


def _without(value: Any, path: tuple[str | int, ...]) -> Any:
    if not path or not isinstance(value, dict):
        return _ABSENT
    head, rest = path[0], path[1:]
    if head not in value:
        return value  # a missing key: nothing to take away
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    inner = _without(value[head], rest)
    return _ABSENT if inner is _ABSENT else {**value, head: inner}


def _conversion_text(exc: ConversionError, errors: ErrorMode, context: Any) -> str:
    """toolreg's own words as they are; the application's exception text as `errors` says."""
    if not exc.user_text or errors == "full":
        return exc.message
    return "cannot be converted" if errors == "mask" else redact(exc.message, context)


def invalid_arguments(tool: str, problems: list[Problem]) -> InvalidArgumentsError:
    """The model-facing error; at most `MAX_PROBLEMS_SHOWN` problems are spelled out."""
    shown = problems[:MAX_PROBLEMS_SHOWN]
    lines = [f"{p.location()}: {p.message}" if p.path else p.message for p in shown]
    if len(problems) > len(shown):
        lines.append(f"... and {len(problems) - len(shown)} more problems")
    if len(lines) == 1:
        message = f"Invalid arguments for tool '{tool}': {lines[0]}."
    else:
        message = f"Invalid arguments for tool '{tool}':\n" + "\n".join(f"- {x}" for x in lines)
    kept = problems[: MAX_PROBLEMS_SHOWN * 50]
    pairs = [(p.location(), p.message) for p in kept]
    return InvalidArgumentsError(message, tool_name=tool, problems=pairs, found=kept)


def bind(
    tool: Tool,
    args: dict[str, Any],
    context: Any,
    call_id: str | None,
    errors: ErrorMode = "redact",
    key: str | None = None,
    signal: CancelSignal | None = None,
    tool_context: ToolContext[Any] | None = None,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword arguments of the call, from the prepared `args`; a
    `ToolContext` gets the call's idempotency `key` and cancel `signal`.

    `tool_context`: the `ToolContext` a `ToolContext` parameter gets as it is (a reshaped
    tool hands its own on to the tool it reshapes: the model's call id, its key, its
    progress)."""
    plan = tool.plan
    if not plan.binds:
        return (), args
    if plan.record is not None:
        args = _build_record(tool, args, errors, context)
    kwargs = (
        _inject(plan, args, context, tool, call_id, key, signal, tool_context)
        if plan.context
        else args
    )
    if plan.absent_is_none:
        kwargs = {**dict.fromkeys(plan.absent_is_none), **kwargs}
    if plan.fills:
        kwargs = {**kwargs}  # `args` stays what the model sent, validated
        for name, make in plan.fills:
            if name not in kwargs:
                kwargs[name] = fill_default(tool, name, make)
    if plan.positional:
        return _split_positional(plan, kwargs)
    return (), kwargs


def _inject(
    plan: CallPlan,
    args: dict[str, Any],
    context: Any,
    tool: Tool,
    call_id: str | None,
    key: str | None,
    signal: CancelSignal | None,
    tool_context: ToolContext[Any] | None,
) -> dict[str, Any]:
    kwargs = dict(args)
    cancelled = signal if signal is not None else CancelSignal()
    for name, kind in plan.context:
        if kind == "raw":
            kwargs[name] = context
        elif tool_context is not None:
            kwargs[name] = tool_context
        elif isinstance(context, ToolContext):
            kwargs[name] = dataclasses.replace(
                context,
                tool_name=tool.name,
                call_id=call_id,
                idempotency_key=context.idempotency_key if key is None else key,
                cancelled=cancelled,
            )
        else:
            sink = progress_sink.get()  # a conversation's stream() follows the progress
            report = no_progress if sink is None else functools.partial(sink, tool.name, call_id)
            kwargs[name] = ToolContext(
                context,
                tool.name,
                call_id,
                report_progress=report,
                idempotency_key=key,
                cancelled=cancelled,
            )
    return kwargs


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
