"""One adapter per peer: its registration path and its dispatch path, each its real API.

A peer that is not installed is skipped ("not installed"); a peer whose API does not work
as expected is skipped with the error. Nothing is ever faked. The rows every run has
(toolreg, the floors) live in `baselines`.
"""

import importlib.metadata
import importlib.util
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from baselines import (
    SCHEMA_FLOOR,
    DispatchPath,
    RegistrationPath,
    fastjsonschema_dispatch,
    floor_dispatch,
    floor_registration,
    openai_definition,
    render,
    toolreg_dispatch,
    toolreg_instrumented_dispatch,
    toolreg_registration,
)

__all__ = ["IMPORTS", "PEERS", "dispatch_paths", "installed", "registration_paths", "versions"]

Fn = Callable[..., Any]


# distribution name -> top-level module; and the import statement timed for each
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
    return _module_installed(PEERS[dist])


def _module_installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # e.g. a module blocked with sys.modules[name] = None
        return False


def versions(dists: Sequence[str]) -> dict[str, str]:
    out = {}
    for dist in ["toolreg", "fastjsonschema", *dists]:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


# -- registration -------------------------------------------------------------------------
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
        return openai_definition(d.name, d.description or "", d.parameters_json_schema)

    return RegistrationPath("pydantic-ai-slim", "peer", register, "Tool(fn).tool_def")


def _transformers_registration() -> RegistrationPath:
    from transformers.utils import get_json_schema

    return RegistrationPath("transformers", "peer", get_json_schema, "get_json_schema")


def _mcp_registration() -> RegistrationPath:
    from mcp.server.mcpserver.tools.base import Tool

    def register(fn: Fn) -> Any:
        t = Tool.from_function(fn)
        return openai_definition(t.name, t.description, t.parameters)

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
    paths = [*toolreg_registration(), *floor_registration()]
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
def _langchain_dispatch(fns: Sequence[Fn]) -> DispatchPath:
    from langchain_core.tools import StructuredTool

    tools = {fn.__name__: StructuredTool.from_function(fn, parse_docstring=True) for fn in fns}
    return DispatchPath(
        "langchain-core",
        "peer",
        call=lambda name, args: render(tools[name].invoke(json.loads(args))),
        note="tool.invoke(json.loads(args))",
    )


def _agents_dispatch(fns: Sequence[Fn]) -> DispatchPath:
    from agents import function_tool
    from agents.tool_context import ToolContext

    tools = {fn.__name__: function_tool(fn) for fn in fns}

    async def acall(name: str, args: str) -> str:
        ctx = ToolContext(context=None, tool_name=name, tool_call_id="call_1", tool_arguments=args)
        return render(await tools[name].on_invoke_tool(ctx, args))

    return DispatchPath(
        "openai-agents", "peer", acall=acall, note="await on_invoke_tool(ctx, json)"
    )


def _pydantic_ai_dispatch(fns: Sequence[Fn]) -> list[DispatchPath]:
    from pydantic_ai.tools import Tool

    schemas = {fn.__name__: Tool(fn).function_schema for fn in fns}

    def call(name: str, args: str) -> str:
        fs = schemas[name]
        return render(fs.function(**fs.validator.validate_json(args)))

    async def acall(name: str, args: str) -> str:
        fs = schemas[name]  # takes_ctx is False: the run context is never read
        return render(await fs.call(fs.validator.validate_json(args), None))  # type: ignore[arg-type]

    return [
        DispatchPath(
            "pydantic-ai-slim", "peer", call=call, note="validator.validate_json + fn(**args)"
        ),
        DispatchPath(
            "pydantic-ai-slim (call)",
            "peer",
            acall=acall,
            note="validate_json + await FunctionSchema.call (sync fn in a worker thread)",
        ),
    ]


def _mcp_dispatch(fns: Sequence[Fn]) -> DispatchPath:
    from mcp.server.mcpserver import MCPServer

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    server = MCPServer("bench")  # configures the root logger (a rich handler, INFO): undo it
    root.handlers[:] = handlers
    root.setLevel(level)
    for fn in fns:
        server.add_tool(fn)

    async def acall(name: str, args: str) -> str:
        result = await server.call_tool(name, json.loads(args))
        return "".join(getattr(block, "text", "") for block in result.content)

    return DispatchPath("mcp", "peer", acall=acall, note="await MCPServer.call_tool (tool manager)")


_DISPATCH: dict[str, Callable[[Sequence[Fn]], Any] | None] = {
    "langchain-core": _langchain_dispatch,
    "openai-agents": _agents_dispatch,
    "pydantic-ai-slim": _pydantic_ai_dispatch,
    "transformers": None,
    "mcp": _mcp_dispatch,
}


def dispatch_paths(
    fns: Sequence[Fn], peers: Sequence[str]
) -> tuple[list[DispatchPath], dict[str, str]]:
    """toolreg's dispatch, the floors, each selected peer's path; skipped ones with why."""
    paths = [toolreg_dispatch(fns), *floor_dispatch(fns)]
    skipped: dict[str, str] = {}
    if _module_installed("opentelemetry.sdk"):  # toolreg's own cost when traced
        paths.append(toolreg_instrumented_dispatch(fns))
    else:
        skipped["toolreg (instrumented)"] = "not installed (pip install opentelemetry-sdk)"
    if _module_installed("fastjsonschema"):  # a floor, so it runs with --quick too
        try:
            paths.append(fastjsonschema_dispatch(fns))
        except Exception as exc:  # a changed API: skip with the reason, never fake
            skipped[SCHEMA_FLOOR] = f"failed: {type(exc).__name__}: {exc}"[:200]
    else:
        skipped[SCHEMA_FLOOR] = "not installed (pip install fastjsonschema)"
    for dist in peers:
        factory = _DISPATCH[dist]
        if factory is None:
            reason = "no dispatch path (schemas only)" if installed(dist) else "not installed"
            skipped[dist] = reason
            continue
        found = _load(dist, lambda f=factory: f(fns), skipped)
        if found is not None:
            paths.extend(found if isinstance(found, list) else [found])
    return paths, skipped
