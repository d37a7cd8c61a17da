"""OpenAI chat completions: `tools=[{"type": "function", "function": {...}}]`.

Typed with the `openai` SDK's own param types (imported for type checkers only: `import
toolreg` never loads `openai`), so `tools=registry.get_tools()` and
`messages.append(observation(result))` pass a type checker with whichever SDK is installed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeAlias

from ..definition.names import NAME_RULES
from ..errors import ConversationError
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Dialect, Format, assistant_message, function_call_of, is_json_object

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionMessageToolCallUnionParam,
        ChatCompletionToolMessageParam,
        ChatCompletionToolParam,
    )
    from openai.types.shared_params import FunctionDefinition

__all__ = [
    "FORMAT",
    "AssistantMessage",
    "Observation",
    "ToolDefinition",
    "definition",
    "echo",
    "observation",
    "parse_calls",
]

ToolDefinition: TypeAlias = "ChatCompletionToolParam"
"""One entry of `tools=` (`{"type": "function", "function": {...}}`): the SDK's type."""

Observation: TypeAlias = "ChatCompletionToolMessageParam"
"""The `tool` message answering one call: the SDK's type (a `ChatCompletionMessageParam`)."""

AssistantMessage: TypeAlias = "ChatCompletionAssistantMessageParam"
"""The assistant message sent back before its calls' observations: the SDK's type."""


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    """One entry of chat completions' `tools=[...]`:
    `{"type": "function", "function": {"name", "description", "parameters"}}`.

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; here it adds `"strict": true`.

    `get_tools("openai")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    function: FunctionDefinition = {"name": tool.name}
    if tool.described_with_examples:
        function["description"] = tool.described_with_examples
    function["parameters"] = parameters
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def observation(result: ToolResult) -> Observation:
    """The `tool` message answering one call: `{"role": "tool", "tool_call_id", "content"}`,
    the content being `result.content`, the text the model reads (an error's message too).

    `messages.extend(observation(r) for r in dispatch_many(parse_calls(completion)))`, after
    `messages.append(echo(completion))`.
    """
    return {"role": "tool", "tool_call_id": result.call_id or "", "content": result.content}


def echo(message: Any) -> AssistantMessage:
    """The assistant message to append to `messages` before its calls' observations, from
    the SDK's message, a whole `ChatCompletion` or a dict: only what a request takes (role,
    content, refusal, tool_calls), and a call whose arguments are not a JSON object sent back
    with `{}` (see `formats.base.is_json_object`; the observation tells the model why).

    Args:
        message: the assistant message, the whole `ChatCompletion`, or a dict of either.

    Raises:
        ConversationError: the endpoint sent content that is not text, or `tool_calls` that
            are not a list of objects.

    Example:
        messages.append(echo(completion))
        messages.extend(observation(r) for r in registry.dispatch_many(parse_calls(completion)))
    """
    data = assistant_message(message)
    content = data.get("content")
    out: AssistantMessage = {"role": "assistant", "content": content}
    if content is not None and not isinstance(content, (str, list)):
        raise ConversationError("the endpoint sent message content that is not text")
    if isinstance(data.get("refusal"), str):
        out["refusal"] = data["refusal"]
    calls = data.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise ConversationError("the endpoint sent tool_calls that are not a list")
        out["tool_calls"] = [_echo_call(call) for call in calls]
    elif content is None:
        out["content"] = ""  # some servers refuse a null content without calls
    return out


def _echo_call(call: Any) -> ChatCompletionMessageToolCallUnionParam:
    if not isinstance(call, dict):
        raise ConversationError("the endpoint sent a tool call that is not an object")
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, dict):
        return call  # type: ignore[return-value]  # a custom tool's call: as received
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # a server that sent them decoded
        text = json.dumps(arguments, ensure_ascii=False)
    elif isinstance(arguments, str) and is_json_object(arguments):
        text = arguments
    else:  # cut off mid-call, or not text at all
        text = "{}"
    name = function.get("name")
    return {
        "id": str(call.get("id") or ""),
        "type": "function",
        "function": {"name": name if isinstance(name, str) else "", "arguments": text},
    }


def parse_calls(message: Any) -> list[ToolCall]:
    """The calls in an assistant message (`tool_calls`), in order: a dict, the SDK's
    message, a whole `ChatCompletion` or a streamed chunk (see `assistant_message`).

    Args:
        message: a message, a `ChatCompletion` or a streamed chunk, as a dict or an SDK object.

    Raises:
        ConversationError: `tool_calls` is not a list of objects.

    Example:
        results = registry.dispatch_many(parse_calls(completion))
    """
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
"""The `openai` format: it writes chat completions' `tools=[...]` (`get_tools()`), reads calls from
a `ChatCompletion`, a message or a streamed chunk, and answers them with `tool` messages; the
`tools` dialect of `Conversation`.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("openai")` takes."""
