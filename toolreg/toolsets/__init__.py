"""Toolsets: what supplies the tools a model is offered and a call runs.

`ToolRegistry` is a toolset; so is a `Mount` of an MCP server; `filtered`, `prefixed`,
`combined`, `searchable` and `pinned` compose them. `Conversation(registry=...)`, a toolset's
`dispatcher` and `toolreg serve` / `asgi_app` take any of them. See `base` for the
protocol.
"""

from __future__ import annotations

from .base import (
    BaseToolset,
    HistoryReader,
    Namespace,
    StepContext,
    ToolMap,
    Toolset,
    check_search,
    label_of,
    namespaces_of,
    searched_names,
)
from .versions import Pinned, pinned, versions_of
from .views import (
    Combined,
    Filtered,
    Prefixed,
    Searchable,
    combined,
    filtered,
    prefixed,
    searchable,
)

__all__ = [
    "BaseToolset",
    "Combined",
    "Filtered",
    "HistoryReader",
    "Namespace",
    "Pinned",
    "Prefixed",
    "Searchable",
    "StepContext",
    "ToolMap",
    "Toolset",
    "check_search",
    "combined",
    "filtered",
    "label_of",
    "namespaces_of",
    "pinned",
    "prefixed",
    "searchable",
    "searched_names",
    "versions_of",
]
