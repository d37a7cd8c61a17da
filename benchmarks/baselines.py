"""The rows every run has: toolreg's own paths and the floors that Python itself allows.

A registration path turns a function into an OpenAI ``{"type": "function", ...}`` tool
definition (or, for a floor, does only part of that work). A dispatch path turns (name,
JSON argument string) into a string result for the model. Peers return the tool's raw
value, which `render` turns into text exactly like the floor does (str as is, anything else
`json.dumps`), so every row pays the same for it.
"""

import inspect
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DispatchPath",
    "RegistrationPath",
    "floor_dispatch",
    "floor_registration",
    "openai_definition",
    "render",
    "toolreg_dispatch",
    "toolreg_registration",
]

Fn = Callable[..., Any]
Call = Callable[[str, str], str]


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

    return [
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
