"""The idempotency key survives an MCP hop (issue 32, section 2): a conversation's call of a
mounted tool sends its key in the request's `_meta` (`io.toolreg/idempotency-key`), and
`toolreg serve` hands it to the tool's `ToolContext`, over stdio (a `toolreg serve` child
process) and streamable HTTP (served from this process)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from _mcp_support import child_env, serve_command
from mcp import Client

from toolreg import Conversation, ToolRegistry
from toolreg.idempotency import META_KEY
from toolreg.mcp import HttpServer, Mount, asgi_app
from toolreg.testing import ScriptedServer, call, text, tool_calls

TARGET = "tests/_mcp_keys_tools.py:registry"


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    import _mcp_keys_tools

    with HttpServer(asgi_app(_mcp_keys_tools.registry)) as server:
        yield server.url


def hop(remote: Mount) -> list[tuple[str | None, str]]:
    """A conversation calls both mounted tools; each result's key and the key the served
    tool saw."""
    turns = [tool_calls(call("charge", amount=5), call("acharge", amount=6)), text("Done.")]
    with ScriptedServer(turns) as model:
        reply = Conversation(model.client(), "m", registry=remote).send("charge")
    return [(r.idempotency_key, r.content) for r in reply.tool_results]


def check(found: list[tuple[str | None, str]]) -> None:
    assert len(found) == 2
    for key, content in found:
        assert key is not None
        assert content == f"key={key}"  # the served tool got the caller's key
    assert found[0][0] != found[1][0]


@pytest.mark.slow
def test_the_key_crosses_a_stdio_hop() -> None:
    command = serve_command(TARGET)
    with Mount(command, env=child_env(), trust_annotations=True) as remote:
        check(hop(remote))


def test_the_key_crosses_an_http_hop(served_url: str) -> None:
    with Mount(served_url, trust_annotations=True) as remote:
        check(hop(remote))


def test_a_plain_dispatch_sends_no_key(served_url: str) -> None:
    with Mount(served_url, trust_annotations=True) as remote:
        assert remote.dispatcher.dispatch_tool("charge", {"amount": 1}).content == "key=None"
        given = remote.dispatcher.dispatch_tool("charge", {"amount": 1}, idempotency_key="k-5")
        assert given.content == "key=k-5"


@pytest.mark.parametrize(
    ("sent", "seen"),
    [
        ("k-1", "k-1"),
        ("x" * 300, "None"),  # longer than any key: not one
        ("bad\nkey", "None"),  # not printable text
        (12, "None"),
        ({"nested": "k"}, "None"),
    ],
)
def test_serve_takes_only_a_well_formed_key_from_a_client(
    served_url: str, sent: Any, seen: str
) -> None:
    """A key from a client toolreg does not control is bounded, printable text, or none."""
    import anyio

    async def main() -> str:
        async with Client(served_url) as client:
            result = await client.call_tool(
                "charge",
                {"amount": 1},
                meta={META_KEY: sent},  # type: ignore[dict-item]
            )
        block = result.content[0]
        assert isinstance(block, types.TextContent)
        return block.text

    assert anyio.run(main) == f"key={seen}"


def test_a_mounted_tool_served_again_passes_the_key_on(served_url: str) -> None:
    """conversation -> mount -> toolreg serve (of that mount) -> mount -> tool: the key
    travels every hop."""
    with Mount(served_url, trust_annotations=True) as inner:
        relay = ToolRegistry()
        for tool in inner.tools():
            relay.add(tool)
        with (
            HttpServer(asgi_app(relay)) as again,
            Mount(again.url, trust_annotations=True) as outer,
        ):
            check(hop(outer))
