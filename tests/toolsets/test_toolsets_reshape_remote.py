"""Reshaped tools you do not own: a mounted MCP server's tool and an OpenAPI operation (a real
FastAPI app on 127.0.0.1), reshaped the same way as local ones; a reshaped toolset served by
`toolreg serve` (HTTP and stdio, read with FastMCP's and the SDK's clients); conversations
over it on the chat, Responses and Anthropic APIs, strict mode included, against
`ScriptedServer` with the real SDKs."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _mcp_support import ROOT, child_env, serve_command, text_of
from mcp import Client, StdioServerParameters

from toolreg import (
    Arg,
    Conversation,
    Reshape,
    ToolContext,
    ToolError,
    ToolRegistry,
    reshaped,
)
from toolreg.mcp import HttpServer, McpRequest, Mount, asgi_app
from toolreg.sources import OpenAPI
from toolreg.testing import ScriptedServer, text, tool_call

sys.path.insert(0, str(Path(__file__).parents[1]))
from _openapi_app import app as shop_app

MODEL = "scripted-model"
SEEN: list[dict[str, Any]] = []

upstream = ToolRegistry()


@upstream.register_tool(read_only=True)
def get_orders_v2(cust_id: str, rgn: str, max: int = 100) -> str:
    """Get orders (internal)."""
    SEEN.append({"cust_id": cust_id, "rgn": rgn, "max": max})
    if rgn == "apac":
        raise ToolError(f"rgn '{rgn}' is closed for cust_id {cust_id}")
    return f"{cust_id}/{rgn}/{max}"


ORDERS = Reshape(
    name="list_orders",
    description="The signed-in customer's orders. Use it when the user asks about orders.",
    args={
        "cust_id": Arg(from_context=lambda deps: deps["customer"]),
        "rgn": Arg(name="region", narrow={"enum": ["eu", "us", "apac"]}),
        "max": Arg(name="limit", narrow={"maximum": 20}, default=5),
    },
)


@pytest.fixture(scope="module")
def crm_url() -> Iterator[str]:
    with HttpServer(asgi_app(upstream)) as server:
        yield server.url


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    with HttpServer(shop_app) as server:
        yield server.url + "/openapi.json"


def test_a_mounted_tool_is_reshaped(crm_url: str) -> None:
    SEEN.clear()
    with Mount(crm_url, trust_annotations=True) as crm:
        tools = reshaped(crm, {"get_orders_v2": ORDERS})
        assert [t.name for t in tools.tools()] == ["list_orders"]
        dispatcher = tools.dispatcher
        done = dispatcher.dispatch_tool("list_orders", {"region": "eu"}, context={"customer": "c1"})
        refused = dispatcher.dispatch_tool(
            "list_orders", {"region": "eu", "limit": 50}, context={"customer": "c1"}
        )
        remote = dispatcher.dispatch_tool(
            "list_orders", {"region": "apac"}, context={"customer": "c1"}
        )
        async_done = asyncio.run(
            dispatcher.adispatch_tool("list_orders", {"region": "us"}, context={"customer": "c2"})
        )
    assert done.content == "c1/eu/5"
    assert async_done.content == "c2/us/5"
    assert refused.content == "Invalid arguments for tool 'list_orders': limit: must be <= 20."
    # the remote server's own words are passed on as they are: toolreg cannot know which words
    # of a free text name arguments (the guide says so)
    assert remote.content == "rgn 'apac' is closed for cust_id c1"
    assert SEEN == [
        {"cust_id": "c1", "rgn": "eu", "max": 5},
        {"cust_id": "c1", "rgn": "apac", "max": 5},
        {"cust_id": "c2", "rgn": "us", "max": 5},
    ]


def test_an_openapi_operation_is_reshaped(shop: str) -> None:
    with OpenAPI.from_url(shop) as api:
        tools = reshaped(
            api,
            {
                "get_item": Reshape(
                    name="item",
                    description="Read one item of the shop. Use it when the user names an item.",
                    args={
                        "item_id": Arg(name="id", narrow={"minimum": 1, "maximum": 999}),
                        "q": Arg(name="words", narrow={"enum": ["red", "blue"]}),
                        "x-request-id": Arg(from_context=lambda deps: deps["trace"]),
                        "tags": Arg(hidden=True),
                        "session_hint": Arg(value="s-1"),
                    },
                )
            },
        )
        tool = tools.get("item")
        assert list(tool.parameters["properties"]) == ["id", "words"]
        done = tools.dispatcher.dispatch_tool(
            "item", {"id": 7, "words": "red"}, context={"trace": "t-9"}
        )
        async_done = asyncio.run(
            tools.dispatcher.adispatch_tool("item", {"id": 8}, context={"trace": "t-10"})
        )
        refused = tools.dispatcher.dispatch_tool("item", {"id": 0}, context={"trace": "t"})
    assert json.loads(done.content) == {
        "item_id": 7,
        "q": "red",
        "tags": None,
        "x_request_id": "t-9",
        "session_hint": "s-1",
    }
    assert json.loads(async_done.content)["x_request_id"] == "t-10"
    assert refused.content == "Invalid arguments for tool 'item': id: must be >= 1."


def test_a_reshaped_toolset_is_served_and_read_by_fastmcps_client() -> None:
    fastmcp = pytest.importorskip("fastmcp")
    import _versioned_tools as tools

    def context(request: McpRequest) -> dict[str, int]:
        return {"base": int(request.headers.get("x-base", "0"))}

    async def run(url: str) -> tuple[list[Any], str, str]:
        transport = fastmcp.client.transports.StreamableHttpTransport(url, headers={"x-base": "40"})
        async with fastmcp.Client(transport) as client:
            listed = [(t.name, t.input_schema) for t in await client.list_tools()]
            done = await client.call_tool("plus", {"x": 2})
            refused = await client.call_tool("plus", {"x": 2, "b": 1}, raise_on_error=False)
            return listed, done.content[0].text, refused.content[0].text

    with HttpServer(asgi_app(tools.shaped, context=context)) as server:
        listed, done, refused = asyncio.run(run(server.url))
    names = [name for name, _ in listed]
    assert names == ["search", "plus"]
    plus = dict(listed)["plus"]
    assert list(plus["properties"]) == ["x"]
    assert done == "42"
    assert refused == "Invalid arguments for tool 'plus': unexpected property 'b'."


@pytest.mark.slow
def test_toolreg_serve_serves_a_reshaped_target_over_stdio() -> None:
    command = serve_command("tests/_versioned_tools.py:shaped", "--context", '{"base": 100}')
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=ROOT)

    async def run() -> tuple[list[str], str]:
        async with Client(params) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            return listed, text_of(await client.call_tool("plus", {"x": 5}))

    assert asyncio.run(run()) == (["search", "plus"], "105")


def orders_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(strict=True, read_only=True)
    def get_orders_v2(
        cust_id: str, rgn: str, ctx: ToolContext[dict[str, str]], max: int = 100
    ) -> str:
        """Get orders (internal)."""
        assert ctx.deps["customer"] == cust_id  # the tool's own context: the same deps
        return f"{cust_id}/{rgn}/{max}"

    return registry


def offered(request: dict[str, Any]) -> Any:
    tools = request["tools"]
    if "input_schema" in tools[0]:  # anthropic
        return {t["name"]: t["input_schema"] for t in tools}
    if "function" in tools[0]:  # chat completions
        return {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    return {t["name"]: t["parameters"] for t in tools}  # responses


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_a_conversation_over_a_reshaped_toolset(dialect: str) -> None:
    tools = reshaped(orders_registry(), {"get_orders_v2": ORDERS})
    turns = [
        tool_call("list_orders", region="mars"),
        tool_call("list_orders", region="eu", limit=None),
        text("You have orders."),
    ]
    with ScriptedServer(turns) as server:
        client = server.anthropic_client() if dialect == "anthropic" else server.client()
        chat = Conversation(
            client,
            MODEL,
            registry=tools,
            context={"customer": "c7"},
            strict=dialect != "anthropic",
            dialect=None if dialect == "anthropic" else dialect,
        )
        reply = chat.send("my orders?")
        schema = offered(server.requests[0])["list_orders"]
    assert set(schema["properties"]) == {"region", "limit"}
    assert schema["properties"]["region"]["enum"] == ["eu", "us", "apac"]
    first, second = reply.tool_results
    assert first.content == (
        "Invalid arguments for tool 'list_orders': region: 'mars' is not one of 'eu', 'us', 'apac'."
    )
    assert second.content == "c7/eu/5"
    assert reply.text == "You have orders."


def test_a_conversation_reads_the_reshaped_tool_in_its_history() -> None:
    tools = reshaped(orders_registry(), {"get_orders_v2": ORDERS})
    with ScriptedServer([tool_call("list_orders", region="us"), text("done")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools, context={"customer": "c8"})
        chat.send("orders")
        followed = server.requests[1]["messages"]
    assert [m["role"] for m in followed][-2:] == ["assistant", "tool"]
    assert followed[-2]["tool_calls"][0]["function"]["name"] == "list_orders"
    assert followed[-1]["content"] == "c8/us/5"
