"""A mounted server that lies in its results: structured content against its own output
schema, failure texts full of secrets. Each bad answer fails its own call; the mount lives."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from test_mcp_untrusted import yes

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, mount

COUNTED = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
ARGS = {"type": "object", "properties": {"lie": {"type": "boolean"}}}


def liar() -> Server[Any]:
    """`count` answers {"n": 3}, or {"n": "lots"} when asked to lie; `bare` never sends the
    structured content its schema requires; `broken` has an output schema that is no schema."""
    listed = [
        types.Tool(name="count", input_schema=ARGS, output_schema=COUNTED),
        types.Tool(name="bare", input_schema=ARGS, output_schema=COUNTED),
        types.Tool(name="broken", input_schema=ARGS, output_schema={"type": 5}),
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        lie = bool((params.arguments or {}).get("lie"))
        structured = {"n": "lots" if lie else 3}
        block = [types.TextContent(type="text", text=str(structured))]
        if params.name == "bare":
            return types.CallToolResult(content=block)
        return types.CallToolResult(content=block, structured_content=structured)

    return Server("liar", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture
def liar_url() -> Iterator[str]:
    with HttpServer(liar().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def test_a_result_against_its_output_schema_fails_that_call_alone(
    liar_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()
    with caplog.at_level(logging.WARNING, "toolreg.mcp"), mount(registry, liar_url) as handle:
        assert registry.dispatch_tool("count", {}, confirm=yes).value.structured == {"n": 3}
        lied = registry.dispatch_tool("count", {"lie": True}, confirm=yes)
        assert (lied.ok, lied.error_kind) == (False, "execution_error")
        assert lied.content == (
            "Tool 'count' failed: its result does not match the tool's output schema "
            "at $.n (type: 'integer')."
        )
        assert "lots" not in lied.content  # the server's value is not repeated
        assert "answered 'count': its result does not match" in caplog.text
        assert handle.connected
        assert registry.dispatch_tool("count", {}, confirm=yes).value.structured == {"n": 3}


def test_missing_structured_content_and_a_broken_output_schema_fail_alone(liar_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url) as handle:
        bare = registry.dispatch_tool("bare", {}, confirm=yes)
        assert bare.content == (
            "Tool 'bare' failed: its result has no structuredContent, which the tool's "
            "output schema requires."
        )
        broken = registry.dispatch_tool("broken", {}, confirm=yes)
        assert broken.content == (
            "Tool 'broken' failed: its output schema is not a valid JSON Schema, so no result "
            "of it can be checked."
        )
        assert handle.connected
        assert registry.dispatch_tool("count", {}, confirm=yes).ok
