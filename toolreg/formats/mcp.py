"""MCP `Tool` objects: `name`, `description`, `inputSchema`, `annotations` (behaviour hints)."""

from __future__ import annotations

from typing import Any

from ..definition.names import NAME_RULES
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, as_data, make_call

__all__ = ["FORMAT", "definition", "observation", "parse_calls"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.title:
        out["title"] = tool.title
    if tool.description:
        out["description"] = tool.description
    out["inputSchema"] = parameters
    # MCP's defaults assume the worst (destructiveHint true), so say both explicitly;
    # destructiveHint and idempotentHint (default false) only mean something for a tool
    # that writes.
    annotations: dict[str, Any] = {"readOnlyHint": tool.read_only}
    if not tool.read_only:
        annotations["destructiveHint"] = tool.destructive
        if tool.idempotent:
            annotations["idempotentHint"] = True
    if tool.title:
        annotations["title"] = tool.title
    out["annotations"] = annotations
    return out


def observation(result: ToolResult) -> dict[str, Any]:
    """An MCP `CallToolResult`: text content, `isError` for failures."""
    return {"content": [{"type": "text", "text": result.content}], "isError": not result.ok}


def parse_calls(params: Any) -> list[ToolCall]:
    """The call in a `tools/call` request's `params` (`{"name", "arguments"}`), as a list of
    one: an MCP request carries exactly one call."""
    data = as_data(params)
    data = data if isinstance(data, dict) else {}
    return [make_call(data.get("name"), data.get("arguments"))]


FORMAT = Format(
    name="mcp",
    name_rule=NAME_RULES["mcp"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
)
