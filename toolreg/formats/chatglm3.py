"""ChatGLM3: the `tools` list its chat template takes (`{"name", "description", "parameters"}`)."""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

if sys.version_info >= (3, 11):
    from typing import TypedDict
else:  # typing's TypedDict reads NotRequired from Python 3.11 on
    from typing_extensions import TypedDict

from ..definition.names import NAME_RULES
from ..result import ToolCall, ToolResult
from ..tool import Tool
from . import openai
from .base import Dialect, Format, arguments_text, assistant_message, function_call_of

__all__ = ["FORMAT", "Observation", "ToolDefinition", "definition", "observation", "parse_calls"]


class ToolDefinition(TypedDict):
    """One entry of the `tools` list ChatGLM3's chat template takes."""

    name: str
    description: str
    parameters: dict[str, Any]


class Observation(TypedDict):
    """The `observation` message answering a call."""

    role: Literal["observation"]
    content: str


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    """One tool of ChatGLM3's chat template: `{"name", "description", "parameters"}`.

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; ChatGLM3 has no strict mode, so it
            is ignored.

    `get_tools("chatglm3")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    return {
        "name": tool.name,
        "description": tool.described_with_examples,
        "parameters": parameters,
    }


def observation(result: ToolResult) -> Observation:
    """ChatGLM3 answers a call with an `observation` message (no call id).

    Args:
        result: the dispatched call's `ToolResult`; its text is the observation's content.
    """
    return {"role": "observation", "content": result.content}


def parse_calls(message: Any) -> list[ToolCall]:
    """ChatGLM3's API demo sends `function_call`; some servers send `tool_calls`, others put
    the call in the text as JSON: `{"name": ..., "parameters" or "arguments": {...}}`. The
    message may be a dict, an SDK object or a whole completion."""
    message = assistant_message(message)
    call = message.get("function_call")
    if call:
        return [function_call_of(call)]
    if message.get("tool_calls"):
        return [ToolCall(c.name, c.arguments) for c in openai.parse_calls(message)]
    return _calls_in_text(message.get("content"))


def _calls_in_text(content: Any) -> list[ToolCall]:
    if not isinstance(content, str) or not content.lstrip().startswith("{"):
        return []
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return []
    # A call names its arguments too; JSON with only a "name" is an answer (structured output).
    arguments = data.get("parameters", data.get("arguments"))
    if not isinstance(arguments, (dict, str)):
        return []
    return [ToolCall(data["name"], arguments_text(arguments))]


FORMAT = Format(
    name="chatglm3",
    name_rule=NAME_RULES["chatglm3"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
    dialect=Dialect(
        name="chatglm3",
        tools_key="tools",
        choice_key="tool_choice",
        choice=openai.choice,  # the demo reads a named choice as tool_choice.function.name
        call_keys=("function_call", "tool_calls"),
    ),
)
"""The `chatglm3` format: it writes ChatGLM3's tool definitions (`get_tools("chatglm3")`) and
answers calls with its `observation` messages; the `chatglm3` dialect of `Conversation`.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("chatglm3")` takes."""
