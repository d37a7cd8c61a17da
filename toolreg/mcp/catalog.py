"""What an MCP client sees of a registry: `tools/list` entries and `tools/call` results.

Plain functions, no I/O: the SDK's handlers and the HTTP fast path both answer from here.

- A `tools/list` entry is the registry's `mcp` export (name, description, `inputSchema`,
  annotations) plus an `outputSchema` when the function's return annotation describes a
  JSON object (a TypedDict, dataclass, NamedTuple, pydantic model or `dict`).
- A `tools/call` result is the dispatch result's text, `isError` for any failure, and
  `structuredContent` (the same JSON, parsed) when the tool has an output schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..definition.returns import return_object_schema
from ..jsonvalues import copy_json
from ..registry import ToolRegistry
from ..result import ToolResult
from ..tool import Tool

__all__ = ["Catalog", "call_result", "output_schema"]


def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The JSON Schema of the tool's result: its `output_schema` when it was given one, else
    its return annotation's when that is a JSON object (`return_object_schema`).

    None for anything else (text, numbers, lists, optional objects, no annotation, a type
    toolreg cannot describe): MCP output schemas describe objects only, and a tool without
    one is served as text alone.
    """
    if tool.output_schema is not None:
        given: dict[str, Any] = copy_json(tool.output_schema)
        return given
    return return_object_schema(tool.function, f"the result of {tool.name}")


def call_result(result: ToolResult, structured: bool) -> dict[str, Any]:
    """A `CallToolResult` (wire form) for a dispatch result.

    `structured`: the tool advertises an output schema, so a successful result also carries
    its JSON as `structuredContent` (omitted when the text is not a JSON object, e.g. cut
    by `max_result_chars`).
    """
    out: dict[str, Any] = {
        "content": [{"type": "text", "text": result.content}],
        "isError": not result.ok,
    }
    if structured and result.ok:
        try:
            data = json.loads(result.content)
        except ValueError:
            data = None
        if isinstance(data, dict):
            out["structuredContent"] = data
    return out


class Catalog:
    """A registry's `tools/list` entries, rebuilt only when the registry's export changes."""

    __slots__ = ("_entries", "_key", "_outputs", "_scopes", "registry")

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self._key: tuple[int, ...] = ()
        self._entries: list[dict[str, Any]] = []
        self._scopes: list[frozenset[str]] = []
        self._outputs: dict[str, tuple[Tool, dict[str, Any] | None]] = {}

    def entries(
        self, permits: Callable[[frozenset[str]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """The `tools` of a `tools/list` result (shared: treat as read-only); with
        `permits`, only the tools whose scopes it allows."""
        export = self.registry.get_tools("mcp")
        key = tuple(map(id, export))  # the export is cached: same dicts until a change
        if key != self._key:
            self._entries = [self._entry(definition) for definition in export]
            self._scopes = [self._scopes_of(definition["name"]) for definition in export]
            self._key = key
        if permits is None or not any(self._scopes):
            return self._entries
        return [e for e, s in zip(self._entries, self._scopes) if permits(s)]

    def scopes(self) -> set[str]:
        """Every scope a tool of the registry asks for."""
        return {scope for tool in self.registry.tools() for scope in tool.scopes}

    def _scopes_of(self, name: str) -> frozenset[str]:
        tool = self.registry.get(name)
        return frozenset() if tool is None else tool.scopes

    def _entry(self, definition: Mapping[str, Any]) -> dict[str, Any]:
        tool = self.registry.get(definition["name"])
        schema = None if tool is None else self.output_schema(tool)
        return dict(definition) if schema is None else {**definition, "outputSchema": schema}

    def output_schema(self, tool: Tool) -> dict[str, Any] | None:
        """`output_schema(tool)`, worked out once per registered tool."""
        known = self._outputs.get(tool.name)
        if known is None or known[0] is not tool:
            known = self._outputs[tool.name] = (tool, output_schema(tool))
        return known[1]
