"""What a conversation dialect is: how tools go out, how calls come in, how results go back."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConversationError
from ..result import ToolCall, ToolResult

__all__ = ["Dialect", "arguments_text", "as_data", "entries", "function_call_of", "make_call"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """One way of talking tools with an OpenAI-compatible chat endpoint.

    `export_format` is the `get_tools` format sent under `tools_key`; `choice_key` carries
    the tool choice, built by `choice` from "auto", "none", "required" or a tool name;
    `parse_calls` reads the calls out of an assistant message (a dict) and `observation`
    turns a result into the message that answers it.
    """

    name: str
    export_format: str
    tools_key: str
    choice_key: str
    choice: Callable[[str], Any]
    parse_calls: Callable[[dict[str, Any]], list[ToolCall]]
    observation: Callable[[ToolResult], dict[str, Any]]
    call_keys: tuple[str, ...]  # message keys that carry calls (dropped from a final answer)


def arguments_text(arguments: Any) -> str | dict[str, Any] | None:
    """Arguments as a model sent them: JSON text is kept as is, an object stays an object."""
    if arguments is None or isinstance(arguments, (str, dict)):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def function_call_of(call: Any) -> ToolCall:
    """`{"name": ..., "arguments": ...}` as a model sent it -> a `ToolCall` (no id)."""
    if not isinstance(call, dict):
        raise ConversationError("the endpoint sent a function call that is not an object")
    return make_call(call.get("name"), call.get("arguments"))


def make_call(name: Any, arguments: Any, call_id: Any = None) -> ToolCall:
    """A `ToolCall` from what a provider sent: a name that is not text becomes "" (unknown)."""
    return ToolCall(name if isinstance(name, str) else "", arguments_text(arguments), call_id)


def as_data(value: Any) -> Any:
    """An SDK object (pydantic, as the openai and anthropic SDKs return) as plain data."""
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def entries(container: Any, key: str) -> list[dict[str, Any]]:
    """The dict entries of `container[key]` (or of `container` itself when it is a list),
    SDK objects read as plain data; anything else is skipped."""
    data = as_data(container)
    items = data.get(key) if isinstance(data, dict) else data
    if not isinstance(items, (list, tuple)):
        return []
    return [entry for entry in map(as_data, items) if isinstance(entry, dict)]
