"""A tool's return value -> the text the model reads."""

from __future__ import annotations

import enum
import json
from typing import Any

from ._jsonable import json_default
from .errors import ToolExecutionError
from .tool import Tool

__all__ = ["NONE_CONTENT", "render_result", "truncate"]

NONE_CONTENT = "null"
"""What the model reads when a tool returns None (the JSON for None)."""

_encoder = json.JSONEncoder(ensure_ascii=False, default=json_default, allow_nan=False)
_make_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
# `JSONEncoder.encode` builds the C encoder anew on every call; build it once. No circular
# check (markers=None): a circular result hits the recursion limit, reported like any
# other value JSON cannot hold.
_c_encode: Any = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(
        None, json_default, json.encoder.encode_basestring, None, ": ", ", ", False, False, False
    )
)


def to_json(value: Any) -> str:
    """`value` as JSON text, `ensure_ascii=False`; TypeError/ValueError if it cannot be."""
    if _c_encode is None:  # pragma: no cover - Python builds without the C accelerator
        return _encoder.encode(value)
    return "".join(_c_encode(value, 0))


def render_result(tool: Tool, value: Any, limit: int | None) -> str:
    """`str` (and its subclasses) as is, None as `null`, anything else as JSON
    (`ensure_ascii=False`), then cut to the tool's or else the registry's limit."""
    if tool.result_filter is not None:
        try:
            value = tool.result_filter(value)
        except Exception as exc:
            raise ToolExecutionError(
                f"Tool '{tool.name}' failed: its result could not be filtered.",
                tool_name=tool.name,
            ) from exc
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
