"""OpenAI Responses API: flat `{"type": "function", "name", "parameters", "strict"}` tools.

Its conversation dialect ("responses") sends the history as input items (`input`), reads
`function_call` items and answers each with a `function_call_output` item; the client keeps
the history (`store: false`) unless the server is asked to (`previous_response_id`).
Typed with the `openai` SDK's own param types, like `formats.openai`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from ..definition.names import NAME_RULES
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Dialect, Format, entries, make_call

if TYPE_CHECKING:
    from openai.types.responses import FunctionToolParam
    from openai.types.responses.response_input_param import FunctionCallOutput

__all__ = [
    "FORMAT",
    "Observation",
    "ToolDefinition",
    "choice",
    "definition",
    "observation",
    "parse_calls",
    "text_format",
]

ToolDefinition: TypeAlias = "FunctionToolParam"
"""One entry of `tools=` in `client.responses.create`: the SDK's type."""

Observation: TypeAlias = "FunctionCallOutput"
"""The `function_call_output` input item answering one call: the SDK's type."""


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    # `strict` is always sent: the Responses API defaults to strict when it is left out.
    if tool.described_with_examples:
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.described_with_examples,
            "parameters": parameters,
            "strict": strict,
        }
    return {"type": "function", "name": tool.name, "parameters": parameters, "strict": strict}


def observation(result: ToolResult) -> Observation:
    """The `function_call_output` input item answering one call."""
    return {
        "type": "function_call_output",
        "call_id": result.call_id or "",
        "output": result.content,
    }


def parse_calls(response: Any) -> list[ToolCall]:
    """The `function_call` items of a Responses API response (or of its `output` list)."""
    return [
        make_call(item.get("name"), item.get("arguments"), item.get("call_id"))
        for item in entries(response, "output")
        if item.get("type") == "function_call"
    ]


def choice(choice: str) -> Any:
    """`tool_choice` for "auto", "none", "required" or a tool's name."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def text_format(name: str, schema: dict[str, Any], strict: bool) -> dict[str, Any]:
    """Structured output in the Responses API: `text.format` with a `json_schema`."""
    schema_format: dict[str, Any] = {"type": "json_schema", "name": name, "schema": schema}
    if strict:
        schema_format["strict"] = True
    return {"text": {"format": schema_format}}


FORMAT = Format(
    name="responses",
    name_rule=NAME_RULES["responses"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
    dialect=Dialect(
        name="responses",
        tools_key="tools",
        choice_key="tool_choice",
        choice=choice,
        call_keys=(),
        api="responses",
        history_key="input",
        output_format=text_format,
        client_state={"store": False},
        server_state_key="previous_response_id",
    ),
)
