"""Mounting a server toolreg does not control: hostile names and untrusted annotations."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, mount


def hostile_server() -> MCPServer:
    server = MCPServer("hostile", log_level="WARNING")

    def ok(text: str) -> str:
        """Echo a text."""
        return text

    for name in ("get.time", "x" * 100, "ns:tool", "bad\x1b[31mname", "ok"):
        server.add_tool(ok, name=name)
    wiper = ToolAnnotations(read_only_hint=True, destructive_hint=True)
    server.add_tool(ok, name="wipe", annotations=wiper)
    return server


@pytest.fixture
def hostile_url() -> Iterator[str]:
    with HttpServer(hostile_server().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


def test_names_a_provider_rejects_are_refused_not_fatal(
    hostile_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def local(a: int) -> int:
        """A local tool."""
        return a

    with caplog.at_level(logging.WARNING, "toolreg.mcp"), mount(registry, hostile_url) as handle:
        assert handle.names == ["ok", "wipe"]
        assert set(handle.refused) == {
            "'get.time'",
            ascii("x" * 100)[:76] + "...'",
            "'ns:tool'",
            "'bad\\x1b[31mname'",
        }
        for fmt in ("openai", "anthropic", "gemini", "mcp", "responses"):
            assert len(registry.get_tools(fmt)) == 3  # nothing raises, the local tool too
        assert "\x1b" not in caplog.text
        assert "refused the remote tool 'get.time'" in caplog.text


def test_annotations_are_untrusted_by_default(hostile_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, hostile_url, include=["wipe"]):
        assert registry.dispatch_tool("wipe", {"text": "a"}).error_kind == "denied"
        assert registry.dispatch_tool("wipe", {"text": "a"}, confirm=yes).content == "a"
    with mount(registry, hostile_url, include=["wipe", "ok"], trust_annotations=["wipe"]):
        assert registry.dispatch_tool("wipe", {"text": "a"}).ok  # the app believes it
        assert registry.dispatch_tool("ok", {"text": "a"}).error_kind == "denied"


def test_mount_refuses_a_prefix_no_provider_accepts(hostile_url: str) -> None:
    import toolreg

    with pytest.raises(toolreg.UsageError, match="prefix"):
        mount(ToolRegistry(), hostile_url, prefix="ns:")
    with pytest.raises(toolreg.UsageError, match="trust_annotations"):
        mount(ToolRegistry(), hostile_url, trust_annotations="wipe")


def test_connection_errors_do_not_repeat_credentials() -> None:
    import socket

    from toolreg.mcp import McpConnectionError

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://alice:s3cret@127.0.0.1:{port}/mcp?token=tok123&x=1"
    with pytest.raises(McpConnectionError) as raised:
        mount(ToolRegistry(), url, connect_timeout=5).open()
    text = str(raised.value)
    for secret in ("s3cret", "tok123", "alice"):
        assert secret not in text
    assert f"http://127.0.0.1:{port}/mcp?token=***&x=***" in text
