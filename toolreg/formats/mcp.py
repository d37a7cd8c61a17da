"""MCP `Tool` objects: `name`, `description`, `inputSchema`, `annotations` (behaviour hints).

`ToolDefinition` and `Observation` are the JSON shapes of the protocol's `Tool` and
`CallToolResult` with the keys toolreg writes.
"""

from __future__ import annotations

import sys
from typing import Any, Literal, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # typing's TypedDict reads NotRequired from Python 3.11 on
    from typing_extensions import NotRequired, TypedDict

from ..content import Audio, File, Image, Part
from ..definition.names import NAME_RULES
from ..definition.returns import return_object_schema
from ..jsonvalues import copy_json
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, as_data, make_call, shown_parts

__all__ = [
    "FORMAT",
    "AudioContent",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "Observation",
    "TextContent",
    "ToolAnnotations",
    "ToolDefinition",
    "content_blocks",
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


class ImageContent(TypedDict):
    """An image content block: `{"type": "image", "data": <base64>, "mimeType"}`."""

    type: Literal["image"]
    data: str
    mimeType: str


class AudioContent(TypedDict):
    """An audio content block: `{"type": "audio", "data": <base64>, "mimeType"}`."""

    type: Literal["audio"]
    data: str
    mimeType: str


class ResourceContents(TypedDict):
    """An embedded resource: its `uri`, `mimeType`, and its `text` or (base64) `blob`."""

    uri: str
    mimeType: str
    text: NotRequired[str]
    blob: NotRequired[str]


class EmbeddedResource(TypedDict):
    """A file as an embedded `resource` content block."""

    type: Literal["resource"]
    resource: ResourceContents


ContentBlock = Union[TextContent, ImageContent, AudioContent, EmbeddedResource]
"""A content block of a `CallToolResult`: text, an image, a sound or an embedded file."""


class Observation(TypedDict):
    """A `CallToolResult`: the result as content blocks (text; for a rich result also
    images, audio and embedded resources), `isError` for failures."""

    content: list[ContentBlock]
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
    """An MCP `CallToolResult`: its content blocks (`content_blocks`), `isError` for
    failures.

    Args:
        result: the dispatched call's `ToolResult`; a failure sets `isError`.
    """
    return {"content": content_blocks(result), "isError": not result.ok}


def content_blocks(result: ToolResult) -> list[ContentBlock]:
    """A result's MCP content: one text block (its text); for a rich result one block per
    part: text, `image`, `audio`, and a file as an embedded `resource` (its `text`, or its
    bytes as a base64 `blob`, under its URI: see `toolreg.content.File`)."""
    parts = shown_parts(result)
    if not parts:
        return [{"type": "text", "text": result.content}]
    return [_block(part) for part in parts]


def _block(part: Part) -> ContentBlock:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if isinstance(part, Image):
        return {"type": "image", "data": part.base64(), "mimeType": part.essence}
    if isinstance(part, Audio):
        return {"type": "audio", "data": part.base64(), "mimeType": part.essence}
    assert isinstance(part, File)
    resource: ResourceContents = {"uri": part.location, "mimeType": part.media_type}
    if isinstance(part.data, str):
        resource["text"] = part.data
    else:
        resource["blob"] = part.base64()
    return {"type": "resource", "resource": resource}


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
