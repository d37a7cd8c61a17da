"""Tool search: an inverted BM25F index over tool definitions, in any language.

`ToolRegistry.search_tools(query, limit=5)` uses it; `Conversation(tool_search=...)` picks
the tools each model call is offered with it, and answers a model's `search_tools` calls.
"""

from __future__ import annotations

from .index import WEIGHTS, SearchIndex, tool_fields
from .selection import ToolSearch
from .text import identifier_terms, normalize, terms

__all__ = [
    "WEIGHTS",
    "SearchIndex",
    "ToolSearch",
    "identifier_terms",
    "normalize",
    "terms",
    "tool_fields",
]
