"""What is measured: toolreg's paths, each peer's own paths, and the floors Python allows.

A registration path turns a function into an OpenAI ``{"type": "function", ...}`` tool
definition. A dispatch path turns (name, JSON argument string) into a string result for
the model: peers return the tool's raw value, which `render` turns into text exactly like
the floor does (str as is, anything else `json.dumps`), so every row pays the same for it.

A peer that is not installed is skipped ("not installed"); a peer whose API does not work
as expected is skipped with the error. Nothing is ever faked.
"""

import asyncio
import importlib.metadata
import importlib.util
import inspect
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "IMPORTS",
    "PEERS",
    "DispatchPath",
    "RegistrationPath",
    "dispatch_paths",
    "installed",
    "registration_paths",
    "render",
    "versions",
]

Fn = Callable[..., Any]
Call = Callable[[str, str], str]


def render(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _openai(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
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
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)


# -- peers: distribution name -> (top-level module, import statement for import time) -------
PEERS = {
    "langchain-core": "langchain_core",
    "openai-agents": "agents",
    "pydantic-ai-slim": "pydantic_ai",
    "transformers": "transformers",
    "mcp": "mcp",
}
IMPORTS = {
    "toolreg": "import toolreg",
    "langchain-core": (
        "from langchain_core.tools import StructuredTool\n"
        "from langchain_core.utils.function_calling import convert_to_openai_tool"
    ),
    "openai-agents": "from agents import function_tool",
    "pydantic-ai-slim": "from pydantic_ai.tools import Tool",
    "transformers": "from transformers.utils import get_json_schema",
    "mcp": "from mcp.server.mcpserver import MCPServer",
}


def installed(dist: str) -> bool:
    return importlib.util.find_spec(PEERS[dist]) is not None


def versions(dists: Sequence[str]) -> dict[str, str]:
    out = {}
    for dist in ["toolreg", *dists]:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


# -- registration -------------------------------------------------------------------------
def _toolreg_registration() -> list[RegistrationPath]:
    import toolreg
    from toolreg.formats import export_tools

    def registry(fn: Fn) -> Any:
        reg = toolreg.ToolRegistry()
        reg.register_tool(fn)
        return reg.get_tools()

    def tool(fn: Fn) -> Any:
        return export_tools([toolreg.Tool.from_function(fn)])

    return [
        RegistrationPath("toolreg", "toolreg", registry, "ToolRegistry().register_tool + get_tools"),
        RegistrationPath("toolreg (Tool)", "toolreg", tool, "Tool.from_function + export_tools"),
    ]


def _floor_registration() -> list[RegistrationPath]:
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


def _langchain_registration() -> RegistrationPath:
    from langchain_core.tools import StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    def register(fn: Fn) -> Any:
        return convert_to_openai_tool(StructuredTool.from_function(fn, parse_docstring=True))

    return RegistrationPath("langchain-core", "peer", register, "StructuredTool + convert")


def _agents_registration() -> RegistrationPath:
    from agents import function_tool
    from agents.models.chatcmpl_converter import Converter

    def register(fn: Fn) -> Any:
        return Converter.tool_to_openai(function_tool(fn))

    return RegistrationPath("openai-agents", "peer", register, "function_tool (strict schema)")


def _pydantic_ai_registration() -> RegistrationPath:
    from pydantic_ai.tools import Tool

    def register(fn: Fn) -> Any:
        d = Tool(fn).tool_def
        return _openai(d.name, d.description or "", d.parameters_json_schema)

    return RegistrationPath("pydantic-ai-slim", "peer", register, "Tool(fn).tool_def")


def _transformers_registration() -> RegistrationPath:
    from transformers.utils import get_json_schema

    return RegistrationPath("transformers", "peer", get_json_schema, "get_json_schema")


def _mcp_registration() -> RegistrationPath:
    from mcp.server.mcpserver.tools.base import Tool

    def register(fn: Fn) -> Any:
        t = Tool.from_function(fn)
        return _openai(t.name, t.description, t.parameters)

    return RegistrationPath(
        "mcp", "peer", register, "Tool.from_function; docstring kept whole, no param descriptions"
    )


_REGISTRATION = {
    "langchain-core": _langchain_registration,
    "openai-agents": _agents_registration,
    "pydantic-ai-slim": _pydantic_ai_registration,
    "transformers": _transformers_registration,
    "mcp": _mcp_registration,
}


def registration_paths(peers: Sequence[str]) -> tuple[list[RegistrationPath], dict[str, str]]:
    """toolreg's paths, the floors, and each selected peer's path; skipped peers with why."""
    paths = [*_toolreg_registration(), *_floor_registration()]
    skipped: dict[str, str] = {}
    for dist in peers:
        path = _load(dist, _REGISTRATION[dist], skipped)
        if path is not None:
            paths.append(path)
    return paths, skipped


def _load(dist: str, loader: Callable[[], Any], skipped: dict[str, str]) -> Any:
    if not installed(dist):
        skipped[dist] = "not installed"
        return None
    try:
        return loader()
    except Exception as exc:  # a changed API: skip with the reason, never fake
        skipped[dist] = f"failed: {type(exc).__name__}: {exc}"[:200]
        return None


# -- dispatch -----------------------------------------------------------------------------
def _toolreg_dispatch(fns: Sequence[Fn], loop: Any) -> DispatchPath:
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


def _floor_dispatch(fns: Sequence[Fn]) -> list[DispatchPath]:
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


def _langchain_dispatch(fns: Sequence[Fn], loop: Any) -> DispatchPath:
    from langchain_core.tools import StructuredTool

    tools = {fn.__name__: StructuredTool.from_function(fn, parse_docstring=True) for fn in fns}
    return DispatchPath(
        "langchain-core",
        "peer",
        call=lambda name, args: render(tools[name].invoke(json.loads(args))),
        note="tool.invoke(json.loads(args))",
    )


def _agents_dispatch(fns: Sequence[Fn], loop: Any) -> DispatchPath:
    from agents import function_tool
    from agents.tool_context import ToolContext

    tools = {fn.__name__: function_tool(fn) for fn in fns}

    async def acall(name: str, args: str) -> str:
        ctx = ToolContext(context=None, tool_name=name, tool_call_id="call_1", tool_arguments=args)
        return render(await tools[name].on_invoke_tool(ctx, args))

    return DispatchPath(
        "openai-agents", "peer", acall=acall, loop=loop, note="await on_invoke_tool(ctx, json)"
    )


def _pydantic_ai_dispatch(fns: Sequence[Fn], loop: Any) -> DispatchPath:
    from pydantic_ai.tools import Tool

    schemas = {fn.__name__: Tool(fn).function_schema for fn in fns}

    def call(name: str, args: str) -> str:
        fs = schemas[name]
        return render(fs.function(**fs.validator.validate_json(args)))

    return DispatchPath(
        "pydantic-ai-slim", "peer", call=call, note="validator.validate_json + fn (no agent run)"
    )


def _mcp_dispatch(fns: Sequence[Fn], loop: Any) -> DispatchPath:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")
    for fn in fns:
        server.add_tool(fn)

    async def acall(name: str, args: str) -> str:
        result = await server.call_tool(name, json.loads(args))
        return "".join(getattr(block, "text", "") for block in result.content)

    return DispatchPath(
        "mcp", "peer", acall=acall, loop=loop, note="await MCPServer.call_tool (tool manager)"
    )


_DISPATCH: dict[str, Callable[[Sequence[Fn], Any], DispatchPath] | None] = {
    "langchain-core": _langchain_dispatch,
    "openai-agents": _agents_dispatch,
    "pydantic-ai-slim": _pydantic_ai_dispatch,
    "transformers": None,
    "mcp": _mcp_dispatch,
}


def dispatch_paths(
    fns: Sequence[Fn], peers: Sequence[str], loop: asyncio.AbstractEventLoop
) -> tuple[list[DispatchPath], dict[str, str]]:
    """toolreg's dispatch, the floors, each selected peer's path; skipped peers with why."""
    paths = [_toolreg_dispatch(fns, loop), *_floor_dispatch(fns)]
    skipped: dict[str, str] = {}
    for dist in peers:
        factory = _DISPATCH[dist]
        if factory is None:
            skipped[dist] = "no dispatch path (schemas only)"
            continue
        path = _load(dist, lambda f=factory: f(fns, loop), skipped)
        if path is not None:
            paths.append(path)
    return paths, skipped
