"""OpenAI chat completions: `tools=[{"type": "function", "function": {...}}]`."""

from __future__ import annotations

from typing import Any

from ..tool import Tool

__all__ = ["definition"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = parameters
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}
