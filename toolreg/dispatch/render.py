"""A tool's return value -> the text the model reads."""

from __future__ import annotations

import enum
from typing import Any

from ..errors import ToolExecutionError
from ..jsonvalues import safe_text
from ..tool import Tool
from ..types import to_json
from .calling import filter_result

__all__ = ["NONE_CONTENT", "render_result", "truncate"]

NONE_CONTENT = "null"
"""What the model reads when a tool returns None (the JSON for None)."""


def render_result(tool: Tool, value: Any, limit: int | None) -> str:
    """`str` (and its subclasses) as is, None as `null`, anything else as JSON
    (`ensure_ascii=False`), then cut to the tool's or else the registry's limit."""
    if tool.result_filter is not None:
        value = filter_result(tool, tool.result_filter, value)
    if type(value) is str:
        text = value
    elif isinstance(value, str) and not isinstance(value, enum.Enum):
        text = str.__str__(value)  # a str subclass is text too; a str Enum member is JSON
    elif value is None:
        text = NONE_CONTENT
    elif isinstance(value, tuple) and hasattr(value, "_asdict"):
        text = _to_json(tool, value._asdict())  # a NamedTuple is an object, as in schemas
    else:
        text = _to_json(tool, value)
    text = safe_text(text)  # a lone surrogate would crash whatever sends the text on
    cut = tool.max_result_chars or limit
    return truncate(text, cut) if cut is not None and len(text) > cut else text


def _to_json(tool: Tool, value: Any) -> str:
    try:
        return to_json(value)
    except Exception as exc:  # TypeError, ValueError, RecursionError, a broken attribute...
        raise ToolExecutionError(
            f"Tool '{tool.name}' failed: its result (of type {type(value).__name__}) "
            "cannot be written as JSON.",
            tool_name=tool.name,
        ) from exc


def truncate(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters with a visible marker saying how much was cut."""
    cut = len(text) - limit
    return f"{text[:limit]}\n[truncated: {cut} of {len(text)} characters cut]"
