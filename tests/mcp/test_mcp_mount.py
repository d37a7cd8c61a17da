"""Mounting MCP servers' tools into a registry: toolreg's own server (the round trip), a
third-party server installed with pip (`mcp-server-time`, stdio), and a server written here
with the SDK's high-level `MCPServer` (streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import _mcp_tools as tools
import pytest
from _mcp_support import (
    CALLS,
    PROCESS_TOOLS,
    ROOT,
    TOOLS,
    child_env,
    local_outcomes,
    serve_command,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError
from pydantic import BaseModel

import toolreg
from toolreg import Conversation, DuplicateToolError, ToolRegistry
from toolreg.mcp import HttpServer, McpConnectionError, Mount, RemoteResult, asgi_app, mount
from toolreg.testing import ScriptedServer, text, tool_call


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    """The test tools, served over streamable HTTP from this process."""
    with HttpServer(asgi_app(tools.registry)) as server:
        yield server.url


def definitions(registry: ToolRegistry) -> list[tuple[str, str, dict[str, Any], bool, bool]]:
    return [
        (t.name, t.description, t.parameters, t.read_only, t.destructive) for t in registry.tools()
    ]


def check_round_trip(mounted: ToolRegistry) -> None:
    """mount(serve(registry)) == registry: definitions, and every call's ok and content."""
    assert definitions(mounted) == definitions(tools.registry)
    assert mounted.get_tools("anthropic") == tools.registry.get_tools("anthropic")
    remote = [(r.ok, r.content) for r in (mounted.dispatch_tool(n, dict(a)) for n, a in CALLS)]
    assert remote == local_outcomes(tools.registry)
    # a call approved here is not asked about again there: the same answer as locally
    for answer in (True, False):
        asked: list[dict[str, Any]] = []

        def confirm(tool: Any, arguments: dict[str, Any], answer: bool = answer) -> bool:
            asked.append(arguments)
            return answer

        local = tools.registry.dispatch_tool("delete_file", {"path": "/x"}, confirm=confirm)
        there = mounted.dispatch_tool("delete_file", {"path": "/x"}, confirm=confirm)
        assert (there.ok, there.content) == (local.ok, local.content)
        assert asked == [{"path": "/x"}, {"path": "/x"}]


def test_round_trip_over_http(served_url: str) -> None:
    mounted = ToolRegistry()
    with mount(mounted, served_url, trust_annotations=True) as handle:
        assert handle.names == tools.registry.names()
        check_round_trip(mounted)
        result = mounted.dispatch_tool("get_weather", {"city": "Oslo"})
        assert isinstance(result.value, RemoteResult)
        assert result.value.structured == {"city": "Oslo", "temperature": 18, "unit": "c"}
        assert result.value.content == ({"type": "text", "text": result.content},)
    assert mounted.names() == []  # unmounted on exit


def test_round_trip_over_stdio() -> None:
    mounted = ToolRegistry()
    with mount(mounted, serve_command(TOOLS), env=child_env(), trust_annotations=True):
        check_round_trip(mounted)


def test_round_trip_async(served_url: str) -> None:
    async def run() -> list[tuple[bool, str]]:
        mounted = ToolRegistry()
        async with mount(mounted, served_url, trust_annotations=True) as handle:
            assert handle.connected
            results = [await mounted.adispatch_tool(n, dict(a)) for n, a in CALLS]
        assert mounted.names() == []
        return [(r.ok, r.content) for r in results]

    assert asyncio.run(run()) == local_outcomes(tools.registry)


# arguments a model might send: right, wrong, or absurd
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def arguments_for(name: str) -> Any:
    properties = tools.registry[name].parameters.get("properties", {})
    known = st.fixed_dictionaries({}, optional=dict.fromkeys(properties, json_values))
    if name == "slow":  # keep the test fast: at most a short sleep
        seconds = st.floats(0, 0.05) | st.text(max_size=3) | st.none()
        known = st.fixed_dictionaries({}, optional={"seconds": seconds})
    extra = st.dictionaries(st.text(max_size=6), json_values, max_size=2)
    return st.one_of(known, st.builds(lambda a, b: {**b, **a}, known, extra))


calls = st.sampled_from(tools.registry.names()).flatmap(
    lambda name: st.tuples(st.just(name), arguments_for(name))
)


@pytest.fixture(scope="module")
def mounted_over_http(served_url: str) -> Iterator[ToolRegistry]:
    mounted = ToolRegistry()
    with mount(mounted, served_url, trust_annotations=True):
        yield mounted


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(call=calls)
def test_round_trip_property(mounted_over_http: ToolRegistry, call: tuple[str, Any]) -> None:
    """For any arguments at all, the mounted tool answers what the local one answers."""
    name, arguments = call
    local = tools.registry.dispatch_tool(name, arguments)
    remote = mounted_over_http.dispatch_tool(name, arguments)
    assert (remote.ok, remote.content) == (local.ok, local.content)


# -- a third-party server, installed with pip --------------------------------------------------

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def test_mount_the_reference_time_server() -> None:
    registry = ToolRegistry()
    with mount(registry, TIME_SERVER, prefix="time_", trust_annotations=True) as handle:
        assert handle.names == ["time_get_current_time", "time_convert_time"]
        tool = registry["time_get_current_time"]
        assert tool.read_only  # from its annotations
        assert not tool.destructive
        assert tool.parameters["required"] == ["timezone"]
        assert registry.get_tools("openai")[0]["function"]["name"] == "time_get_current_time"
        now = registry.dispatch_tool("time_get_current_time", {"timezone": "Asia/Tokyo"})
        assert now.ok
        assert json.loads(now.content)["timezone"] == "Asia/Tokyo"
        assert isinstance(now.value, RemoteResult)
        assert now.value.structured["timezone"] == "Asia/Tokyo"
        converted = registry.dispatch_tool(
            "time_convert_time",
            '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}',
        )
        assert json.loads(converted.content)["target"]["datetime"].endswith("T21:00:00+09:00")
        wrong = registry.dispatch_tool("time_get_current_time", {"timezone": "Mars/Base"})
        assert (wrong.ok, wrong.error_kind) == (False, "execution_error")
        assert "Invalid timezone" in wrong.content  # the server's own words
        missing = registry.dispatch_tool("time_get_current_time", {})  # refused here, not sent
        assert missing.error_kind == "invalid_arguments"
        assert missing.content == (
            "Invalid arguments for tool 'time_get_current_time': "
            "missing required property 'timezone'."
        )


# -- a server written with the SDK's high-level API ------------------------------------------


class Order(BaseModel):
    id: str
    total: float


def peer_server() -> MCPServer:
    server = MCPServer("peer", log_level="WARNING")

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello, {name}!"

    @server.tool()
    def find_order(order_id: str) -> Order:
        """Find an order."""
        if order_id != "A1":
            raise McpToolError(f"no order {order_id}")  # the SDK's way to send a message
        return Order(id=order_id, total=12.5)

    @server.tool()
    async def learn(ctx: Context) -> str:
        """Learn a new tool, `shout`, and tell the clients."""

        def shout(text: str) -> str:
            """Shout a text."""
            return text.upper()

        server.add_tool(shout)
        await ctx.notify_tools_changed()
        return "learned"

    return server


@pytest.fixture
def peer_url() -> Iterator[str]:
    with HttpServer(peer_server().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


def test_mount_an_sdk_high_level_server(peer_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, peer_url) as handle:
        assert handle.names == ["greet", "find_order", "learn"]
        # no annotations: MCP's defaults say such a tool may destroy, so it asks first
        assert registry["greet"].destructive
        assert registry.dispatch_tool("greet", {"name": "Ada"}).error_kind == "denied"
        assert registry.dispatch_tool("greet", {"name": "Ada"}, confirm=yes).content == (
            "Hello, Ada!"
        )
        found = registry.dispatch_tool("find_order", {"order_id": "A1"}, confirm=yes)
        assert found.ok
        assert found.value.structured == {"id": "A1", "total": 12.5}
        lost = registry.dispatch_tool("find_order", {"order_id": "B2"}, confirm=yes)
        assert (lost.ok, lost.error_kind) == (False, "execution_error")
        assert lost.content == "Error executing tool find_order: no order B2"  # its words
        assert registry.dispatch_tool("learn", {}, confirm=yes).content == "learned"
        deadline = time.monotonic() + 10  # the change notice refreshes the tools
        while "shout" not in registry and time.monotonic() < deadline:
            time.sleep(0.02)
        assert registry.dispatch_tool("shout", {"text": "hi"}, confirm=yes).content == "HI"


def test_search_follows_a_mount_its_refresh_and_its_end(peer_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, peer_url):
        assert [t.name for t in registry.search_tools("greet someone")] == ["greet"]
        assert [t.name for t in registry.search_tools("shout a text")] == ["learn"]  # not yet
        assert registry.dispatch_tool("learn", {}, confirm=yes).ok
        deadline = time.monotonic() + 10  # the change notice refreshes the tools
        while "shout" not in registry and time.monotonic() < deadline:
            time.sleep(0.02)
        assert registry.search_tools("shout a text")[0].name == "shout"
    assert registry.search_tools("greet someone") == []  # unmounted: gone from the index


def test_list_changed_refresh_respects_include_and_prefix(peer_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, peer_url, include=["learn"], prefix="peer_") as handle:
        assert registry.dispatch_tool("peer_learn", {}, confirm=yes).ok
        time.sleep(0.3)  # a refresh that would add `shout` has had time to happen
        assert handle.names == ["peer_learn"]
        assert registry.names() == ["peer_learn"]


def test_mounted_tools_drive_a_conversation(served_url: str) -> None:
    registry = ToolRegistry()
    script = [tool_call("add", a=2, b=3), text("2 + 3 = 5")]
    with (
        mount(registry, served_url, include=["add"], trust_annotations=True),
        ScriptedServer(script) as model,
    ):
        reply = Conversation(model.client(), "any-model", registry=registry).send("2 + 3?")
        assert reply.text == "2 + 3 = 5"
        assert [r.content for r in reply.tool_results] == ["5"]
        assert model.requests[0]["tools"] == registry.get_tools()
        model.assert_all_consumed()


# -- failures: dead servers, hangs, misuse -------------------------------------------------


def test_server_death_mid_call_is_a_clean_error_at_once() -> None:
    registry = ToolRegistry()
    with mount(
        registry, serve_command(PROCESS_TOOLS), env=child_env(), timeout=20, trust_annotations=True
    ) as handle:
        started = time.monotonic()
        result = registry.dispatch_tool("die", {})
        elapsed = time.monotonic() - started
        assert (result.ok, result.error_kind) == (False, "execution_error")
        assert result.content == "Tool 'die' failed: the MCP server closed the connection."
        assert elapsed < 10  # noticed when the process ended, not at the 20 s limit
        assert not handle.connected
        again = registry.dispatch_tool("pid", {})
        assert again.content == "Tool 'pid' failed: its MCP server is not connected."
    assert registry.names() == []


@pytest.fixture(scope="module")
def process_tools() -> Iterator[tuple[ToolRegistry, Mount]]:
    """The process tools of a `toolreg serve` child, mounted with a short call time limit."""
    registry = ToolRegistry()
    command = serve_command(PROCESS_TOOLS)
    with mount(registry, command, env=child_env(), timeout=0.5, trust_annotations=True) as handle:
        yield registry, handle


def test_a_hanging_call_times_out(process_tools: tuple[ToolRegistry, Mount]) -> None:
    registry, handle = process_tools
    result = registry.dispatch_tool("hang", {})
    assert (result.error_kind, result.content) == (
        "timeout",
        "Tool 'hang' timed out after 0.5 s: interrupted while running, so it may have had effects.",
    )
    assert handle.connected  # a slow tool is not a dead server
    assert registry.dispatch_tool("pid", {}).ok


def test_the_mount_declines_what_was_not_approved_here(
    process_tools: tuple[ToolRegistry, Mount],
) -> None:
    """`requires_confirmation` has no MCP annotation: the mounted tool runs unasked here,
    and the server's question about it gets a no (only calls approved here get a yes)."""
    registry, _ = process_tools
    assert not registry["reset"].needs_confirmation
    result = registry.dispatch_tool("reset", {})
    assert result.content == (
        "Tool 'reset' was not run: the user declined. Do not retry it unless the user asks."
    )
    assert registry.dispatch_tool("reset", {}, confirm=yes).error_kind == "execution_error"


def test_an_unreachable_server_is_an_error_at_mount() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nobody listens there
    registry = ToolRegistry()
    with pytest.raises(McpConnectionError, match="cannot mount"):
        mount(registry, f"http://127.0.0.1:{port}/mcp", timeout=5).open()
    with pytest.raises(McpConnectionError):
        mount(registry, [sys.executable, "-c", "pass"], timeout=5).open()
    assert registry.names() == []


SILENT_SERVER = """
import socket
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
held = []
while True:
    held.append(listener.accept()[0])  # reads nothing, answers nothing
"""

MOUNT_IT = """
import gc, sys, time
from toolreg.mcp import McpConnectionError, Mount
for opened in ("sync", "async"):
    started = time.monotonic()
    try:
        if opened == "sync":
            Mount(sys.argv[1], connect_timeout=2).open()
        else:
            import asyncio
            asyncio.run(Mount(sys.argv[1], connect_timeout=2).aopen())
    except McpConnectionError as exc:
        print(f"{opened}: {exc}")
    print(f"{opened} took {time.monotonic() - started:.2f} s")
    gc.collect()
"""


@pytest.mark.slow
def test_a_server_that_never_answers_fails_the_mount_once_and_quietly() -> None:
    """A server that accepts and never answers: the mount fails with its one line after
    `connect_timeout` (not twice that: the connection is stopped at once, not given another
    `connect_timeout` to end), and nothing else is written (no "Future exception was never
    retrieved" from the abandoned connection, when it is collected or at exit)."""
    silent = subprocess.Popen([sys.executable, "-c", SILENT_SERVER], stdout=subprocess.PIPE)
    try:
        assert silent.stdout is not None
        url = f"http://127.0.0.1:{int(silent.stdout.readline())}/mcp"
        ran = subprocess.run(
            [sys.executable, "-c", MOUNT_IT, url],
            capture_output=True,
            text=True,
            env={**os.environ, **child_env()},
            timeout=120,
        )
    finally:
        silent.kill()
        silent.wait()
    assert ran.stderr == ""
    lines = ran.stdout.splitlines()
    for opened, (said, took) in zip(("sync", "async"), zip(lines[::2], lines[1::2])):
        assert said == f"{opened}: the MCP server {url} did not answer within 2 s"
        # the bound the spec sets (once connect_timeout, not twice), with a full
        # connect_timeout of margin for a loaded machine
        assert float(took.split()[2]) < 4, took


def test_a_taken_name_fails_the_mount_and_leaves_nothing_behind(served_url: str) -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def create_task(title: str) -> str:
        """A local tool of the same name."""
        return title

    with pytest.raises(DuplicateToolError):
        mount(registry, served_url).open()
    assert registry.names() == ["create_task"]
    with mount(registry, served_url, prefix="remote_") as handle:  # the fix: a prefix
        assert "remote_create_task" in handle.names
        assert registry["create_task"].function is create_task


def test_mount_checks_its_arguments(served_url: str) -> None:
    registry = ToolRegistry()
    with pytest.raises(toolreg.UsageError, match="list of strings"):
        mount(registry, "python server.py")
    with pytest.raises(toolreg.UsageError):
        mount(registry, [])
    with pytest.raises(toolreg.UsageError, match="timeout"):
        mount(registry, served_url, timeout=0)
    with pytest.raises(toolreg.UsageError, match="include"):
        mount(registry, served_url, include="add")
    with pytest.raises(toolreg.UsageError, match="ToolRegistry"):
        mount({}, served_url)  # type: ignore[arg-type]
    with pytest.raises(toolreg.UsageError, match="does not have"):
        mount(registry, served_url, include=["add", "subtract"]).open()
    handle = Mount(registry, served_url, include=["add"])
    with handle, pytest.raises(toolreg.UsageError, match="already opened"):
        handle.open()
    handle.close()  # twice is harmless
    assert registry.names() == []


# -- the command line: mcp: targets ------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **child_env()},
        timeout=120,
    )


@pytest.mark.slow
def test_cli_targets_mcp_servers(served_url: str) -> None:
    listed = run_cli("list", f"mcp:{served_url}", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == tools.registry.names()
    command = " ".join(serve_command(TOOLS))  # a stdio server, started by the command
    called = run_cli("call", f"mcp:{command}", "add", '{"a": 2, "b": "40"}')
    assert (called.returncode, called.stdout) == (0, "42\n"), called.stderr
    unreachable = run_cli("list", "mcp:http://127.0.0.1:9/mcp")
    assert unreachable.returncode == 2
    assert unreachable.stderr.startswith("toolreg: cannot mount the MCP server")


def test_title_and_idempotent_hint_travel_both_ways() -> None:
    served = ToolRegistry()

    @served.register_tool(title="Set the thermostat", idempotent=True)
    def set_temperature(celsius: float) -> str:
        """Set the thermostat. Use it when the user wants it warmer or colder."""
        return f"set to {celsius}"

    mounted = ToolRegistry()
    with HttpServer(asgi_app(served)) as server, mount(mounted, server.url):
        tool = mounted["set_temperature"]
        assert (tool.title, tool.idempotent, tool.read_only) == ("Set the thermostat", True, False)
        assert mounted.get_tools("mcp")[0]["annotations"]["idempotentHint"] is True
