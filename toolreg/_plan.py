"""A tool's call plan: everything dispatch needs, computed once per tool, then reused.

`CallPlan.prepare` turns decoded arguments into the values the function receives:

1. a `null` for a parameter with a default (strict mode) is dropped, so the default applies;
2. validate; only when that fails: drop the `null`s of optional properties of nested objects
   (strict mode makes them nullable too), coerce when allowed, and validate again;
3. convert the JSON values into the annotated Python types.

The fast path (valid arguments, nothing to convert) is one validator call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ._convert import ConversionError, Converter, converter_for
from ._decode import check_limits
from ._introspect import MISSING
from ._validator import Problem, Validator
from .errors import InvalidArgumentsError, exception_text
from .tool import Tool

__all__ = ["CallPlan", "invalid_arguments", "plan_for"]

_MAX_WALK = 200
_MAX_COERCIBLE = 100
_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class CallPlan:
    validator: Validator
    converters: tuple[tuple[str, Converter], ...]
    null_means_default: frozenset[str]  # parameters whose null from the model means "default"
    absent_is_none: tuple[str, ...]  # ChatGLM3 "not required" parameters without a default
    context: tuple[tuple[str, str], ...]  # (parameter, "context" | "raw")
    positional: tuple[tuple[str, Any], ...]  # positional-only parameters and their defaults
    reserved: frozenset[str]  # injected names the model may never send (even with **kwargs)
    nulls: _NullDropper = field(repr=False, compare=False)
    closed_keys: frozenset[str] | None = None  # the only keys allowed (explicit schemas)

    def prepare(
        self,
        tool: Tool,
        args: dict[str, Any],
        coerce: bool,
        max_depth: int = 64,
        mask_errors: bool = False,
    ) -> dict[str, Any]:
        """Validate (and coerce) `args`, then convert them; raise InvalidArgumentsError."""
        nulls = self.null_means_default
        for key in nulls:  # a plain loop: cheaper than any() over a generator
            if args.get(key, _ABSENT) is None:
                args = {k: v for k, v in args.items() if v is not None or k not in nulls}
                break
        problems = self.validator.validate(args)
        if problems:
            args, problems = self._repair(args, problems, coerce, max_depth)
        reserved: Collection[str] = self.reserved.intersection(args) if self.reserved else ()
        if self.closed_keys is not None:  # an explicit schema in front of a closed signature
            reserved = {*reserved, *(args.keys() - self.closed_keys)}
        if problems or reserved:
            extra = [Problem((), f"unexpected property '{k}'") for k in sorted(reserved)]
            raise invalid_arguments(tool.name, [*problems, *extra])
        if self.converters:
            args = self._convert(tool, args, mask_errors)
        return args

    def _repair(
        self, args: dict[str, Any], problems: list[Problem], coerce: bool, max_depth: int
    ) -> tuple[dict[str, Any], list[Problem]]:
        """Invalid `args` fixed by dropping nested nulls and coercing, or the problems."""
        stripped = self.nulls.drop(args)
        if stripped is not args:
            problems = self.validator.validate(stripped)
            if not problems:
                return stripped, []
        if coerce and len(problems) <= _MAX_COERCIBLE:  # slips, not a mass of bad values
            coerced = self.validator.coerce(stripped)
            if coerced is not stripped and isinstance(coerced, dict):
                # a JSON-encoded string may hide what the decoder's limits refused
                check_limits(coerced, max_depth, python=True)
                if not self.validator.validate(coerced):
                    return coerced, []
        return args, problems

    def _convert(self, tool: Tool, args: dict[str, Any], mask: bool) -> dict[str, Any]:
        out = args  # copied on the first change only: `args` may be the caller's dict
        for name, conv in self.converters:
            if name in args:
                value = args[name]
                try:
                    new = conv(value)
                    if new is not value:
                        if out is args:
                            out = dict(args)
                        out[name] = new
                except ConversionError as exc:
                    text = "cannot be converted" if mask and exc.user_text else exc.message
                    raise invalid_arguments(tool.name, [Problem((name, *exc.path), text)]) from None
                except Exception as exc:  # user code (__post_init__, a validator) or a bug
                    text = "cannot be converted" + ("" if mask else f" ({_detail(exc)})")
                    raise invalid_arguments(tool.name, [Problem((name,), text)]) from exc
        return out


def _detail(exc: BaseException) -> str:
    text = exception_text(exc, 200)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


MAX_PROBLEMS_SHOWN = 20


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
    kept = [(p.location(), p.message) for p in problems[: MAX_PROBLEMS_SHOWN * 50]]
    return InvalidArgumentsError(message, tool_name=tool, problems=kept)


def plan_for(tool: Tool) -> CallPlan:
    """The tool's plan, built on first use and cached on the tool."""
    plan: CallPlan | None = tool.runtime.get("plan")
    if plan is None:
        plan = _build(tool)
        tool.runtime["plan"] = plan
    return plan


def _accepts_null(schema: Any, defs: dict[str, Any]) -> bool:
    if isinstance(schema, bool):  # `true` / `false` are schemas too
        return schema
    return Validator({**schema, "$defs": defs}).is_valid(None)


def _build(tool: Tool) -> CallPlan:
    properties = tool.parameters.get("properties", {})
    defs = tool.parameters.get("$defs", {})
    converters: list[tuple[str, Converter]] = []
    null_default: set[str] = set()
    absent: list[str] = []
    context: list[tuple[str, str]] = []
    positional: list[tuple[str, Any]] = []
    for p in tool.params:
        if p.inject is not None:
            context.append((p.name, p.inject))
            continue
        if p.var_keyword:
            continue
        if p.positional_only:
            positional.append((p.name, None if p.default is MISSING else p.default))
        conv = converter_for(p.annotation, tool.name)
        if conv is not None:
            converters.append((p.name, conv))
        schema = properties.get(p.name, {})
        if p.default is not MISSING and not _accepts_null(schema, defs):
            null_default.add(p.name)
        if p.default is MISSING and not p.required:
            absent.append(p.name)
            if not _accepts_null(schema, defs):  # strict mode offers null for it: "absent"
                null_default.add(p.name)
    if not tool.params:  # an explicit schema: its optional properties take null as "absent"
        required = set(tool.parameters.get("required", ()))
        null_default = {
            name
            for name, schema in properties.items()
            if name not in required and not _accepts_null(schema, defs)
        }
    return CallPlan(
        validator=Validator(tool.parameters),
        converters=tuple(converters),
        null_means_default=frozenset(null_default),
        absent_is_none=tuple(absent),
        context=tuple(context),
        positional=tuple(positional),
        reserved=frozenset(n for n, _ in context) if tool.accepts_extra_keys else frozenset(),
        nulls=_NullDropper(tool.parameters),
        closed_keys=_closed_keys(tool, properties),
    )


def _closed_keys(tool: Tool, properties: dict[str, Any]) -> frozenset[str] | None:
    """For an explicit schema that allows extra keys in front of a function that takes no
    `**kwargs`: the keys the function takes (others are rejected, naming them, rather than
    failing inside the call with a TypeError). None when there is nothing to add."""
    if tool.params or not tool.accepts_extra_keys:
        return None
    try:
        parameters = inspect.signature(tool.function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(properties)


class _NullDropper:
    """Drops `null`s the strict transform allowed for optional properties of nested objects.

    Strict mode lists every property as required and makes the optional ones nullable; the
    tool's own schema does not accept that `null`, and the class's default should apply. Only
    used on the slow path (after validation failed), so it may compile subschemas lazily.
    """

    __slots__ = ("_checks", "_defs", "_root")

    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root
        self._defs = root.get("$defs", {})
        self._checks: dict[int, Callable[[object], bool]] = {}

    def drop(self, args: dict[str, Any]) -> dict[str, Any]:
        """`args` without those nulls (the same object when there were none)."""
        properties = self._root.get("properties", {})
        changed = {}
        for key, value in args.items():
            sub = properties.get(key)
            if sub is not None and isinstance(value, (dict, list)):
                new = self._walk(sub, value, 0)
                if new is not value:
                    changed[key] = new
        return {**args, **changed} if changed else args

    def _accepts(self, schema: Any, value: object) -> bool:
        check = self._checks.get(id(schema))
        if check is None:
            try:
                check = Validator({**schema, "$defs": self._defs}).is_valid
            except Exception:
                check = _never
            self._checks[id(schema)] = check
        return check(value)

    def _resolve(self, schema: dict[str, Any]) -> Any:
        for _ in range(20):
            ref = schema.get("$ref")
            if not (isinstance(ref, str) and ref.startswith("#/$defs/")):
                return schema
            target = self._defs.get(ref[len("#/$defs/") :])
            if not isinstance(target, dict):
                return schema
            schema = target
        return schema

    def _walk(self, schema: Any, value: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > _MAX_WALK:
            return value
        schema = self._resolve(schema)
        alternatives = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(alternatives, list):
            for alt in alternatives:
                new = self._walk(alt, value, depth + 1)
                if new is not value and isinstance(alt, dict) and self._accepts(alt, new):
                    return new
            return value
        if isinstance(value, dict):
            return self._object(schema, value, depth)
        if isinstance(value, list):
            return self._array(schema, value, depth)
        return value

    def _object(self, schema: dict[str, Any], value: dict[str, Any], depth: int) -> Any:
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        required = schema.get("required", ())
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                out[key] = item
            elif item is None and key not in required and not self._accepts(sub, None):
                changed = True  # strict mode's null: leave it out, the default applies
            else:
                new = self._walk(sub, item, depth + 1)
                changed = changed or new is not item
                out[key] = new
        return out if changed else value

    def _array(self, schema: dict[str, Any], value: list[Any], depth: int) -> Any:
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        new = [
            self._walk(prefix[i] if i < len(prefix) else items, item, depth + 1)
            for i, item in enumerate(value)
        ]
        return value if all(a is b for a, b in zip(new, value)) else new


def _never(value: object) -> bool:
    return False
