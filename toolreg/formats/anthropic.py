"""Anthropic Messages API: `{"name", "description", "input_schema"}` (and `input_examples`).

`ToolDefinition` and `Observation` are the shapes of the `anthropic` SDK's `ToolParam` and
`ToolResultBlockParam` with the keys toolreg writes (the SDK is not a dependency).
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict

from ..definition.names import NAME_RULES
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, entries, make_call

__all__ = ["FORMAT", "Observation", "ToolDefinition", "definition", "observation", "parse_calls"]


class ToolDefinition(TypedDict):
    """One entry of `tools=` in `client.messages.create`."""

    name: str
    description: NotRequired[str]
    input_schema: dict[str, Any]
    strict: NotRequired[bool]
    input_examples: NotRequired[list[dict[str, Any]]]


class Observation(TypedDict):
    """The `tool_result` content block answering one `tool_use` block."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: bool


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    out: ToolDefinition
    if tool.description:
        out = {"name": tool.name, "description": tool.description, "input_schema": parameters}
    else:
        out = {"name": tool.name, "input_schema": parameters}
    if strict:
        out["strict"] = True
    if tool.examples:  # the API's own field: the description stays as written
        out["input_examples"] = [dict(example) for example in tool.examples]
    return out


def observation(result: ToolResult) -> Observation:
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
