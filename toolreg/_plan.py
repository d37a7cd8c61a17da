"""A tool's call plan: everything dispatch needs, computed once per tool, then reused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._convert import ConversionError, Converter, converter_for
from ._introspect import MISSING
from ._validator import Problem, Validator
from .errors import InvalidArgumentsError
from .tool import Tool

__all__ = ["CallPlan", "plan_for"]


@dataclass(frozen=True, slots=True)
class CallPlan:
    validator: Validator
    converters: tuple[tuple[str, Converter], ...]
    null_means_default: frozenset[str]  # parameters whose null from the model means "default"
    absent_is_none: tuple[str, ...]  # ChatGLM3 "not required" parameters without a default
    context: tuple[tuple[str, str], ...]  # (parameter, "context" | "raw")
    positional: tuple[str, ...]  # positional-only parameters, in order
    reserved: frozenset[str]  # injected names the model may never send (even with **kwargs)

    def prepare(self, tool: Tool, args: dict[str, Any], coerce: bool) -> dict[str, Any]:
        """Validate (and coerce) `args`, then convert them; raise InvalidArgumentsError."""
        if self.null_means_default and not self.null_means_default.isdisjoint(args):
            args = {
                k: v for k, v in args.items() if v is not None or k not in self.null_means_default
            }
        problems = self.validator.validate(args)
        if problems and coerce:
            coerced = self.validator.coerce(args)
            if coerced is not args and isinstance(coerced, dict):
                retry = self.validator.validate(coerced)
                if not retry:
                    args, problems = coerced, retry
        reserved = self.reserved.intersection(args) if self.reserved else ()
        if problems or reserved:
            extra = [Problem((), f"unexpected property '{k}'") for k in sorted(reserved)]
            raise invalid_arguments(tool.name, [*problems, *extra])
        if self.converters:
            args = self._convert(tool, args)
        return args

    def _convert(self, tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(args)
        for name, conv in self.converters:
            if name in out:
                try:
                    out[name] = conv(out[name])
                except ConversionError as exc:
                    raise invalid_arguments(
                        tool.name, [Problem((name, *exc.path), exc.message)]
                    ) from None
        return out


def invalid_arguments(tool: str, problems: list[Problem]) -> InvalidArgumentsError:
    lines = [f"{p.location()}: {p.message}" if p.path else p.message for p in problems]
    if len(lines) == 1:
        message = f"Invalid arguments for tool '{tool}': {lines[0]}."
    else:
        message = f"Invalid arguments for tool '{tool}':\n" + "\n".join(f"- {x}" for x in lines)
    return InvalidArgumentsError(
        message, tool_name=tool, problems=[(p.location(), p.message) for p in problems]
    )


def plan_for(tool: Tool) -> CallPlan:
    """The tool's plan, built on first use and cached on the tool."""
    plan: CallPlan | None = tool.runtime.get("plan")
    if plan is None:
        plan = _build(tool)
        tool.runtime["plan"] = plan
    return plan


def _build(tool: Tool) -> CallPlan:
    properties = tool.parameters.get("properties", {})
    defs = tool.parameters.get("$defs", {})
    converters: list[tuple[str, Converter]] = []
    null_default: set[str] = set()
    absent: list[str] = []
    context: list[tuple[str, str]] = []
    positional: list[str] = []
    for p in tool.params:
        if p.inject is not None:
            context.append((p.name, p.inject))
            continue
        if p.var_keyword:
            continue
        if p.positional_only:
            positional.append(p.name)
        conv = converter_for(p.annotation, tool.name)
        if conv is not None:
            converters.append((p.name, conv))
        schema = properties.get(p.name, {})
        if p.default is not MISSING and not Validator({**schema, "$defs": defs}).is_valid(None):
            null_default.add(p.name)
        if p.default is MISSING and not p.required:
            absent.append(p.name)
    return CallPlan(
        validator=Validator(tool.parameters),
        converters=tuple(converters),
        null_means_default=frozenset(null_default),
        absent_is_none=tuple(absent),
        context=tuple(context),
        positional=tuple(positional),
        reserved=frozenset(n for n, _ in context) if tool.accepts_extra_keys else frozenset(),
    )
