"""The rows every run has: toolreg's own paths and the floors.

The floors are what Python itself allows (plus docstring_parser, which toolreg uses too)
and, for dispatch, a compiled JSON Schema validator (fastjsonschema, when installed).

A registration path turns a function into an OpenAI ``{"type": "function", ...}`` tool
definition (or, for a floor, does only part of that work). A dispatch path turns (name,
JSON argument string) into a string result for the model. Peers return the tool's raw
value, which `render` turns into text exactly like the floor does (str as is, anything else
`json.dumps`), so every row pays the same for it.
"""

import copy
import inspect
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "SCHEMA_FLOOR",
    "DispatchPath",
    "RegistrationPath",
    "fastjsonschema_dispatch",
    "floor_dispatch",
    "floor_registration",
    "openai_definition",
    "render",
    "toolreg_dispatch",
    "toolreg_instrumented_dispatch",
    "toolreg_registration",
]

Fn = Callable[..., Any]
Call = Callable[[str, str], str]
SCHEMA_FLOOR = "floor: json.loads + fastjsonschema + fn"


def render(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def openai_definition(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


@dataclass
class RegistrationPath:
    label: str
    kind: str  # "toolreg", "peer" or "floor"
    register: Callable[[Fn], Any]
    note: str = ""


@dataclass
class DispatchPath:
    label: str
    kind: str
    call: Call | None = None  # sync: (name, json) -> str
    acall: Callable[[str, str], Any] | None = None  # async: awaitable of str
    note: str = ""
    unsupported: dict[str, str] = field(default_factory=dict)  # tool name -> why, not timed


def toolreg_registration() -> list[RegistrationPath]:
    import toolreg
    from toolreg.formats import export_tools

    def registry(fn: Fn) -> Any:
        reg = toolreg.ToolRegistry()
        reg.register_tool(fn)
        return reg.get_tools()

    def tool(fn: Fn) -> Any:
        return export_tools([toolreg.Tool.from_function(fn)])

    return [
        RegistrationPath(
            "toolreg", "toolreg", registry, "ToolRegistry().register_tool + get_tools"
        ),
        RegistrationPath("toolreg (Tool)", "toolreg", tool, "Tool.from_function + export_tools"),
    ]


def floor_registration() -> list[RegistrationPath]:
    import docstring_parser

    google = docstring_parser.DocstringStyle.GOOGLE

    def hints(fn: Fn) -> Any:
        return inspect.signature(fn), typing.get_type_hints(fn, include_extras=True)

    def everything(fn: Fn) -> Any:
        # The three inputs every registration reads, in one path (the target's floor).
        return (
            inspect.signature(fn),
            typing.get_type_hints(fn, include_extras=True),
            docstring_parser.parse(fn.__doc__, style=google),
        )

    return [
        RegistrationPath(
            "floor: signature + hints + docstring",
            "floor",
            everything,
            "inspect + get_type_hints + docstring_parser (GOOGLE)",
        ),
        RegistrationPath("floor: signature + hints", "floor", hints, "inspect + get_type_hints"),
        RegistrationPath(
            "floor: docstring (Google)",
            "floor",
            lambda fn: docstring_parser.parse(fn.__doc__, style=google),
            "docstring_parser.parse, style=GOOGLE",
        ),
        RegistrationPath(
            "floor: docstring (auto)",
            "floor",
            lambda fn: docstring_parser.parse(fn.__doc__),
            "docstring_parser.parse, style auto-detected",
        ),
    ]


def toolreg_dispatch(fns: Sequence[Fn]) -> DispatchPath:
    import toolreg

    reg = toolreg.ToolRegistry()
    for fn in fns:
        reg.register_tool(fn)

    def call(name: str, args: str) -> str:
        result = reg.dispatch_tool(name, args)
        if not result.ok:
            raise RuntimeError(result.content)
        return result.content

    return DispatchPath("toolreg", "toolreg", call=call, note="reg.dispatch_tool(name, json)")


def toolreg_instrumented_dispatch(fns: Sequence[Fn]) -> DispatchPath:
    """toolreg's dispatch with `toolreg.instrument()` on: an SDK tracer and meter provider that
    record every span and metric (and export nothing). Instrumentation is process-wide, so
    it is switched on around each call only: the other rows measure it off."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    import toolreg
    from toolreg.observe import OBSERVER

    reg = toolreg.ToolRegistry()
    for fn in fns:
        reg.register_tool(fn)
    toolreg.instrument(TracerProvider(), MeterProvider())
    observer, OBSERVER.current = OBSERVER.current, None

    def call(name: str, args: str) -> str:
        OBSERVER.current = observer
        try:
            result = reg.dispatch_tool(name, args)
        finally:
            OBSERVER.current = None
        if not result.ok:
            raise RuntimeError(result.content)
        return result.content

    note = "reg.dispatch_tool with instrument() on (SDK providers, no exporter)"
    return DispatchPath("toolreg (instrumented)", "toolreg", call=call, note=note)


def floor_dispatch(fns: Sequence[Fn]) -> list[DispatchPath]:
    table = {fn.__name__: fn for fn in fns}
    decoded: dict[str, dict[str, Any]] = {}
    loads = json.loads

    def direct(name: str, args: str) -> Any:
        kwargs = decoded.get(args)
        if kwargs is None:  # decoded once, outside the timed loop (the warm-up call)
            kwargs = decoded[args] = loads(args)
        return table[name](**kwargs)

    return [
        DispatchPath("floor: fn(**kwargs)", "floor", call=direct, note="arguments pre-decoded"),
        DispatchPath(
            "floor: json.loads + fn",
            "floor",
            call=lambda name, args: table[name](**loads(args)),
            note="the baseline for the target",
        ),
        DispatchPath(
            "floor: json.loads + fn + render",
            "floor",
            call=lambda name, args: render(table[name](**loads(args))),
            note="text result, like toolreg",
        ),
    ]


def fastjsonschema_dispatch(fns: Sequence[Fn]) -> DispatchPath:
    """`fn(**validate(json.loads(s)))`, `validate` compiled by fastjsonschema from the tool's
    own parameters schema (as toolreg exports it) once, before timing.

    fastjsonschema's validator returns the data (with schema defaults filled in); nothing
    is converted (an enum stays a string) and the result is not rendered to text. A schema
    that fastjsonschema cannot compile makes that tool unsupported for this path.
    """
    import fastjsonschema

    import toolreg

    reg = toolreg.ToolRegistry()
    for fn in fns:
        reg.register_tool(fn)
    table: dict[str, tuple[Fn, Callable[[Any], Any]]] = {}
    unsupported: dict[str, str] = {}
    for fn in fns:
        name = fn.__name__
        schema = copy.deepcopy(reg[name].parameters)  # the registry's copy stays untouched
        try:
            table[name] = (fn, fastjsonschema.compile(schema))
        except Exception as exc:  # e.g. a keyword or $ref form it does not support
            unsupported[name] = f"fastjsonschema.compile: {type(exc).__name__}: {exc}"[:200]
    loads = json.loads

    def call(name: str, args: str) -> Any:
        fn, validate = table[name]
        return fn(**validate(loads(args)))

    return DispatchPath(
        SCHEMA_FLOOR,
        "floor",
        call=call,
        note="validator compiled once from the tool's schema; no render",
        unsupported=unsupported,
    )
