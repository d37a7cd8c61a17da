"""Mounting a real MCP server (streamable HTTP) whose tools' `inputSchema`s are older JSON
Schema drafts: each is mounted with its schema rewritten as 2020-12 (an INFO log line and
`Tool.schema_changes` say what changed), calls are checked locally as the author meant, and a
schema that cannot be rewritten refuses that tool only, naming the keyword."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, mount

SCHEMAS: dict[str, dict[str, Any]] = {
    "list_items": {  # an MCP server generated from an OpenAPI 3.0 document
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"page": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}},
        "required": ["page"],
    },
    "search": {  # zod-to-json-schema's output, the TypeScript SDK's usual way
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"sort": {"type": "string", "enum": ["stars", "updated"]}},
        "properties": {
            "query": {"type": "string", "minLength": 1, "pattern": "^[a-z ]+$"},
            "sort": {"$ref": "#/definitions/sort", "description": "How to sort."},
            "order": {"type": "string", "enum": ["asc", "desc"]},
        },
        "dependencies": {"order": ["sort"]},
        "required": ["query"],
        "additionalProperties": False,
    },
    "ancient": {
        "$schema": "http://json-schema.org/draft-03/schema#",
        "type": "object",
        "properties": {"page": {"type": "integer", "required": True}},
    },
}


class DraftServer(MCPServer):
    """A real MCP server listing each tool with the older schema of `SCHEMAS`."""

    def __init__(self) -> None:
        super().__init__("older-drafts", log_level="WARNING")

        def list_items(page: int) -> str:
            """List the items of a page."""
            return f"page {page}"

        def search(query: str, sort: str = "stars", order: str = "desc") -> str:
            """Search the repositories."""
            return f"{query} by {sort} {order}"

        def ancient(page: int = 1) -> str:
            """A draft-3 tool."""
            return str(page)

        for fn in (list_items, search, ancient):
            self.add_tool(fn)

    async def list_tools(self) -> list[types.Tool]:
        return [
            tool.model_copy(update={"input_schema": SCHEMAS[tool.name]})
            for tool in await super().list_tools()
        ]


@pytest.fixture
def url() -> Iterator[str]:
    with HttpServer(DraftServer().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


def test_older_drafts_are_mounted_rewritten_and_checked_as_meant(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()
    with caplog.at_level(logging.INFO, "toolreg.mcp"), mount(registry, url) as handle:
        assert handle.names == ["list_items", "search"]
        assert "draft 3 is not supported" in handle.refused["'ancient'"]

        page = registry["list_items"]
        assert page.parameters["properties"]["page"] == {"type": "integer", "exclusiveMinimum": 0}
        assert (
            "#/properties/page: exclusiveMinimum: true with minimum: 0 -> exclusiveMinimum: 0"
            in page.schema_changes
        )
        assert registry.dispatch_tool("list_items", {"page": 2}, confirm=yes).content == "page 2"
        refused = registry.dispatch_tool("list_items", {"page": 0}, confirm=yes)
        assert refused.error_kind == "invalid_arguments"  # checked here, never sent

        search = registry["search"]
        assert search.parameters["dependentRequired"] == {"order": ["sort"]}
        result = registry.dispatch_tool(
            "search", {"query": "mcp", "sort": "updated", "order": "asc"}, confirm=yes
        )
        assert result.content == "mcp by updated asc"
        missing = registry.dispatch_tool("search", {"query": "mcp", "order": "asc"}, confirm=yes)
        assert "missing property 'sort', required with 'order'" in missing.content
        for fmt in ("openai", "responses", "anthropic", "gemini", "mcp"):
            assert len(registry.get_tools(fmt)) == 2
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(
        m.startswith("rewrote the remote tool 'list_items'") and "exclusiveMinimum: 0" in m
        for m in said
    )
    assert any(m.startswith("rewrote the remote tool 'search'") for m in said)
