"""OpenAI Responses API: flat `{"type": "function", "name", "parameters", "strict"}` tools."""

from __future__ import annotations

from typing import Any

from ..definition.names import NAME_RULES
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, entries, make_call

__all__ = ["FORMAT", "definition", "observation", "parse_calls"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = parameters
    out["strict"] = strict  # the Responses API defaults to strict when this is left out
    return out


def observation(result: ToolResult) -> dict[str, Any]:
    """The `function_call_output` input item answering one call."""
    return {
        "type": "function_call_output",
        "call_id": result.call_id or "",
        "output": result.content,
    }


def parse_calls(response: Any) -> list[ToolCall]:
    """The `function_call` items of a Responses API response (or of its `output` list)."""
    return [
        make_call(item.get("name"), item.get("arguments"), item.get("call_id"))
        for item in entries(response, "output")
        if item.get("type") == "function_call"
    ]


FORMAT = Format(
    name="responses",
    name_rule=NAME_RULES["responses"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
)
