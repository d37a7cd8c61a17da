"""The tools the official MCP conformance suite's server scenarios call
(`@modelcontextprotocol/conformance`), written as any toolreg user would: typed functions
in a registry, served by `toolreg serve` (see tests/test_mcp_conformance.py). Only what a
tools-only server can do: text results, errors, progress and log lines, a given schema."""

from __future__ import annotations

import asyncio
from typing import Any

from toolreg import ToolContext, ToolError, ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def test_simple_text() -> str:
    """Answer a fixed text (scenario tools-call-simple-text)."""
    return "This is a simple text response for testing."


@registry.register_tool
def test_error_handling() -> str:
    """Always fail (scenario tools-call-error)."""
    raise ToolError("This tool intentionally returns an error for testing")


@registry.register_tool
async def test_tool_with_logging(ctx: ToolContext[Any]) -> str:
    """Send three log lines at info level while running (scenario tools-call-with-logging)."""
    ctx.log("Tool execution started")
    await asyncio.sleep(0.05)
    ctx.log("Tool processing data")
    await asyncio.sleep(0.05)
    ctx.log("Tool execution completed")
    return "Tool with logging executed successfully"


@registry.register_tool
async def test_tool_with_progress(ctx: ToolContext[Any]) -> str:
    """Report progress 0, 50 and 100 of 100 (scenario tools-call-with-progress)."""
    for done in (0, 50, 100):
        ctx.report_progress(done, 100)
        if done < 100:
            await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


def _echo(**arguments: Any) -> str:
    return f"received {sorted(arguments)}"


registry.register_schema(
    "json_schema_2020_12_tool",
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
    _echo,
    description="Tool with JSON Schema 2020-12 features (scenario json-schema-2020-12).",
)
