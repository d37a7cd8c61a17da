"""OpenAI's legacy `functions` / `function_call` dialect: one call per turn, role `function`.

Typed with the `openai` SDK's own param types, like `formats.openai`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from ..definition.names import NAME_RULES
from ..errors import UsageError
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Dialect, Format, assistant_message, function_call_of

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionFunctionMessageParam
    from openai.types.chat.completion_create_params import Function

__all__ = ["FORMAT", "Observation", "ToolDefinition", "definition", "observation", "parse_calls"]

ToolDefinition: TypeAlias = "Function"
"""One entry of `functions=` in `client.chat.completions.create`: the SDK's type."""

Observation: TypeAlias = "ChatCompletionFunctionMessageParam"
"""The `function` message answering the call: the SDK's type."""


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    """One entry of OpenAI's legacy `functions=[...]`: `{"name", "description",
    "parameters"}`.

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; the legacy API has no strict mode,
            so it is ignored.

    `get_tools("functions")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    out: ToolDefinition = {"name": tool.name}
    if tool.described_with_examples:
        out["description"] = tool.described_with_examples
    out["parameters"] = parameters
    return out


def observation(result: ToolResult) -> Observation:
    """The `function` message answering a legacy `function_call` (role `function`, the
    tool's name, the result's text)."""
    return {"role": "function", "name": result.tool_name, "content": result.content}


def parse_calls(message: Any) -> list[ToolCall]:
    """The one `function_call` of an assistant message (a dict, an SDK object or a whole
    completion), if any."""
    call = assistant_message(message).get("function_call")
    return [function_call_of(call)] if call else []


def _choice(choice: str) -> Any:
    if choice in ("auto", "none"):
        return choice
    if choice == "required":
        raise UsageError('the "functions" dialect has no tool_choice="required"; name a tool')
    return {"name": choice}


FORMAT = Format(
    name="functions",
    name_rule=NAME_RULES["functions"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
    dialect=Dialect(
        name="functions",
        tools_key="functions",
        choice_key="function_call",
        choice=_choice,
        call_keys=("function_call",),
    ),
)
"""The `functions` format: it writes OpenAI's legacy `functions=[...]` (`get_tools("functions")`),
reads a `function_call`, and answers it with a `function` message; the `functions` dialect of
`Conversation`.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("functions")` takes."""
