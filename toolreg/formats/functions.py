"""OpenAI's legacy `functions` / `function_call` dialect: one call per turn, role `function`."""

from __future__ import annotations

from typing import Any

from ..result import ToolCall, ToolResult
from ..tool import Tool
from ._dialect import Dialect, function_call_of

__all__ = ["DIALECT", "definition", "observation", "parse_function_call"]


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = parameters
    return out


def observation(result: ToolResult) -> dict[str, Any]:
    return {"role": "function", "name": result.tool_name, "content": result.content}


def parse_function_call(message: dict[str, Any]) -> list[ToolCall]:
    call = message.get("function_call")
    return [function_call_of(call)] if call else []


def _choice(choice: str) -> Any:
    if choice in ("auto", "none"):
        return choice
    if choice == "required":
        raise ValueError('the "functions" dialect has no tool_choice="required"; name a tool')
    return {"name": choice}


DIALECT = Dialect(
    name="functions",
    export_format="functions",
    tools_key="functions",
    choice_key="function_call",
    choice=_choice,
    parse_calls=parse_function_call,
    observation=observation,
    call_keys=("function_call",),
)
