"""Reshaped tools: a tool you do not own, renamed and described for your model.

```python
orders = reshaped(crm, {
    "get_orders_v2": Reshape(
        name="list_orders",
        description="The signed-in customer's orders, newest first. Use it for order questions.",
        args={
            "cust_id": Arg(from_context=lambda deps: deps["customer"]),  # never the model's
            "rgn": Arg(name="region", narrow={"enum": ["eu", "us"]}),
            "max": Arg(name="limit", narrow={"maximum": 50}, default=10),
            "debug": Arg(value=False),
        },
    ),
})
```

`reshaped(toolset, {name: Reshape(...)})` is a view (like `prefixed`) over any toolset: a
registry, a `Mount` of an MCP server, an `OpenAPI` toolset. Each tool named in it is offered,
exported (to every format), searched, listed by `toolreg serve` and called as reshaped; the
other tools are as they are. The original is no longer reachable under its own name through
the view: a model cannot go around a hidden argument.

What a `Reshape` does to a tool: a new `name` and `description`, `examples` (argument
objects in the new names; by default the original's, renamed, those that still fit), and,
per argument (`Arg`, keyed by the original's argument name):

- `name`, `description`: what the model reads;
- `narrow={...}`: JSON Schema keywords laid over the argument's schema (`{"enum": [...]}`
  for a free string, `{"maximum": 50}`); a narrowing that is not one (the new schema admits
  a value the tool refuses) is a `ToolDefinitionError` here, naming the tool, the argument
  and the fix (the rules: `toolreg.validation.narrowing`);
- `examples=[...]`: example values of the argument;
- `default=`: the model may leave it out, and this value is sent; `required=True`: it
  must give an argument the tool has as optional;
- hidden from the model, and sent for it: `value=` (a fixed JSON value, checked against
  the tool's schema here), `from_context=` (a function of the call's `context=`, the deps:
  `lambda deps: deps.user_id`; a call without a context is then the application's
  `MissingContextError`), or `hidden=True` (an optional argument left out: its default
  applies).

A call is validated against the reshaped schema, then mapped back (names, hidden values,
defaults) and handed to the original tool, whose own validation, coercion and conversion
run too (the reshaped tool keeps the original's options: timeout, confirmation, result
filter...). What the model reads of a refusal is always in the reshaped terms: the
original's problems with a visible argument are said with the argument's new name and the
reshaped tool's name; a problem with a value the application supplies (a hidden argument)
is not the model's to fix: it reads `Tool 'name' was not run: a value the application
supplies for it is not valid.`, and the application's log gets the details (a WARNING on
"toolreg.toolsets"). Whole-object rules of the original's schema (a top-level `allOf`,
`dependentRequired`...) are left out of the reshaped schema when arguments are renamed or
hidden (they name the old arguments); the original's own validation still holds them.

Input and output guardrails, `confirm=` and hooks see the call as the model made it: the
reshaped tool and its arguments; a `lock=` function of the original reads the arguments in
the original's names (with its defaults and fixed values, not those from the context).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..dispatch import DispatchSettings
from ..dispatch.binding import bind, invalid_arguments, prepare
from ..dispatch.calling import context_value
from ..errors import (
    InvalidArgumentsError,
    ToolDefinitionError,
    ToolExecutionError,
    UsageError,
    with_article,
)
from ..jsonvalues import copy_json
from ..params import ToolContext
from ..tool import OPTIONS, Tool
from ..validation import Problem
from ..validation.keywords import render
from ..validation.narrowing import narrowing_problem
from ..validation.untrusted import pattern_budget
from .base import StepContext, Toolset, label_of
from .versions import versions_of
from .views import _View

__all__ = ["Arg", "Reshape", "Reshaped", "reshaped"]


def _warn(message: str, *args: object) -> None:
    """A warning on the "toolreg.toolsets" logger (`logging` is imported then, not by
    `import toolreg`)."""
    import logging

    logging.getLogger("toolreg.toolsets").warning(message, *args)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_ROOT_KEPT = ("type", "properties", "required", "additionalProperties", "$defs", "definitions")
_NOT_CARRIED = ("flatten", "examples", "output_schema")  # set apart (see `_build`)


@dataclass(frozen=True, slots=True)
class Arg:
    """How one argument of a reshaped tool changes (see the module): what the model reads
    of it (`name`, `description`, `narrow`, `examples`, `default`, `required`), or that it
    is hidden and what is sent for it (`value`, `from_context`, `hidden`)."""

    name: str | None = None
    description: str | None = None
    narrow: Mapping[str, Any] | None = None
    examples: Sequence[Any] | None = None
    default: Any = MISSING
    required: bool = False
    value: Any = MISSING
    from_context: Callable[[Any], Any] | None = None
    hidden: bool = False

    @property
    def hides(self) -> bool:
        """Whether the model does not see the argument."""
        return self.hidden or self.value is not MISSING or self.from_context is not None


@dataclass(frozen=True, slots=True)
class Reshape:
    """How one tool changes (see the module): its `name`, `description`, `examples` (in the
    new argument names; None: the original's, renamed), and its arguments' `Arg`s, by the
    original's argument names."""

    name: str | None = None
    description: str | None = None
    args: Mapping[str, Arg] = field(default_factory=dict)
    examples: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class _Mapping:
    """How a reshaped call goes back to the original: visible names (new -> original), and
    what is sent for the arguments the model does not see."""

    tool: str  # the reshaped tool's name
    original: Tool
    back: dict[str, str]
    renamed: dict[str, str]  # original -> new, the visible arguments
    defaults: dict[str, Any]  # original name -> the value sent when the model leaves it out
    fixed: dict[str, Any]
    from_context: dict[str, Callable[[Any], Any]]
    hidden: frozenset[str]
    reserved: frozenset[str]  # original names the model may not send as extra keys

    def arguments(self, given: dict[str, Any], deps: Any) -> dict[str, Any]:
        """The original's arguments for the model's (validated) `given`."""
        args: dict[str, Any] = {}
        for key, value in given.items():
            original = self.back.get(key)
            if original is None:  # an extra key of an open schema
                if key in self.reserved:
                    problem = Problem((), f"unexpected property {render(key)}", key)
                    raise invalid_arguments(self.tool, [problem])
                original = key
            args[original] = value
        for name, value in self.defaults.items():
            if name not in args:
                args[name] = copy.deepcopy(value)
        for name, value in self.fixed.items():
            args[name] = copy.deepcopy(value)
        for name, make in self.from_context.items():
            args[name] = context_value(make, deps, self.tool)
        return args

    def reported(self, err: InvalidArgumentsError) -> Exception:
        """The original's refusal, as the model reads it of the reshaped tool."""
        found: list[Problem] = [p for p in err.found if isinstance(p, Problem)]
        if not found:
            found = [Problem((), "the arguments were refused")]
        theirs = [p for p in found if _head(p) in self.hidden]
        if theirs:
            _warn(
                "the reshaped tool %r: %r refused the value the application supplied for "
                "its hidden argument %r: %s",
                self.tool,
                self.original.name,
                _head(theirs[0]),
                theirs[0].message,
            )
            return ToolExecutionError(
                f"Tool '{self.tool}' was not run: a value the application supplies for it is "
                "not valid.",
                tool_name=self.tool,
            )
        return invalid_arguments(self.tool, [self._renamed(p) for p in found])

    def _renamed(self, problem: Problem) -> Problem:
        if problem.path:
            new = self.renamed.get(str(problem.path[0]))
            if new is None:
                return problem
            return Problem((new, *problem.path[1:]), problem.message, problem.key)
        new = self.renamed.get(str(problem.key)) if problem.key is not None else None
        if new is None:
            return problem
        message = problem.message.replace(render(problem.key), render(new))
        return Problem((), message, new)


def _head(problem: Problem) -> str | int | None:
    return problem.path[0] if problem.path else problem.key


class _Builder:
    """One `Reshape` applied to one tool: the reshaped `Tool`, or a `ToolDefinitionError`
    naming the tool, the argument and the fix."""

    def __init__(self, original: Tool, spec: Reshape, settings: Callable[[], DispatchSettings]):
        self.original = original
        self.spec = spec
        self.settings = settings
        self.where = f"reshaped() of the tool '{original.name}'"

    def error(self, problem: str, fix: str, arg: str | None = None) -> ToolDefinitionError:
        return ToolDefinitionError(problem, function=self.where, parameter=arg, fix=fix)

    def build(self) -> Tool:
        original, spec = self.original, self.spec
        parameters = original.parameters
        properties: dict[str, Any] = parameters.get("properties", {})
        required = set(parameters.get("required", ()))
        unknown = [a for a in spec.args if a not in properties]
        if unknown:
            raise self.error(
                f"it has no argument {', '.join(map(repr, unknown))} (it has: "
                f"{', '.join(properties) or 'none'})",
                "key args= by the tool's own argument names",
                unknown[0],
            )
        renamed: dict[str, str] = {}
        new_properties: dict[str, Any] = {}
        new_required: list[str] = []
        defaults: dict[str, Any] = {}
        fixed: dict[str, Any] = {}
        from_context: dict[str, Callable[[Any], Any]] = {}
        hidden: set[str] = set()
        for name, schema in properties.items():
            arg = spec.args.get(name, Arg())
            self.check_arg(name, arg)
            if arg.hides:
                self.hide(name, arg, name in required, fixed, from_context)
                hidden.add(name)
                continue
            new = arg.name or name
            if new in new_properties:
                raise self.error(
                    f"two arguments would be named {new!r}", "give each its own name", name
                )
            renamed[name] = new
            new_properties[new] = self.shaped(name, schema, arg)
            if arg.default is not MISSING:
                defaults[name] = arg.default
            elif arg.required or name in required:
                new_required.append(new)
        moved = bool(hidden) or any(new != old for old, new in renamed.items())
        schema = self.object_schema(new_properties, new_required, moved)
        mapping = _Mapping(
            tool=spec.name or original.name,
            original=original,
            back={new: old for old, new in renamed.items()},
            renamed=renamed,
            defaults=defaults,
            fixed=fixed,
            from_context=from_context,
            hidden=frozenset(hidden),
            reserved=frozenset((hidden | set(renamed)) - set(new_properties)),
        )
        return self.tool(schema, mapping)

    def check_arg(self, name: str, arg: Arg) -> None:
        if not isinstance(arg, Arg):
            raise self.error(
                f"args[{name!r}] is {type(arg).__name__}, not an Arg", "pass Arg(...)", name
            )
        ways = [
            w
            for w, given in (
                ("value=", arg.value is not MISSING),
                ("from_context=", arg.from_context is not None),
                ("hidden=True", arg.hidden),
            )
            if given
        ]
        if len(ways) > 1:
            raise self.error(
                f"{' and '.join(ways)} both hide it", "give one of them: what is sent", name
            )
        shown = [
            k
            for k, given in (
                ("name", arg.name is not None),
                ("description", arg.description is not None),
                ("narrow", arg.narrow is not None),
                ("examples", arg.examples is not None),
                ("default", arg.default is not MISSING),
                ("required", arg.required),
            )
            if given
        ]
        if ways and shown:
            raise self.error(
                f"{ways[0]} hides it, so {', '.join(shown)} would never be read",
                f"drop {', '.join(shown)}, or {ways[0]}",
                name,
            )
        if arg.name is not None and (
            not isinstance(arg.name, str) or not _ARG_NAME.fullmatch(arg.name)
        ):
            raise self.error(
                f"name={arg.name!r} is not an argument name",
                "a letter or _, then letters, digits or _ (64 at most)",
                name,
            )
        if arg.description is not None and not isinstance(arg.description, str):
            raise self.error("description must be a string", "pass description='...'", name)
        if arg.from_context is not None and not callable(arg.from_context):
            raise self.error(
                "from_context must be a function of the call's context",
                "pass from_context=lambda deps: deps['user_id']",
                name,
            )
        if arg.default is not MISSING and arg.required:
            raise self.error(
                "default= and required=True contradict each other", "give one of them", name
            )
        if not isinstance(arg.required, bool) or not isinstance(arg.hidden, bool):
            raise self.error("required and hidden are True or False", "pass True", name)

    def hide(
        self,
        name: str,
        arg: Arg,
        is_required: bool,
        fixed: dict[str, Any],
        from_context: dict[str, Callable[[Any], Any]],
    ) -> None:
        if arg.value is not MISSING:
            fixed[name] = self.json_value(name, arg.value, "value")
            self.refused(name, fixed[name], "value")
        elif arg.from_context is not None:
            from_context[name] = arg.from_context
        elif is_required:
            raise self.error(
                "hidden=True: it is required, so the tool cannot do without a value",
                "send one for it: Arg(value=...) or Arg(from_context=lambda deps: ...)",
                name,
            )

    def json_value(self, name: str, value: Any, what: str) -> Any:
        try:
            copied = copy_json(value)
            json.dumps(copied, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            raise self.error(
                f"{what}={value!r} is not a JSON value", f"pass a JSON value as {what}=", name
            ) from None
        return copied

    def refusal(self, name: str) -> Callable[[Any], str | None]:
        """The original's own answer for one value of the argument `name`."""
        validator = self.original.plan.validator

        def why(value: Any) -> str | None:
            if validator.untrusted:
                with pattern_budget():
                    problems = validator.validate({name: value})
            else:
                problems = validator.validate({name: value})
            mine = [p for p in problems if p.path[:1] == (name,)]
            if not mine:
                return None
            return "; ".join(
                p.message if p.path == (name,) else f"{p.location()}: {p.message}" for p in mine[:3]
            )

        return why

    def refused(self, name: str, value: Any, what: str) -> None:
        why = self.refusal(name)(value)
        if why is not None:
            raise self.error(
                f"{what}={_shown(value)} is refused by the tool: {why}",
                f"pass {with_article(what)} the tool's schema for {name!r} accepts",
                name,
            )

    def shaped(self, name: str, schema: Any, arg: Arg) -> Any:
        """The argument's schema as the model reads it."""
        out = copy_json(schema)
        if arg.narrow is not None:
            if not isinstance(arg.narrow, Mapping) or not arg.narrow:
                raise self.error(
                    "narrow= takes JSON Schema keywords", "e.g. narrow={'enum': ['eu', 'us']}", name
                )
            narrow = self.json_value(name, dict(arg.narrow), "narrow")
            if not isinstance(out, dict):
                raise self.error(
                    "its schema is true or false, not one to narrow", "drop narrow=", name
                )
            problem = narrowing_problem(out, narrow, self.refusal(name))
            if problem is not None:
                raise self.error(
                    f"narrow={_shown(narrow)} is not a narrowing: {problem}",
                    "narrow within what the tool accepts: an enum of values it takes, bounds "
                    "inside its own",
                    name,
                )
            out.update(narrow)
        if arg.description is not None:
            out = {**out, "description": arg.description} if isinstance(out, dict) else out
        if arg.examples is not None:
            if isinstance(arg.examples, (str, bytes, Mapping)) or not isinstance(
                arg.examples, Sequence
            ):
                raise self.error("examples= takes a list of values", "examples=['eu']", name)
            values = self.json_value(name, list(arg.examples), "examples")
            for value in values:
                self.refused(name, value, "example")
            out = {**out, "examples": values}
        if arg.default is not MISSING:
            value = self.json_value(name, arg.default, "default")
            self.refused(name, value, "default")
            out = {**out, "default": value}
        return out

    def object_schema(
        self, properties: dict[str, Any], required: list[str], moved: bool
    ) -> dict[str, Any]:
        parameters = self.original.parameters
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        for key, value in parameters.items():
            if key in ("type", "properties", "required"):
                continue
            if key in _ROOT_KEPT or not moved:  # the rest names the old arguments
                schema[key] = copy_json(value)
        return schema

    def tool(self, schema: dict[str, Any], mapping: _Mapping) -> Tool:
        original, spec = self.original, self.spec
        context, raw = "_toolreg_context", "_toolreg_raw"
        while context in schema["properties"] or raw in schema["properties"]:
            context, raw = context + "_", raw + "_"
        function, twin = _forwarders(mapping, context, raw, self.settings)
        options = {k: getattr(original, k) for k in OPTIONS if k not in _NOT_CARRIED}
        if callable(original.lock):  # a function of the arguments: of the original's names
            options["lock"] = _lock_of(original.lock, mapping)
        if spec.description is not None and not isinstance(spec.description, str):
            raise self.error("description must be a string", "pass description='...'")
        try:
            tool = Tool.from_schema(
                mapping.tool,
                schema,
                function,
                description=original.description if spec.description is None else spec.description,
                untrusted=original.plan.validator.untrusted,
                context_parameter=context,
                raw_context_parameter=raw,
                async_function=twin,
                examples=self.examples(mapping, schema),
                **options,
            )
        except ToolDefinitionError as exc:
            raise self.error(exc.problem, exc.fix or "", exc.parameter) from None
        needs = (*original.plan.needs_context, *mapping.from_context)
        return replace(
            tool,
            plan=replace(tool.plan, needs_context=needs),
            options=replace(tool.options, output_schema=original.output_schema),
            schema_changes=original.schema_changes,
            description_source=original.description_source
            if spec.description is None
            else "argument",
        )

    def examples(self, mapping: _Mapping, schema: dict[str, Any]) -> Any:
        """The reshaped tool's examples: the spec's, or the original's renamed that fit."""
        if self.spec.examples is not None:
            return self.spec.examples
        out = []
        for example in self.original.examples:
            moved = {mapping.renamed[k]: v for k, v in example.items() if k in mapping.renamed}
            out.append(moved)
        if not out:
            return ()
        from ..validation import Validator

        checker = Validator(schema)
        return [e for e in out if not checker.validate(e)]


def _lock_of(lock: Callable[[dict[str, Any]], Any], mapping: _Mapping) -> Callable[..., Any]:
    """The original's `lock=` function, asked about a reshaped call: it reads the arguments
    in the original's names, with the defaults and fixed values sent for it (not the values
    from the context: they are made when the call runs, after the lock is chosen)."""

    def chosen(arguments: dict[str, Any]) -> Any:
        args = {mapping.back.get(k, k): v for k, v in arguments.items()}
        for name, value in (*mapping.defaults.items(), *mapping.fixed.items()):
            args.setdefault(name, copy.deepcopy(value))
        return lock(args)

    return chosen


def _forwarders(
    mapping: _Mapping, context: str, raw: str, settings: Callable[[], DispatchSettings]
) -> tuple[Callable[..., Any], Any]:
    """The reshaped tool's function (and async twin, for an original with one): each maps
    the call back and calls the original's, after the original's own checks."""
    original = mapping.original

    def prepared(given: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        ctx: ToolContext[Any] = given.pop(context)
        deps = given.pop(raw)
        plain = ctx.deps
        args = mapping.arguments(given, plain)
        now = settings()
        coerce = now.coerce if original.coerce is None else original.coerce
        try:
            checked = prepare(original, args, coerce, now.max_depth, now.errors, deps)
        except InvalidArgumentsError as err:
            raise mapping.reported(err) from err.__cause__
        return bind(original, checked, deps, ctx.call_id, now.errors, tool_context=ctx)

    if original.is_async:

        async def forward_async(**given: Any) -> Any:
            positional, keywords = prepared(given)
            return await original.function(*positional, **keywords)

        _name(forward_async, mapping)
        return forward_async, None

    def forward(**given: Any) -> Any:
        positional, keywords = prepared(given)
        return original.function(*positional, **keywords)

    _name(forward, mapping)
    twin = original.async_function
    if twin is None:
        return forward, None

    async def forward_twin(**given: Any) -> Any:
        positional, keywords = prepared(given)
        return await twin(*positional, **keywords)

    _name(forward_twin, mapping)
    return forward, forward_twin


def _name(function: Any, mapping: _Mapping) -> None:
    function.__name__ = function.__qualname__ = f"reshaped:{mapping.original.name}"
    function.__module__ = "toolreg.toolsets.reshape"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Reshaped(_View):
    """`inner`, with the tools named in `shapes` reshaped (see `reshaped`, which checks
    the shapes and makes one)."""

    def __init__(self, inner: Toolset, shapes: Mapping[str, Reshape]) -> None:
        super().__init__(inner)
        self.shapes = dict(shapes)
        self.label = f"reshaped({label_of(inner)}, {', '.join(self.shapes)})"
        self._names = {spec.name or name: name for name, spec in self.shapes.items()}
        self._built: dict[str, tuple[Tool, Tool | None]] = {}  # original -> (it, reshaped)

    def build(self, tool: Tool) -> Tool:
        """The reshape of the inner tool `tool`, built now (a `ToolDefinitionError` when
        it does not fit), and kept for as long as `tool` is the inner one."""
        built = _Builder(tool, self.shapes[tool.name], self.dispatch_settings).build()
        self._built[tool.name] = (tool, built)
        return built

    def shaped(self, tool: Tool) -> Tool | None:
        """The reshape of the inner tool `tool`, built once per inner tool object; None
        (and a warning) when it no longer fits (a mount's server changed the tool)."""
        known = self._built.get(tool.name)
        if known is not None and known[0] is tool:
            return known[1]
        try:
            return self.build(tool)
        except ToolDefinitionError as exc:
            _warn("%s leaves out the tool %r, which no longer fits: %s", self.label, tool.name, exc)
            self._built[tool.name] = (tool, None)
            return None

    def _swap(self, tools: list[Tool]) -> list[Tool]:
        out = []
        for tool in tools:
            if tool.name in self.shapes:
                shaped = self.shaped(tool)
                if shaped is None:
                    continue
                tool = shaped
            elif tool.name in self._names:
                continue  # a reshaped tool took its name (checked at construction)
            out.append(tool)
        return out

    def tools(self) -> list[Tool]:
        return self._swap(self.inner.tools())

    def offer(self, step: StepContext) -> list[Tool]:
        return self._swap(self.inner.offer(step))

    def get(self, name: str) -> Tool | None:
        original = self._names.get(name)
        if original is not None:
            tool = self.inner.get(original)
            return None if tool is None else self.shaped(tool)
        if name in self.shapes:
            return None  # only under its new name
        return self.inner.get(name)

    def versions(self, name: str) -> list[Tool]:
        """A reshaped tool's one version (the reshape of the inner tool's own); the other
        tools' as the inner toolset has them."""
        if name in self._names or name in self.shapes:
            tool = self.get(name)
            return [] if tool is None else [tool]
        return versions_of(self.inner, name)


def reshaped(toolset: Toolset, shapes: Mapping[str, Reshape]) -> Reshaped:
    """`toolset` with each tool named in `shapes` reshaped as its `Reshape` says (see the
    module): the other tools as they are. Every reshape is built now: a name the toolset
    does not have, an argument the tool does not have, a narrowing that admits what the
    tool refuses, a fixed value it refuses, a new name another tool has, are
    `ToolDefinitionError`s (a `UsageError` for what is not a toolset or a Reshape)."""
    if not isinstance(toolset, Toolset):
        raise UsageError(
            f"reshaped() takes a toolset (a ToolRegistry, a Mount, or a view of them), not "
            f"{type(toolset).__name__}"
        )
    if not isinstance(shapes, Mapping) or not shapes:
        raise UsageError(
            "reshaped(toolset, shapes): shapes maps tool names to Reshape(...), e.g. "
            "reshaped(registry, {'get_orders': Reshape(name='orders')})"
        )
    for name, spec in shapes.items():
        if not isinstance(spec, Reshape):
            raise UsageError(f"reshaped(): {name!r} maps to {type(spec).__name__}, not a Reshape")
        if spec.name is not None and not isinstance(spec.name, str):
            raise UsageError(f"reshaped(): the new name of {name!r} must be a string")
    view = Reshaped(toolset, shapes)
    held = {tool.name for tool in toolset.tools()}
    for name in shapes:
        tool = toolset.get(name) if isinstance(name, str) else None
        if tool is None:
            raise UsageError(
                f"reshaped(): {label_of(toolset)} has no tool {name!r} (it has: "
                f"{', '.join(sorted(held)[:20]) or 'none'})"
            )
        view.build(tool)
    taken: dict[str, str] = {}
    for name, spec in shapes.items():
        new = spec.name or name
        if new in taken:
            raise UsageError(f"reshaped(): {taken[new]!r} and {name!r} would both be named {new!r}")
        taken[new] = name
        if new != name and new in held and new not in shapes:
            raise UsageError(
                f"reshaped(): {name!r} would be named {new!r}, the name of another tool of "
                f"{label_of(toolset)}; choose another name"
            )
    return view
