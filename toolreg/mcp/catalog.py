"""What an MCP client sees of a toolset: `tools/list` entries and `tools/call` results.

Plain functions, no I/O: the SDK's handlers and the HTTP fast path both answer from here.

- A `tools/list` entry is the toolset's `mcp` export (name, description, `inputSchema`,
  annotations) plus an `outputSchema` when the function's return annotation describes a
  JSON object (a TypedDict, dataclass, NamedTuple, pydantic model or `dict`).
- A `tools/call` result is the dispatch result's text, `isError` for any failure, and
  `structuredContent` (the same JSON, parsed) when the tool has an output schema; a rich
  result (an image, a sound, a file, or a list mixing them with text) is one content block
  per part: `text`, `image`, `audio`, an embedded `resource` for a file.
- A tool with versions (`register_tool(version=...)`) is listed once, at its latest
  version, as FastMCP lists one: `_meta.fastmcp.version` says which version the entry is,
  `_meta.fastmcp.versions` every version there is, latest first. A `tools/call` whose
  `_meta.fastmcp.version` names another version runs that one (`requested_version`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..definition.versions import check_version
from ..formats import export_tools
from ..formats.mcp import content_blocks, output_schema
from ..result import ToolResult
from ..tool import Tool
from ..toolsets import Toolset, versions_of

__all__ = ["Catalog", "call_result", "output_schema", "remote_version", "requested_version"]

META_KEY = "fastmcp"
"""The `_meta` key under which versions are listed and asked for (FastMCP's)."""
_MAX_REQUESTED = 64  # characters of a version a client asks for (toolreg's are shorter)


def remote_version(meta: object) -> str | None:
    """The version a mounted server's `tools/list` entry says its tool is
    (`_meta.fastmcp.version`, as FastMCP and `toolreg serve` list it), when it is a version
    by toolreg's rule (`toolreg.definition.versions`); else None: the tool is mounted
    without one (a server's `_meta` is untrusted: anything else is not read)."""
    if not isinstance(meta, Mapping):
        return None
    ours = meta.get(META_KEY)
    version = ours.get("version") if isinstance(ours, Mapping) else None
    return version if isinstance(version, str) and check_version(version) == version else None


def requested_version(meta: object) -> str | None:
    """The version a `tools/call` asks for in its `_meta` (`{"fastmcp": {"version": "1"}}`,
    as FastMCP's client sends it), or None: none asked for, or not a string of at most
    64 characters (FastMCP's server, too, reads only a string)."""
    if not isinstance(meta, Mapping):
        return None
    ours = meta.get(META_KEY)
    version = ours.get("version") if isinstance(ours, Mapping) else None
    if isinstance(version, str) and 0 < len(version) <= _MAX_REQUESTED:
        return version
    return None


def call_result(result: ToolResult, structured: bool) -> dict[str, Any]:
    """A `CallToolResult` (wire form) for a dispatch result.

    `structured`: the tool advertises an output schema, so a successful result also carries
    its JSON as `structuredContent` (omitted when the text is not a JSON object, e.g. cut
    by `max_result_chars`).
    """
    out: dict[str, Any] = {"content": content_blocks(result), "isError": not result.ok}
    if structured and result.ok and not result.parts:
        try:
            data = json.loads(result.content)
        except ValueError:
            data = None
        if isinstance(data, dict):
            out["structuredContent"] = data
    return out


class Catalog:
    """A toolset's `tools/list` entries, rebuilt only when its tools change (a registration,
    a mount's refresh: `tools()` then answers other `Tool` objects)."""

    __slots__ = ("_entries", "_outputs", "_scopes", "_tools", "_versions", "toolset")

    def __init__(self, toolset: Toolset) -> None:
        self.toolset = toolset
        self._tools: list[Tool] = []  # what the entries were made of
        self._versions: list[tuple[str | None, ...]] = []  # and each one's versions
        self._entries: list[dict[str, Any]] = []
        self._scopes: list[frozenset[str]] = []
        self._outputs: dict[str, tuple[Tool, dict[str, Any] | None]] = {}

    def entries(
        self, permits: Callable[[frozenset[str]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The `tools` of a `tools/list` result (shared: treat as read-only); with
        `permits`, only the tools whose scopes it allows."""
        tools = self.toolset.tools()
        known = self._tools
        versions = [self.versions(tool) for tool in tools]
        if (
            len(tools) != len(known)
            or any(a is not b for a, b in zip(tools, known))
            or versions != self._versions
        ):
            export = export_tools(tools, "mcp")
            self._entries = [self._entry(*e) for e in zip(tools, export, versions)]
            self._scopes = [tool.scopes for tool in tools]
            self._tools, self._versions = tools, versions
        if permits is None or not any(self._scopes):
            return self._entries
        return [e for e, s in zip(self._entries, self._scopes) if permits(s)]

    def scopes(self) -> set[str]:
        """Every scope a tool of the toolset asks for."""
        return {scope for tool in self.toolset.tools() for scope in tool.scopes}

    def versions(self, tool: Tool) -> tuple[str | None, ...]:
        """The versions of `tool`'s name, latest first; () for a tool without versions."""
        if tool.version is None:
            return ()
        return tuple(t.version for t in versions_of(self.toolset, tool.name))

    def _entry(
        self, tool: Tool, definition: Mapping[str, Any], versions: tuple[str | None, ...]
    ) -> dict[str, Any]:
        entry = dict(definition)
        schema = self.output_schema(tool)
        if schema is not None:
            entry["outputSchema"] = schema
        if versions:
            entry["_meta"] = {META_KEY: {"version": tool.version, "versions": list(versions)}}
        return entry

    def output_schema(self, tool: Tool) -> dict[str, Any] | None:
        """`output_schema(tool)`, worked out once per registered tool."""
        known = self._outputs.get(tool.name)
        if known is None or known[0] is not tool:
            known = self._outputs[tool.name] = (tool, output_schema(tool))
        return known[1]
