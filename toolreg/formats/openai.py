"""OpenAI chat completions: `tools=[{"type": "function", "function": {...}}]`.

Typed with the `openai` SDK's own param types (imported for type checkers only: `import
toolreg` never loads `openai`), so `tools=registry.get_tools()` and
`messages.append(observation(result))` pass a type checker with whichever SDK is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from ..definition.names import NAME_RULES
from ..errors import ConversationError
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Dialect, Format, assistant_message, function_call_of

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionToolMessageParam, ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

__all__ = ["FORMAT", "Observation", "ToolDefinition", "definition", "observation", "parse_calls"]

ToolDefinition: TypeAlias = "ChatCompletionToolParam"
"""One entry of `tools=` (`{"type": "function", "function": {...}}`): the SDK's type."""

Observation: TypeAlias = "ChatCompletionToolMessageParam"
"""The `tool` message answering one call: the SDK's type (a `ChatCompletionMessageParam`)."""


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    function: FunctionDefinition = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = parameters
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def observation(result: ToolResult) -> Observation:
    """The `tool` message answering one call."""
    return {"role": "tool", "tool_call_id": result.call_id or "", "content": result.content}


def parse_calls(message: Any) -> list[ToolCall]:
    """The calls in an assistant message (`tool_calls`), in order: a dict, the SDK's
    message, a whole `ChatCompletion` or a streamed chunk (see `assistant_message`)."""
    message = assistant_message(message)
    items = message.get("tool_calls") or []
    if not isinstance(items, list):
        raise ConversationError("the endpoint sent tool_calls that are not a list")
    calls = []
    for item in items:
        if not isinstance(item, dict):
            raise ConversationError("the endpoint sent a tool call that is not an object")
        call = function_call_of(item.get("function") or {})
        calls.append(ToolCall(call.name, call.arguments, item.get("id")))
    return calls


def choice(choice: str) -> Any:
    """`tool_choice` for "auto", "none", "required" or a tool's name."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


FORMAT = Format(
    name="openai",
    name_rule=NAME_RULES["openai"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
    dialect=Dialect(
        name="tools",
        tools_key="tools",
        choice_key="tool_choice",
        choice=choice,
        call_keys=("tool_calls",),
    ),
)
