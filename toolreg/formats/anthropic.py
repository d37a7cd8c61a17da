"""Anthropic Messages API: `{"name", "description", "input_schema"}`."""

from __future__ import annotations

from typing import Any

from ..definition.names import NAME_RULES
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, entries, make_call

__all__ = ["FORMAT", "definition", "observation", "parse_calls"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = parameters
    if strict:
        out["strict"] = True
    return out


def observation(result: ToolResult) -> dict[str, Any]:
    """The `tool_result` content block answering one `tool_use` block."""
    return {
        "type": "tool_result",
        "tool_use_id": result.call_id or "",
        "content": result.content,
        "is_error": not result.ok,
    }


def parse_calls(message: Any) -> list[ToolCall]:
    """The `tool_use` blocks of an assistant message (or of its `content` list)."""
    return [
        make_call(block.get("name"), block.get("input"), block.get("id"))
        for block in entries(message, "content")
        if block.get("type") == "tool_use"
    ]


FORMAT = Format(
    name="anthropic",
    name_rule=NAME_RULES["anthropic"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
)
