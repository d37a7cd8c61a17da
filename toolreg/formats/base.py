"""The contract of a provider format, and the helpers every provider module shares.

A provider module (`openai`, `responses`, `anthropic`, `gemini`, `mcp`, `chatglm3`,
`functions`) defines one `FORMAT`: its tool-name rule, how a tool definition is written
(`definition`), how calls are read out of what the provider sends (`parse_calls`), how a
result is written back (`observation`) and, when the conversation loop can speak it over an
OpenAI-compatible endpoint, its `Dialect`. A new format is one module and one line in
`formats/__init__.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..definition.names import NameRule
from ..errors import ConversationError
from ..result import ToolCall, ToolResult
from ..tool import Tool

__all__ = [
    "Definition",
    "Dialect",
    "Format",
    "arguments_text",
    "as_data",
    "entries",
    "function_call_of",
    "make_call",
]

Definition = Callable[[Tool, dict[str, Any], bool], dict[str, Any]]
"""`definition(tool, parameters, strict)`: the provider's definition of one tool, given the
parameters schema to advertise (already a copy, strict or not)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """How the conversation loop talks tools in a format over an OpenAI-compatible endpoint.

    The format's definitions go out under `tools_key`; `choice_key` carries the tool
    choice, built by `choice` from "auto", "none", "required" or a tool name; `call_keys`
    are the assistant-message keys that carry calls (dropped from a final answer).
    """

    name: str
    tools_key: str
    choice_key: str
    choice: Callable[[str], Any]
    call_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Format:
    """One provider format: see the module docstring."""

    name: str
    name_rule: NameRule
    definition: Definition
    parse_calls: Callable[[Any], list[ToolCall]]
    observation: Callable[[ToolResult], dict[str, Any]]
    dialect: Dialect | None = None


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
