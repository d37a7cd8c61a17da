"""Toolsets: what supplies the tools a model is offered and a call runs.

`ToolRegistry` is a toolset; so is a `Mount` of an MCP server; `filtered`, `prefixed`,
`combined`, `searchable`, `deferred`, `pinned` and `reshaped` compose them (`search/`:
the search index they share). `Conversation(registry=...)`, a toolset's `dispatcher` and
`toolreg serve` / `asgi_app` take any of them. See `base` for the protocol.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

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

if _typing.TYPE_CHECKING:
    from .reshape import Arg, Reshape, Reshaped, reshaped

_LAZY = frozenset({"Arg", "Reshape", "Reshaped", "reshaped"})  # reshape loads on first use


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(".reshape", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)


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
