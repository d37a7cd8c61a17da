"""Toolsets: what supplies the tools a model is offered and a call runs.

`ToolRegistry` is a toolset; so is a `Mount` of an MCP server; `filtered`, `prefixed`,
`combined`, `searchable`, `deferred`, `pinned` and `reshaped` compose them (`search/`:
the search index they share). `Conversation(registry=...)`, a toolset's `dispatcher` and
`toolreg serve` / `asgi_app` take any of them. See `base` for the protocol.
"""

from __future__ import annotations

from .base import (
    SEARCH_TOOL,
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
from .deferred import Deferred, deferred
from .reshape import Arg, Reshape, Reshaped, reshaped
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
    "SEARCH_TOOL",
    "Arg",
    "BaseToolset",
    "Combined",
    "Deferred",
    "Filtered",
    "HistoryReader",
    "Namespace",
    "Pinned",
    "Prefixed",
    "Reshape",
    "Reshaped",
    "Searchable",
    "StepContext",
    "ToolMap",
    "Toolset",
    "check_search",
    "combined",
    "deferred",
    "filtered",
    "label_of",
    "namespaces_of",
    "pinned",
    "prefixed",
    "reshaped",
    "searchable",
    "searched_names",
    "versions_of",
]
