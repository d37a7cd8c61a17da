"""MCP `Tool` objects: `name`, `description`, `inputSchema`, `annotations` (behaviour hints).

`ToolDefinition` and `Observation` are the JSON shapes of the protocol's `Tool` and
`CallToolResult` with the keys toolreg writes.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # typing's TypedDict reads NotRequired from Python 3.11 on
    from typing_extensions import NotRequired, TypedDict

from ..definition.names import NAME_RULES
from ..definition.returns import return_object_schema
from ..jsonvalues import copy_json
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, as_data, make_call

__all__ = [
    "FORMAT",
    "Observation",
    "TextContent",
    "ToolAnnotations",
    "ToolDefinition",
    "definition",
    "observation",
    "output_schema",
    "parse_calls",
]


class ToolAnnotations(TypedDict):
    """A tool's behaviour hints, from its flags: `readOnlyHint` (`read_only=`), and for a
    tool that writes `destructiveHint` (`destructive=`) and `idempotentHint`
    (`idempotent=`); `title` (`title=`). A client may show them; toolreg trusts a remote
    server's only when told to (`mount(..., trust_annotations=...)`)."""

    readOnlyHint: bool
    destructiveHint: NotRequired[bool]
    idempotentHint: NotRequired[bool]
    title: NotRequired[str]


class ToolDefinition(TypedDict):
    """One entry of a `tools/list` result, as `definition` writes it: the tool's `name`,
    `title`, `description`, `inputSchema` and `annotations`."""

    name: str
    title: NotRequired[str]
    description: NotRequired[str]
    inputSchema: dict[str, Any]
    annotations: ToolAnnotations


class TextContent(TypedDict):
    """A text content block of a `CallToolResult`: `{"type": "text", "text": ...}`, the
    text being what the model reads of the call's result."""

    type: Literal["text"]
    text: str


class Observation(TypedDict):
    """A `CallToolResult`: the result as text content, `isError` for failures."""

    content: list[TextContent]
    isError: bool


class _Named(TypedDict, total=False):
    title: str
    description: str


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    """One entry of an MCP `tools/list` result: `{"name", "title", "description",
    "inputSchema", "annotations"}`, the annotations saying `readOnlyHint` always, and
    `destructiveHint` / `idempotentHint` for a tool that writes.

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; MCP has no strict mode, so it is
            ignored.

    `get_tools("mcp")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    named: _Named = {}
    if tool.title:
        named["title"] = tool.title
    if tool.described_with_examples:
        named["description"] = tool.described_with_examples
    # MCP's defaults assume the worst (destructiveHint true), so say both explicitly;
    # destructiveHint and idempotentHint (default false) only mean something for a tool
    # that writes.
    annotations: ToolAnnotations = {"readOnlyHint": tool.read_only}
    if not tool.read_only:
        annotations["destructiveHint"] = tool.destructive
        if tool.idempotent:
            annotations["idempotentHint"] = True
    if tool.title:
        annotations["title"] = tool.title
    return {"name": tool.name, **named, "inputSchema": parameters, "annotations": annotations}


def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The JSON Schema of the tool's result an MCP `tools/list` entry carries as its
    `outputSchema`: its `output_schema` when it was given one, else its return annotation's
    when that is a JSON object (`return_object_schema`).

    None for anything else (text, numbers, lists, optional objects, no annotation, a type
    toolreg cannot describe): MCP output schemas describe objects only, and a tool without
    one is served as text alone.
    """
    if tool.output_schema is not None:
        given: dict[str, Any] = copy_json(tool.output_schema)
        return given
    return return_object_schema(tool.function, f"the result of {tool.name}")


def observation(result: ToolResult) -> Observation:
    """An MCP `CallToolResult`: text content, `isError` for failures.

    Args:
        result: the dispatched call's `ToolResult`; a failure sets `isError`.
    """
    return {"content": [{"type": "text", "text": result.content}], "isError": not result.ok}


def parse_calls(params: Any) -> list[ToolCall]:
    """The call in a `tools/call` request's `params` (`{"name", "arguments"}`), as a list of
    one: an MCP request carries exactly one call."""
    data = as_data(params)
    data = data if isinstance(data, dict) else {}
    return [make_call(data.get("name"), data.get("arguments"))]


FORMAT = Format(
    name="mcp",
    name_rule=NAME_RULES["mcp"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
)
"""The `mcp` format: it writes MCP `tools/list` entries (`get_tools("mcp")`), reads a `tools/call`
request's params, and answers it with a `CallToolResult`; what `toolreg serve` lists.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("mcp")` takes."""
