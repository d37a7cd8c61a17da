"""Anthropic Messages API: `{"name", "description", "input_schema"}`."""

from __future__ import annotations

from typing import Any

from ..tool import Tool

__all__ = ["definition"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = parameters
    if strict:
        out["strict"] = True
    return out
