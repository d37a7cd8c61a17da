"""ChatGLM3: the `tools` list its chat template takes (`{"name", "description", "parameters"}`)."""

from __future__ import annotations

from typing import Any

from ..tool import Tool

__all__ = ["definition"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": parameters}
