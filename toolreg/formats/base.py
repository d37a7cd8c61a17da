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
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal

if TYPE_CHECKING:
    from typing_extensions import TypeVar  # `default=`
elif sys.version_info >= (3, 13):
    from typing import TypeVar
else:
    from typing import TypeVar as _TypeVar

    def TypeVar(name: str, *, default: Any) -> Any:
        """typing's TypeVar before Python 3.13, which takes no `default`: that is for type
        checkers (above), and importing typing_extensions for it would make `import toolreg`
        slower."""
        return _TypeVar(name)


from ..content import Media, Part, fallback_text
from ..definition.names import NameRule
from ..errors import ConversationError
from ..jsonvalues import strict_decoder
from ..result import ToolCall, ToolResult
from ..tool import Tool

__all__ = [
    "Definition",
    "DefinitionT",
    "Dialect",
    "Format",
    "ObservationT",
    "OutputFormat",
    "arguments_text",
    "as_data",
    "assistant_message",
    "entries",
    "function_call_of",
    "is_json_object",
    "layout",
    "make_call",
    "response_format",
    "shown_parts",
]

DefinitionT = TypeVar("DefinitionT", default=Any)
"""The type of one tool's definition in a format (a TypedDict: see each provider module)."""

ObservationT = TypeVar("ObservationT", default=Any)
"""The type of the entry answering one call in a format (a TypedDict, like `DefinitionT`)."""

Definition = Callable[[Tool, dict[str, Any], bool], DefinitionT]
"""`definition(tool, parameters, strict)`: the provider's definition of one tool, given the
parameters schema to advertise (already a copy, strict or not)."""


OutputFormat = Callable[[str, dict[str, Any], bool], dict[str, Any]]
"""`output_format(name, schema, strict)`: the request keys that ask for JSON matching
`schema` (a strict schema, to be enforced by the endpoint, when `strict`)."""


def response_format(name: str, schema: dict[str, Any], strict: bool) -> dict[str, Any]:
    """Structured output in chat completions: `response_format` with a `json_schema`.

    Args:
        name: the schema's name (the output type's name).
        schema: the JSON Schema of the output.
        strict: whether the endpoint is asked to enforce it.
    """
    json_schema: dict[str, Any] = {"name": name, "schema": schema}
    if strict:
        json_schema["strict"] = True
    return {"response_format": {"type": "json_schema", "json_schema": json_schema}}


@dataclass(frozen=True, slots=True)
class Dialect:
    """How the conversation loop talks tools in a format over an OpenAI-compatible endpoint.

    `api` names the endpoint: "chat.completions" or "responses" (the conversation reads
    either one's answers into the same shape: the entries the model added to the history,
    its text, its calls). A request carries the history under `history_key`, the format's
    definitions under `tools_key`, the tool choice under `choice_key` (built by `choice`
    from "auto", "none", "required" or a tool name) and structured output as the keys
    `output_format` returns. `call_keys` are the assistant-message keys that carry calls
    (none in the Responses API, where a call is an item of its own).

    Who keeps the history: by default the client sends all of it every time, with
    `client_state` added to the request (the Responses API: `store: false`). When
    `server_state_key` is set, the endpoint can keep it instead: that key names the
    previous response, and only the entries added since are sent.
    """

    name: str
    tools_key: str
    choice_key: str
    choice: Callable[[str], Any]
    call_keys: tuple[str, ...]
    api: Literal["chat.completions", "responses"] = "chat.completions"
    history_key: str = "messages"
    output_format: OutputFormat = response_format
    client_state: Mapping[str, Any] = field(default_factory=dict)
    server_state_key: str | None = None


@dataclass(frozen=True, slots=True)
class Format(Generic[DefinitionT, ObservationT]):
    """One provider format: see the module docstring.

    Typed by what it writes: each provider module's `ToolDefinition` and `Observation`
    (TypedDicts, or for OpenAI's APIs the `openai` SDK's own param types), so that its
    `definition` and `observation` (and `get_tools(format)`) pass straight to that SDK under
    a type checker. A bare `Format` is `Format[Any, Any]`.
    """

    name: str
    name_rule: NameRule
    definition: Definition[DefinitionT]
    parse_calls: Callable[[Any], list[ToolCall]]
    observation: Callable[[ToolResult], ObservationT]
    dialect: Dialect | None = None


def shown_parts(result: ToolResult) -> tuple[Part, ...]:
    """The parts of a rich result a format writes (`toolreg.content`): none for a plain
    result or a failure (a failure is its message, whatever it ran before)."""
    return result.parts if result.ok else ()


def layout(parts: tuple[Part, ...], native: Callable[[Media], Any]) -> list[Any]:
    """A rich result's parts as an API writes them: `native(part)` for a part the API takes
    in a tool result, text for the others (a text file's text after a line naming it, a
    marker for media: `toolreg.content.fallback_text`); adjacent texts joined by a line
    break, empty ones dropped (APIs refuse empty text blocks)."""
    out: list[Any] = []
    for part in parts:
        item = part if isinstance(part, str) else native(part)
        if item is None:
            item = fallback_text((part,))
        if isinstance(item, str):
            if not item:
                continue
            if out and isinstance(out[-1], str):
                out[-1] = f"{out[-1]}\n{item}"
                continue
        out.append(item)
    return out


def arguments_text(arguments: Any) -> str | dict[str, Any] | None:
    """Arguments as a model sent them: JSON text is kept as is, an object stays an object.

    Args:
        arguments: the arguments of a call as a provider's message holds them: JSON text, a
            dict, or something else (kept for dispatch to refuse).
    """
    if arguments is None or isinstance(arguments, (str, dict)):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def function_call_of(call: Any) -> ToolCall:
    """`{"name": ..., "arguments": ...}` as a model sent it -> a `ToolCall` (no id).

    Args:
        call: the `function_call` object of a legacy answer (dict or SDK object).

    Raises:
        ConversationError: the endpoint sent a function call that is not an object.
    """
    if not isinstance(call, dict):
        raise ConversationError("the endpoint sent a function call that is not an object")
    return make_call(call.get("name"), call.get("arguments"))


def make_call(name: Any, arguments: Any, call_id: Any = None) -> ToolCall:
    """A `ToolCall` from what a provider sent: a name that is not text becomes "" (unknown).

    Args:
        name: the tool name the provider sent.
        arguments: the arguments as sent (JSON text or an object).
        call_id: the provider's id of the call, if it has one.
    """
    return ToolCall(name if isinstance(name, str) else "", arguments_text(arguments), call_id)


def as_data(value: Any) -> Any:
    """An SDK object (pydantic, as the openai and anthropic SDKs return) as plain data.

    Args:
        value: an SDK object (it has `model_dump`), or data already, returned as it is.
    """
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def assistant_message(value: Any) -> dict[str, Any]:
    """The assistant message in what a chat-completions caller holds: a message (dict or the
    SDK's `ChatCompletionMessage`), a whole completion (its first choice's message), or a
    streamed chunk (its first choice's delta); {} for anything else.

    Args:
        value: a message, a completion or a chunk, as a dict or an SDK object.
    """
    data = as_data(value)
    if not isinstance(data, dict):
        return {}
    choices = data.get("choices")
    if isinstance(choices, list):
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        data = first.get("message") or first.get("delta") or {}
    return data if isinstance(data, dict) else {}


def is_json_object(arguments: Any) -> bool:
    """Whether a call's `arguments` are a JSON object, as text or already decoded. A local
    model cut off mid-call sends text that is not; servers such as llama.cpp's refuse a whole
    history that echoes such text back, so it goes back as `{}` (the observation says why)."""
    if isinstance(arguments, dict):
        return True
    if not isinstance(arguments, str):
        return False
    try:
        return isinstance(strict_decoder.decode(arguments), dict)
    except (ValueError, RecursionError):
        return False


def entries(container: Any, key: str) -> list[dict[str, Any]]:
    """The dict entries of `container[key]` (or of `container` itself when it is a list),
    SDK objects read as plain data; anything else is skipped."""
    data = as_data(container)
    items = data.get(key) if isinstance(data, dict) else data
    if not isinstance(items, (list, tuple)):
        return []
    return [entry for entry in map(as_data, items) if isinstance(entry, dict)]
