"""OpenAI Responses API: flat `{"type": "function", "name", "parameters", "strict"}` tools.

Its conversation dialect ("responses") sends the history as input items (`input`), reads
`function_call` items and answers each with a `function_call_output` item; the client keeps
the history (`store: false`) unless the server is asked to (`previous_response_id`).
Typed with the `openai` SDK's own param types, like `formats.openai`.

The API's own tool search: a tool registered with `defer_loading=True` is written with
`"defer_loading": true`; `tool_search_tool()` is the `tool_search` tool, hosted (the server
searches the deferred tools sent with the request) or client-executed (the model's
`tool_search_call` item is read as a call named `TOOL_SEARCH_CALL`, and `observation` writes
its result as a `tool_search_output` item carrying the definitions found). `namespace_tool`
groups tools under one `namespace`; a `function_call` item with a `namespace` is read as
the flat name `namespace_name` (`call_name`), so a tool registered as `crm_find_order` is
offered as `find_order` in the namespace `crm`. Items are echoed back as received, their
`namespace` and `caller` fields (a call made by a program: `{"type": "program", ...}`)
included; such a call is dispatched like any other (approvals, limits and timeouts apply).

Programmatic tool calling: `register_tool(allowed_callers=[...], output_schema=...)` is
written as the definition's `allowed_callers` and strict object `output_schema`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..content import File, Image, Media
from ..definition.names import NAME_RULES
from ..errors import UsageError
from ..jsonvalues import copy_json
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Dialect, Format, entries, layout, make_call, shown_parts

if TYPE_CHECKING:
    from openai.types.responses import (
        FunctionToolParam,
        NamespaceToolParam,
        ResponseToolSearchOutputItemParamParam,
        ToolSearchToolParam,
    )
    from openai.types.responses.response_function_call_output_item_param import (
        ResponseFunctionCallOutputItemParam,
    )
    from openai.types.responses.response_input_param import FunctionCallOutput
    from openai.types.responses.response_input_text_content_param import (
        ResponseInputTextContentParam,
    )

__all__ = [
    "FORMAT",
    "IMAGE_TYPES",
    "NAMESPACE_SEPARATOR",
    "TOOL_SEARCH_CALL",
    "Observation",
    "ToolDefinition",
    "ToolSearchOutput",
    "call_name",
    "choice",
    "definition",
    "namespace_tool",
    "observation",
    "parse_calls",
    "text_format",
    "tool_search_output",
    "tool_search_tool",
]

TOOL_SEARCH_CALL = "tool search"
"""The name a client-executed `tool_search_call` item is read as: no tool can have it (it
holds a space), so it never reaches a registered tool by mistake."""

NAMESPACE_SEPARATOR = "_"
"""Between a namespace and a function's name in the flat name: `crm` + `find_order` is
`crm_find_order`, the name the tool is registered (and offered elsewhere) as."""

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types the API takes as `input_image`; other images are left out as text."""

ToolDefinition: TypeAlias = "FunctionToolParam"
"""One entry of `tools=` in `client.responses.create`: the SDK's type."""

Observation: TypeAlias = "FunctionCallOutput"
"""The `function_call_output` input item answering one call: the SDK's type."""

ToolSearchOutput: TypeAlias = "ResponseToolSearchOutputItemParamParam"
"""The `tool_search_output` input item answering a client-executed tool search."""


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    # `strict` is always sent: the Responses API defaults to strict when it is left out.
    """One function tool of the Responses API:
    `{"type": "function", "name", "description", "parameters", "strict"}`, with
    `"defer_loading": true` for a tool registered `defer_loading=True`.

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; `"strict"` is always sent (the API
            takes strict as the default when it is left out).

    `get_tools("responses")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    out: ToolDefinition
    if tool.described_with_examples:
        out = {
            "type": "function",
            "name": tool.name,
            "description": tool.described_with_examples,
            "parameters": parameters,
            "strict": strict,
        }
    else:
        out = {"type": "function", "name": tool.name, "parameters": parameters, "strict": strict}
    if tool.defer_loading:  # found by the API's tool search (`tool_search_tool`)
        out["defer_loading"] = True
    if tool.allowed_callers:  # programmatic tool calling: who may call it
        out["allowed_callers"] = list(tool.allowed_callers)
    if tool.output_schema is not None:  # what a program calling it reads back
        out["output_schema"] = copy_json(tool.output_schema)
    return out


def tool_search_tool(
    description: str | None = None, parameters: dict[str, Any] | None = None
) -> ToolSearchToolParam:
    """The `tool_search` tool: hosted (no arguments: the server searches the tools sent with
    `defer_loading`), or client-executed with the `parameters` schema its calls fill (the
    application answers each `tool_search_call` with `tool_search_output`).

    Args:
        description: what the model reads of the client search tool (client search only).
        parameters: the JSON Schema of a client search's arguments; None for the hosted one.

    Raises:
        UsageError: a `description` without `parameters`.
    """
    if parameters is None:
        if description is not None:
            raise UsageError("tool_search_tool(description=...) needs parameters= (client search)")
        return {"type": "tool_search"}
    out: ToolSearchToolParam = {"type": "tool_search", "execution": "client"}
    if description:
        out["description"] = description
    out["parameters"] = parameters
    return out


def namespace_tool(
    name: str, description: str, definitions: Iterable[ToolDefinition]
) -> NamespaceToolParam:
    """The function `definitions` (this format's, e.g. from `get_tools("responses")`) as one
    `namespace` tool: each is offered under its name without the `name_` prefix, which every
    one must have (a call in the namespace is read back as the flat name, see `call_name`).

    Args:
        name: the namespace, and the prefix (`name_`) every definition's name starts with.
        description: what the model reads of the namespace as a whole.
        definitions: the function definitions it holds.

    Raises:
        UsageError: a name the Responses API rejects, an empty description, or a
            definition whose name lacks the `name_` prefix.
    """
    prefix = name + NAMESPACE_SEPARATOR
    if not NAME_RULES["responses"][0].fullmatch(name) or not description.strip():
        raise UsageError(
            f"namespace_tool({name!r}, ...): a name of a-z A-Z 0-9 _ - and a description "
            "that says what its tools are for"
        )
    inside: list[Any] = []  # the SDK's ToolFunction: a function definition's keys
    for entry in definitions:
        local = entry["name"].removeprefix(prefix)
        if local == entry["name"] or not local:
            raise UsageError(
                f"namespace_tool({name!r}): the tool {entry['name']!r} does not start with "
                f"{prefix!r}; register it as {prefix}{entry['name']} (the flat name used "
                "where there are no namespaces)"
            )
        inside.append({**entry, "name": local})
    return {"type": "namespace", "name": name, "description": description, "tools": inside}


def tool_search_output(call_id: str, tools: list[Any]) -> ToolSearchOutput:
    """The `tool_search_output` item answering a client-executed `tool_search_call`: the
    definitions it loads (none: nothing was found).

    Args:
        call_id: the `call_id` of the `tool_search_call` it answers.
        tools: the definitions the search found (this format's).
    """
    return {
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "tools": tools,
    }


def observation(result: ToolResult) -> Observation | ToolSearchOutput:
    """The input item answering one call: the `function_call_output` item, or for a tool
    search (`TOOL_SEARCH_CALL`) the `tool_search_output` item with the definitions in
    `result.value` (none when the search failed).

    A rich result's `output` (`result.parts`) is a list of content parts: its text as
    `input_text`, its images (`IMAGE_TYPES`) as `input_image` (a data URL), its PDF files
    as `input_file` (`file_data` a data URL, with a `filename`), a text file's text after a
    line naming it, and a marker for what the API takes no part for (audio, other files).
    """
    if result.tool_name == TOOL_SEARCH_CALL:
        found = result.value if result.ok and isinstance(result.value, list) else []
        return tool_search_output(result.call_id or "", found)
    parts = shown_parts(result)
    if not parts:
        return {
            "type": "function_call_output",
            "call_id": result.call_id or "",
            "output": result.content,
        }
    laid: list[str | ResponseFunctionCallOutputItemParam] = layout(parts, _output_part)
    output: list[ResponseFunctionCallOutputItemParam] = [
        _text(p) if isinstance(p, str) else p for p in laid
    ]
    return {"type": "function_call_output", "call_id": result.call_id or "", "output": output}


def _text(text: str) -> ResponseInputTextContentParam:
    return {"type": "input_text", "text": text}


def _output_part(part: Media) -> ResponseFunctionCallOutputItemParam | None:
    if isinstance(part, Image) and part.essence in IMAGE_TYPES:
        return {"type": "input_image", "image_url": part.data_url()}
    if isinstance(part, File) and part.essence == "application/pdf" and not part.is_text:
        return {"type": "input_file", "file_data": part.data_url(), "filename": part.filename()}
    return None


def call_name(item: dict[str, Any]) -> Any:
    """The flat name a `function_call` item calls: `namespace_name` inside a namespace."""
    name, namespace = item.get("name"), item.get("namespace")
    if isinstance(namespace, str) and namespace and isinstance(name, str):
        return namespace + NAMESPACE_SEPARATOR + name
    return name


def parse_calls(response: Any) -> list[ToolCall]:
    """The calls of a Responses API response (or of its `output` list): its `function_call`
    items (by flat name: see `call_name`) and its client-executed `tool_search_call` items
    (named `TOOL_SEARCH_CALL`); hosted searches are the server's, not calls."""
    calls = []
    for item in entries(response, "output"):
        kind = item.get("type")
        if kind == "function_call":
            calls.append(make_call(call_name(item), item.get("arguments"), item.get("call_id")))
        elif kind == "tool_search_call" and item.get("execution") == "client":
            calls.append(make_call(TOOL_SEARCH_CALL, item.get("arguments"), item.get("call_id")))
    return calls


def choice(choice: str) -> Any:
    """`tool_choice` for "auto", "none", "required" or a tool's name.

    Args:
        choice: `"auto"`, `"none"`, `"required"`, or the name of the tool to force.
    """
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def text_format(name: str, schema: dict[str, Any], strict: bool) -> dict[str, Any]:
    """Structured output in the Responses API: `text.format` with a `json_schema`.

    Args:
        name: the schema's name (the output type's name).
        schema: the JSON Schema of the output.
        strict: whether the endpoint is asked to enforce it.
    """
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
"""The `responses` format: it writes the Responses API's function tools (`get_tools("responses")`),
reads `function_call` items from a `Response`, and answers them with `function_call_output`
items; the `responses` dialect of `Conversation`.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("responses")` takes."""
