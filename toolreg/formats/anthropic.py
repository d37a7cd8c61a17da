"""Anthropic Messages API: `{"name", "description", "input_schema"}` (and `input_examples`).

`ToolDefinition` and `Observation` are the shapes of the `anthropic` SDK's `ToolParam` and
`ToolResultBlockParam` with the keys toolreg writes (the SDK is not a dependency).

Tool search: a tool registered with `defer_loading=True` is written with `"defer_loading":
true`, and `tool_search_tool("bm25" | "regex")` is the server tool that searches the
deferred tools sent with the request (the API's `tool_search_tool_bm25_20251119` /
`tool_search_tool_regex_20251119`). An application that searches itself (toolreg's index:
`registry.search_tools(query)`) answers its own search tool's call with
`tool_references(call_id, names)`: a `tool_result` of `tool_reference` blocks, which load the
deferred tools named.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, Literal, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # typing's TypedDict reads NotRequired from Python 3.11 on
    from typing_extensions import NotRequired, TypedDict

from ..content import File, Image, Media
from ..definition.names import NAME_RULES
from ..errors import UsageError
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import Format, entries, layout, make_call, shown_parts

__all__ = [
    "FORMAT",
    "IMAGE_TYPES",
    "SEARCH_TOOLS",
    "DocumentBlock",
    "ImageBlock",
    "Observation",
    "ResultBlock",
    "ToolDefinition",
    "ToolReference",
    "ToolReferences",
    "ToolSearchTool",
    "definition",
    "observation",
    "parse_calls",
    "tool_references",
    "tool_search_tool",
]


class ToolDefinition(TypedDict):
    """One entry of `tools=` in `client.messages.create`."""

    name: str
    description: NotRequired[str]
    input_schema: dict[str, Any]
    strict: NotRequired[bool]
    input_examples: NotRequired[list[dict[str, Any]]]
    defer_loading: NotRequired[bool]


class Text(TypedDict):
    type: Literal["text"]
    text: str


class Base64Source(TypedDict):
    type: Literal["base64"]
    media_type: str
    data: str


class ImageBlock(TypedDict):
    """An `image` block of a rich result (the SDK's `ImageBlockParam`, base64 source)."""

    type: Literal["image"]
    source: Base64Source


class DocumentBlock(TypedDict):
    """A `document` block of a rich result: a PDF (the SDK's `DocumentBlockParam`)."""

    type: Literal["document"]
    source: Base64Source
    title: NotRequired[str]


ResultBlock = Union[Text, ImageBlock, DocumentBlock]
"""A block of a rich result's `tool_result` content."""


class Observation(TypedDict):
    """The `tool_result` content block answering one `tool_use` block: its content is the
    result's text, or for a rich result its blocks (text, images, PDF documents)."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ResultBlock]
    is_error: bool


class ToolSearchTool(TypedDict):
    """The server tool that searches deferred tools (the SDK's `ToolSearchToolBm25_20251119Param`
    and `ToolSearchToolRegex20251119Param`)."""

    type: Literal["tool_search_tool_bm25_20251119", "tool_search_tool_regex_20251119"]
    name: Literal["tool_search_tool_bm25", "tool_search_tool_regex"]


class ToolReference(TypedDict):
    """A `tool_reference` block: loads the deferred tool `tool_name`."""

    type: Literal["tool_reference"]
    tool_name: str


class ToolReferences(TypedDict):
    """A `tool_result` block of `tool_reference` blocks: an application's own tool search."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: list[ToolReference | Text]


IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types the Messages API takes; other images are left out as text."""

SEARCH_TOOLS: dict[str, ToolSearchTool] = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
"""The API's tool search server tools, by the kind of query the model writes."""


def definition(tool: Tool, parameters: dict[str, Any], strict: bool) -> ToolDefinition:
    """One entry of the Messages API's `tools=[...]`: `{"name", "description",
    "input_schema"}`, with the tool's examples as `input_examples` and `defer_loading`.

    Args:
        tool: the registered tool: its name, description (with its examples where this
            format has no field for them) and flags.
        parameters: the JSON Schema of its arguments, already prepared for this export
            (made strict or not, `required` advertised or not).
        strict: whether the export asked for strict mode; here it adds `"strict": true`.

    `get_tools("anthropic")` calls it, through `FORMAT`, for every tool it exports (and
    checks the name against the provider's rule first); call that rather than this.
    """
    out: ToolDefinition
    if tool.description:
        out = {"name": tool.name, "description": tool.description, "input_schema": parameters}
    else:
        out = {"name": tool.name, "input_schema": parameters}
    if strict:
        out["strict"] = True
    if tool.examples:  # the API's own field: the description stays as written
        out["input_examples"] = [dict(example) for example in tool.examples]
    if tool.defer_loading:  # loaded when a tool search returns a reference to it
        out["defer_loading"] = True
    return out


def tool_search_tool(kind: Literal["bm25", "regex"] = "bm25") -> ToolSearchTool:
    """The server tool that searches the deferred tools: natural-language queries ("bm25")
    or regular expressions the model writes ("regex").

    Args:
        kind: `"bm25"` or `"regex"`.

    Raises:
        UsageError: another `kind`.
    """
    found = SEARCH_TOOLS.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise UsageError(f"tool_search_tool({kind!r}): choose 'bm25' or 'regex'")
    return {"type": found["type"], "name": found["name"]}


def tool_references(tool_use_id: str, names: Iterable[str]) -> ToolReferences:
    """The `tool_result` answering an application's own search tool with the tools it
    found, as `tool_reference` blocks (each must be a deferred tool sent with the request);
    none found is a short text, never an empty result.

    Args:
        tool_use_id: the id of the search tool's `tool_use` block it answers.
        names: the names of the tools found, best first.
    """
    content: list[ToolReference | Text] = [
        {"type": "tool_reference", "tool_name": name} for name in names
    ]
    if not content:
        content = [{"type": "text", "text": "No tool matches. Try other words."}]
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


def observation(result: ToolResult) -> Observation:
    """The `tool_result` content block answering one `tool_use` block.

    Args:
        result: the dispatched call's `ToolResult`; its `call_id` is the `tool_use` id, and a
            failure sets `is_error`.

    All of a round's results go back in one user message: `{"role": "user", "content":
    [observation(r) for r in results]}`.

    A rich result (`result.parts`) is a list of blocks: its text as text blocks, its images
    (`IMAGE_TYPES`) as `image` blocks, its PDF files as `document` blocks, a text file's
    text after a line naming it, and a marker for what the API takes no block for (audio,
    other files and image types).
    """
    parts = shown_parts(result)
    content: str | list[ResultBlock] = result.content
    if parts:
        blocks: list[str | ImageBlock | DocumentBlock] = layout(parts, _block)
        content = [_text(b) if isinstance(b, str) else b for b in blocks]
    return {
        "type": "tool_result",
        "tool_use_id": result.call_id or "",
        "content": content,
        "is_error": not result.ok,
    }


def _text(text: str) -> Text:
    return {"type": "text", "text": text}


def _block(part: Media) -> ImageBlock | DocumentBlock | None:
    source: Base64Source = {"type": "base64", "media_type": part.essence, "data": ""}
    if isinstance(part, Image) and part.essence in IMAGE_TYPES:
        source["data"] = part.base64()
        return {"type": "image", "source": source}
    if isinstance(part, File) and part.essence == "application/pdf" and not part.is_text:
        source["data"] = part.base64()
        document: DocumentBlock = {"type": "document", "source": source}
        if part.name:
            document["title"] = part.name
        return document
    return None


def parse_calls(message: Any) -> list[ToolCall]:
    """The `tool_use` blocks of an assistant message (or of its `content` list)."""
    return [
        make_call(block.get("name"), block.get("input"), block.get("id"))
        for block in entries(message, "content")
        if block.get("type") == "tool_use"
    ]


FORMAT = Format(
    name="anthropic",
    name_rule=NAME_RULES["anthropic"],
    definition=definition,
    parse_calls=parse_calls,
    observation=observation,
)
"""The `anthropic` format: it writes Anthropic's Messages API tool definitions
(`get_tools("anthropic")`), reads `tool_use` blocks from a message, and answers them with
`tool_result` blocks; the `anthropic` dialect of `Conversation`.

`get_tools(FORMAT)` is typed by what it writes; `FORMAT.name` is the name
`get_tools("anthropic")` takes."""
