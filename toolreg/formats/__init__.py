"""Provider formats: one module per provider, each with one `FORMAT` (see `base.Format`).

`export_tools(tools, "anthropic")` writes definitions; `FORMATS[name].parse_calls(...)`
reads calls; `FORMATS[name].observation(result)` answers them. `DIALECTS` are the formats
the conversation loop can speak, by dialect name (`tools`, `functions`, `chatglm3`,
`responses`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..definition.names import check_name
from ..definition.strict import make_strict
from ..errors import ToolDefinitionError, UsageError
from ..jsonvalues import copy_json
from ..tool import Tool
from . import anthropic, chatglm3, functions, gemini, mcp, openai, responses
from .base import Dialect, Format

__all__ = ["DIALECTS", "FORMATS", "Dialect", "Format", "export_tools", "format_named"]

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        openai.FORMAT,
        responses.FORMAT,
        anthropic.FORMAT,
        gemini.FORMAT,
        mcp.FORMAT,
        chatglm3.FORMAT,
        functions.FORMAT,
    )
}
"""Every format, by the name `get_tools(format=...)` takes."""

DIALECTS: dict[str, Format] = {f.dialect.name: f for f in FORMATS.values() if f.dialect}
"""The formats the conversation loop speaks, by dialect name."""


def format_named(name: str) -> Format:
    """The format `name`, or a `UsageError` that lists the choices."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise UsageError(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}")
    return fmt


def export_tools(
    tools: Iterable[Tool],
    fmt: str | Format[Any, Any] = "openai",
    *,
    strict: bool | None = None,
    advertise_required: bool = True,
) -> list[Any]:
    """Tool definitions in format `fmt` (a name or a `Format`); `strict=None` uses each
    tool's own `strict` flag.

    Args:
        tools: the tools to export, in order.
        fmt: a format's name (`FORMATS`) or a `Format` object.
        strict: True or False for every tool; None for each tool's own.
        advertise_required: False leaves `required` out of the schemas.

    Raises:
        UsageError: an unknown format name, or `advertise_required=False` with strict.
        ToolDefinitionError: a tool's name breaks the format's provider rule.

    `ToolRegistry.get_tools` calls it and caches the result; call that instead when you
    have a registry.
    """
    form = format_named(fmt) if isinstance(fmt, str) else fmt
    out = []
    for tool in tools:
        rule = check_name(tool.name, form.name_rule)
        if rule is not None:
            raise ToolDefinitionError(
                f"the name {tool.name!r} is not valid for {form.name} ({rule})",
                function=tool.name,
                fix="register the tool with name=... that this provider accepts",
            )
        use_strict = tool.strict if strict is None else strict
        parameters = tool.parameters
        if use_strict:
            parameters = tool.strict_parameters or make_strict(
                parameters, tool=tool.name, signature=bool(tool.params)
            )
        if not advertise_required:
            if use_strict:
                raise UsageError("advertise_required=False cannot be combined with strict")
            parameters = {k: v for k, v in parameters.items() if k != "required"}
        # A copy: whoever edits an exported dict must not change what dispatch validates.
        out.append(form.definition(tool, copy_json(parameters), use_strict))
    return out
