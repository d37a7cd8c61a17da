"""A `Mount` is a toolset: it writes nothing into a registry; several mounts, each with
its own prefix, combine with a registry; a refresh shows through, search included. Over
real transports: toolreg's own server and an SDK high-level server (streamable HTTP), the
third-party `mcp-server-time` (stdio)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import _mcp_tools as tools
import pytest
from mcp.server.mcpserver import Context, MCPServer

from toolreg import StepContext, Tool, ToolRegistry, Toolset, UsageError, combined, prefixed
from toolreg.mcp import HttpServer, Mount, asgi_app

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    with HttpServer(asgi_app(tools.registry)) as server:
        yield server.url


def learning_server() -> MCPServer:
    server = MCPServer("learning", log_level="WARNING")

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello, {name}!"

    @server.tool()
    async def learn(ctx: Context) -> str:
        """Learn a new tool, `shout`, and tell the clients."""

        def shout(text: str) -> str:
            """Shout a text in capital letters."""
            return text.upper()

        server.add_tool(shout)
        await ctx.notify_tools_changed()
        return "learned"

    return server


@pytest.fixture
def learning_url() -> Iterator[str]:
    with HttpServer(learning_server().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


def _names(found: list[Tool]) -> list[str]:
    return [t.name for t in found]


def _local() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def note(text: str) -> str:
        """Write a note down."""
        return "noted"

    return registry


def _wait_for(check: Any) -> None:
    deadline = time.monotonic() + 10  # the change notice arrives on its own
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_mount_is_a_toolset_and_writes_into_no_registry(served_url: str) -> None:
    local = _local()
    with Mount(served_url, include=["add", "get_weather"], trust_annotations=True) as remote:
        assert isinstance(remote, Toolset)
        assert remote.registry is None
        assert _names(remote.tools()) == ["add", "get_weather"]
        assert _names(remote.offer(StepContext())) == ["add", "get_weather"]
        assert "add" in remote
        assert local.names() == ["note"]  # untouched
        result = remote.dispatcher.dispatch_tool("add", '{"a": 2, "b": "3"}')
        assert (result.ok, result.content) == (True, "5")
        assert _names(remote.search_tools("weather of a city", limit=1)) == ["get_weather"]
        both = combined(local, remote)
        assert _names(both.tools()) == ["note", "add", "get_weather"]
        assert local.names() == ["note"]
    assert remote.tools() == []  # closed: offers nothing more
    assert both.get("add") is None
    gone = both.dispatcher.dispatch_tool("add", {"a": 1, "b": 1})
    assert (gone.ok, gone.error_kind) == (False, "unknown_tool")


def test_several_mounts_each_with_its_own_prefix(served_url: str) -> None:
    local = _local()
    with (
        Mount(TIME_SERVER, trust_annotations=True) as clock,
        Mount(served_url, include=["add", "get_weather"], trust_annotations=True) as served,
    ):
        everything = combined(local, prefixed(clock, "time"), prefixed(served, "calc"))
        assert _names(everything.tools()) == [
            "note",
            "time_get_current_time",
            "time_convert_time",
            "calc_add",
            "calc_get_weather",
        ]
        now = everything.dispatcher.dispatch_tool(
            "time_get_current_time", {"timezone": "Asia/Tokyo"}
        )
        assert now.ok
        assert json.loads(now.content)["timezone"] == "Asia/Tokyo"
        assert everything.dispatcher.dispatch_tool("calc_add", {"a": 2, "b": 2}).content == "4"
        weather = everything.dispatcher.dispatch_tool("calc_get_weather", {"city": "Oslo"})
        assert weather.ok
        assert "Oslo" in weather.content
        found = everything.search_tools("convert a time to another timezone", limit=1)
        assert _names(found) == ["time_convert_time"]
        assert local.names() == ["note"]


def test_two_mounts_with_the_same_names_clash_at_composition(served_url: str) -> None:
    with (
        Mount(served_url, include=["add"]) as one,
        Mount(served_url, include=["add", "fail"]) as two,
    ):
        with pytest.raises(UsageError) as raised:
            combined(one, two)
        message = str(raised.value)
        assert "'add'" in message
        assert message.count("the MCP server http://127.0.0.1:") == 2
        assert _names(combined(one, prefixed(two, "b")).tools()) == ["add", "b_add", "b_fail"]


def test_a_refresh_updates_the_toolset_and_its_search(learning_url: str) -> None:
    local = _local()
    with Mount(learning_url) as remote:
        view = combined(local, prefixed(remote, "peer"))
        greet = view.get("peer_greet")
        revision = view.revision
        assert _names(view.search_tools("shout a text in capital letters", limit=1)) == [
            "peer_learn"
        ]
        assert view.dispatcher.dispatch_tool("peer_learn", {}, confirm=yes).content == "learned"
        _wait_for(lambda: "peer_shout" in view)
        assert view.revision > revision
        assert _names(view.tools()) == ["note", "peer_greet", "peer_learn", "peer_shout"]
        assert view.get("peer_greet") is greet  # unchanged: the same tool, not rebuilt
        found = view.search_tools("shout a text in capital letters", limit=1)
        assert _names(found) == ["peer_shout"]
        shouted = view.dispatcher.dispatch_tool("peer_shout", {"text": "hi"}, confirm=yes)
        assert shouted.content == "HI"
        assert local.names() == ["note"]
    assert view.search_tools("greet someone") == []  # closed: gone from the index too


def test_the_older_form_still_registers_and_follows_a_refresh(learning_url: str) -> None:
    registry = ToolRegistry()
    with Mount(registry, learning_url, prefix="peer_") as handle:
        assert handle.registry is registry
        assert registry.names() == ["peer_greet", "peer_learn"]
        assert _names(handle.tools()) == registry.names()
        assert registry.dispatch_tool("peer_learn", {}, confirm=yes).ok
        _wait_for(lambda: "peer_shout" in registry)
        assert _names(handle.tools()) == ["peer_greet", "peer_learn", "peer_shout"]
        # the same Tool in both: a tool of the mount is dispatched under the registry's settings
        assert registry["peer_shout"] is handle.get("peer_shout")
        assert handle.dispatcher.settings is registry.settings
    assert registry.names() == []


def test_mount_arguments_name_the_fix(served_url: str) -> None:
    with pytest.raises(UsageError, match="first of two arguments is a ToolRegistry"):
        Mount({}, served_url)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="server is missing"):
        Mount(ToolRegistry())
    with pytest.raises(UsageError, match="list of strings"):
        Mount("python server.py")
    with pytest.raises(UsageError, match="takes toolsets"):
        combined(_local(), served_url)  # type: ignore[arg-type]
