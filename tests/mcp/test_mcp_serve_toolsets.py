"""`toolreg serve` takes a toolset: one server re-exports several mounted servers, each under
its own prefix, beside local tools; a name clash fails when the view is composed. Served over
streamable HTTP on 127.0.0.1 and over stdio, read with the official `mcp` SDK client."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import mcp_types as types
import pytest
from _mcp_support import ROOT, child_env, serve_command
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from toolreg import ToolContext, ToolRegistry, UsageError, combined, prefixed
from toolreg.mcp import HttpServer, Mount, asgi_app, build_server, serve

POLLS = 2000
gate = threading.Event()

upstream = ToolRegistry()  # served by toolreg, mounted under "calc_"


@upstream.register_tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@upstream.register_tool(task="optional", read_only=True)
async def crunch(n: int, ctx: ToolContext[None]) -> str:
    """Crunch n numbers, slowly (a task)."""
    ctx.report_progress(1, n, "warming up")
    for _ in range(POLLS):
        if gate.is_set():
            return f"crunched {n}"
        await asyncio.sleep(0.005)
    return "the gate never opened"


local = ToolRegistry()


@local.register_tool(read_only=True)
def echo(text: str) -> str:
    """Echo a text."""
    return text


def greeter() -> MCPServer:  # a third-party server (the SDK's own), mounted under "hi_"
    server = MCPServer("greeter", log_level="WARNING")

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello, {name}!"

    return server


@pytest.fixture(scope="module")
def upstreams() -> Iterator[tuple[str, str]]:
    toolreg_app = asgi_app(upstream)
    sdk_app = greeter().streamable_http_app(stateless_http=True)
    with HttpServer(toolreg_app) as calc, HttpServer(sdk_app) as hi:
        yield calc.url, hi.url + "/mcp"


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_one_server_reexports_two_mounts_and_local_tools(upstreams: tuple[str, str]) -> None:
    calc_url, hi_url = upstreams
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))
        gate.set()  # the task is running and its status came all the way back

    async def client(url: str) -> tuple[list[str], list[str]]:
        async with Client(url) as session:
            listed = [tool.name for tool in (await session.list_tools()).tools]
            answers = [
                text(await session.call_tool("echo", {"text": "hi"})),
                text(await session.call_tool("calc_add", {"a": 2, "b": 3})),
                text(await session.call_tool("hi_greet", {"name": "Ada"})),
                text(
                    await session.call_tool("calc_crunch", {"n": 4}, progress_callback=on_progress)
                ),
            ]
            with pytest.raises(MCPError, match="Unknown tool 'add'"):  # only as calc_add
                await session.call_tool("add", {"a": 1, "b": 1})
            return listed, answers

    mounts = Mount(calc_url, trust_annotations=True), Mount(hi_url, trust_annotations=True)
    with mounts[0] as calc, mounts[1] as hi:
        tools = combined(local, prefixed(calc, "calc"), prefixed(hi, "hi"))
        with HttpServer(asgi_app(tools)) as server:
            listed, answers = asyncio.run(client(server.url))
    assert listed == ["echo", "calc_add", "calc_crunch", "hi_greet"]
    assert answers == ["hi", "5", "Hello, Ada!", "crunched 4"]
    # the mounted task's status reached the re-exporting server's own client as progress
    assert progress[0] == (1.0, None, "1/4: warming up")


def test_a_name_clash_between_mounts_fails_at_composition(upstreams: tuple[str, str]) -> None:
    calc_url, _ = upstreams
    with Mount(calc_url) as one, Mount(calc_url) as two:
        with pytest.raises(UsageError, match="calc_add"):
            combined(prefixed(one, "calc"), prefixed(two, "calc"))
        assert [t.name for t in combined(prefixed(one, "a"), prefixed(two, "b")).tools()] == [
            "a_add",
            "a_crunch",
            "b_add",
            "b_crunch",
        ]


def test_serving_something_that_is_no_toolset_is_a_usage_error() -> None:
    for make in (asgi_app, build_server, serve):
        with pytest.raises(UsageError, match="must be a Toolset"):
            make({"add": add})  # type: ignore[operator]


def test_toolreg_serve_takes_a_toolset_target_over_stdio() -> None:
    command = serve_command("tests/_mcp_toolset_target.py:tools")
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=ROOT)

    async def run() -> tuple[list[str], str]:
        async with Client(params) as session:
            listed = [tool.name for tool in (await session.list_tools()).tools]
            return listed, text(await session.call_tool("w_shout", {"text": "hey"}))

    assert asyncio.run(run()) == (["add", "w_shout", "w_whisper"], "HEY")
