"""MCP `Tool` objects: `name`, `description`, `inputSchema`, `annotations` (behaviour hints)."""

from __future__ import annotations

from typing import Any

from ..result import ToolCall, ToolResult
from ..tool import Tool
from ._dialect import as_data, make_call

__all__ = ["definition", "observation", "parse_call"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["inputSchema"] = parameters
    # MCP's defaults assume the worst (destructiveHint true), so say both explicitly.
    annotations: dict[str, Any] = {"readOnlyHint": tool.read_only}
    if not tool.read_only:
        annotations["destructiveHint"] = tool.destructive
    out["annotations"] = annotations
    return out


def observation(result: ToolResult) -> dict[str, Any]:
    """An MCP `CallToolResult`: text content, `isError` for failures."""
    return {"content": [{"type": "text", "text": result.content}], "isError": not result.ok}


def parse_call(params: Any) -> ToolCall:
    """The call in a `tools/call` request's `params`: `{"name", "arguments"}`."""
    data = as_data(params)
    data = data if isinstance(data, dict) else {}
    return make_call(data.get("name"), data.get("arguments"))
