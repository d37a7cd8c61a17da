"""A tool's return value -> the text the model reads (and a rich result's parts)."""

from __future__ import annotations

import enum
from typing import Any

from ..content import Media, Part, bounded, fallback_text, is_rich, parts_of
from ..errors import ToolExecutionError
from ..jsonvalues import safe_text
from ..tool import Tool
from ..types import to_json
from .calling import filter_result

__all__ = ["NONE_CONTENT", "render_parts", "render_result", "truncate"]

NONE_CONTENT = "null"
"""What the model reads when a tool returns None (the JSON for None)."""


def render_parts(
    tool: Tool, value: Any, limit: int | None, byte_limit: int | None
) -> tuple[str, tuple[Part, ...]]:
    """`render_result`, and a rich result's parts (`toolreg.content`): an `Image`, `Audio`
    or `File`, or a list or tuple holding one, is bounded (the tool's or else the registry's
    `max_result_chars` for its text, `max_result_bytes` for its media) and its text is
    `fallback_text`, cut to the same character limit."""
    if tool.result_filter is not None:
        value = filter_result(tool, tool.result_filter, value)
    if not isinstance(value, Media):
        try:  # a plain result costs nothing more: a list of parts is no JSON, so it fails
            return _rendered(tool, value, limit), ()
        except ToolExecutionError:
            if not is_rich(value):
                raise
    cut = tool.max_result_chars or limit
    byte_cut = tool.max_result_bytes or byte_limit
    parts = bounded(parts_of(value, lambda item: _rendered(tool, item, None)), cut, byte_cut)
    parts = tuple(safe_text(p) if isinstance(p, str) else p for p in parts)
    text = safe_text(fallback_text(parts))
    return (truncate(text, cut) if cut is not None and len(text) > cut else text), parts


def render_result(tool: Tool, value: Any, limit: int | None) -> str:
    """`str` (and its subclasses) as is, None as `null`, anything else as JSON
    (`ensure_ascii=False`), then cut to the tool's or else the registry's limit."""
    if tool.result_filter is not None:
        value = filter_result(tool, tool.result_filter, value)
    return _rendered(tool, value, limit)


def _rendered(tool: Tool, value: Any, limit: int | None) -> str:
    """`str` (and its subclasses) as is, None as `null`, anything else as JSON, cut."""
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
