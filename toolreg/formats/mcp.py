"""MCP `Tool` objects: `name`, `description`, `inputSchema`, `annotations` (behaviour hints)."""

from __future__ import annotations

from typing import Any

from ..result import ToolResult
from ..tool import Tool

__all__ = ["definition", "observation"]


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
