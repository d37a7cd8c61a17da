"""The MCP servers the `mcp` section measures, each serving the same two tools over
streamable HTTP (stateless) on 127.0.0.1: `python benchmarks/mcp_servers.py KIND PORT`.

- `toolreg`: `toolreg.mcp.serve(registry, "http")` (`asgi_app` under uvicorn);
- `mcpserver`: the SDK's high-level `MCPServer` (FastMCP's successor), `@server.tool()`;
- `lowlevel`: the SDK's low-level `Server`, with the handlers written by hand (the
  arguments go to the function unvalidated: the least a server can do);
- `app`: nothing; `mcp_servers:app` is toolreg's ASGI app for an outside `uvicorn`
  (the stock `--workers` run).

The several-workers runs use `python -m toolreg serve benchmarks/mcp_servers.py:registry
--workers N`. Each server is its own process, so that its CPU time is its own.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [p for p in (HERE, ROOT) if p not in sys.path[:2]]  # this checkout's toolreg

from toolreg import ToolRegistry  # noqa: E402

__all__ = ["add", "get_weather", "registry"]  # and `app`, made on first use

CITY_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def get_weather(city: str) -> dict[str, Any]:
    """Get the current weather of a city. Use it when the user asks about the weather."""
    return {"city": city, "temperature": 18, "unit": "c", "condition": "sunny"}


def add(a: int, b: int) -> int:
    """Add two integers. Use it for any addition."""
    return a + b


registry = ToolRegistry()
registry.register_tool(get_weather)
registry.register_tool(add)


def __getattr__(name: str) -> Any:  # `app` is built on first use (uvicorn imports it)
    if name == "app":
        from toolreg.mcp import asgi_app

        return asgi_app(registry)
    raise AttributeError(name)


def serve_mcpserver(port: int) -> None:
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("mcpserver", log_level="WARNING")
    server.tool()(get_weather)
    server.tool()(add)
    app = server.streamable_http_app(stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def serve_lowlevel(port: int) -> None:
    import mcp_types as types
    import uvicorn
    from mcp.server import Server

    listed = types.ListToolsResult(
        tools=[
            types.Tool(
                name="get_weather", description=get_weather.__doc__, input_schema=CITY_SCHEMA
            ),
            types.Tool(name="add", description=add.__doc__, input_schema=ADD_SCHEMA),
        ]
    )
    functions = {"get_weather": get_weather, "add": add}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        value = functions[params.name](**(params.arguments or {}))
        text = value if isinstance(value, str) else json.dumps(value)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server("lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main(kind: str, port: int) -> None:
    if kind == "toolreg":
        from toolreg.mcp import serve

        serve(registry, "http", port=port)
    elif kind == "mcpserver":
        serve_mcpserver(port)
    elif kind == "lowlevel":
        serve_lowlevel(port)
    else:
        raise SystemExit(f"unknown server kind {kind!r}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
