"""Serve versions over MCP the way FastMCP does: listed once, any version callable."""

import asyncio

from mcp import Client

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, asgi_app

tools = ToolRegistry()


@tools.register_tool(name="search", version="1", read_only=True)
def search_v1(q: str) -> str:
    """Search the catalog. Use it when the user asks for a product."""
    return f"v1 found {q}"


@tools.register_tool(name="search", version="2", read_only=True)
def search_v2(q: str, limit: int = 5) -> str:
    """Search the catalog, `limit` hits at most. Use it when the user asks for a product."""
    return f"v2 found {q} (up to {limit})"


async def client(url: str) -> None:
    async with Client(url) as session:
        (listed,) = (await session.list_tools()).tools
        print(listed.name, listed.meta)  # search {'fastmcp': {'version': '2', 'versions': [...]}}
        latest = await session.call_tool("search", {"q": "tea"})
        print(latest.content[0].text)  # v2 found tea (up to 5)
        asked = {"fastmcp": {"version": "1"}}  # what FastMCP's client sends for version="1"
        older = await session.call_tool("search", {"q": "tea"}, meta=asked)  # type: ignore[arg-type]
        print(older.content[0].text)  # v1 found tea


with HttpServer(asgi_app(tools)) as server:
    asyncio.run(client(server.url))
