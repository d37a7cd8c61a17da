"""Wire formats: one module per provider dialect, and `export_tools` over them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._jsonable import copy_json
from .._names import check_name
from .._strict import make_strict
from ..errors import ToolDefinitionError
from ..tool import Tool
from . import anthropic, chatglm3, functions, gemini, mcp, openai, responses
from ._dialect import Dialect

__all__ = ["DIALECTS", "FORMATS", "Dialect", "export_tools", "strict_parameters"]

Definition = Callable[[Tool, dict[str, Any], bool], dict[str, Any]]

FORMATS: dict[str, Definition] = {
    "openai": openai.definition,
    "responses": responses.definition,
    "anthropic": anthropic.definition,
    "gemini": gemini.definition,
    "mcp": mcp.definition,
    "chatglm3": chatglm3.definition,
    "functions": functions.definition,
}

DIALECTS: dict[str, Dialect] = {
    "tools": openai.DIALECT,
    "functions": functions.DIALECT,
    "chatglm3": chatglm3.DIALECT,
}


def strict_parameters(tool: Tool) -> dict[str, Any]:
    """The strict form of a tool's schema, computed once per tool."""
    cached: dict[str, Any] | None = tool.runtime.get("strict_parameters")
    if cached is None:
        cached = make_strict(tool.parameters, tool=tool.name)
        tool.runtime["strict_parameters"] = cached
    return cached


def export_tools(
    tools: Iterable[Tool],
    fmt: str = "openai",
    *,
    strict: bool | None = None,
    advertise_required: bool = True,
) -> list[dict[str, Any]]:
    """Tool definitions in format `fmt`; `strict=None` uses each tool's own `strict` flag."""
    definition = FORMATS.get(fmt)
    if definition is None:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    out = []
    for tool in tools:
        rule = check_name(tool.name, fmt)
        if rule is not None:
            raise ToolDefinitionError(
                f"the name {tool.name!r} is not valid for {fmt} ({rule})",
                function=tool.name,
                fix="register the tool with name=... that this provider accepts",
            )
        use_strict = tool.strict if strict is None else strict
        parameters = strict_parameters(tool) if use_strict else tool.parameters
        if not advertise_required:
            if use_strict:
                raise ValueError("advertise_required=False cannot be combined with strict")
            parameters = {k: v for k, v in parameters.items() if k != "required"}
        # A copy: whoever edits an exported dict must not change what dispatch validates.
        out.append(definition(tool, copy_json(parameters), use_strict))
    return out
