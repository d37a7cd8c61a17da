"""What each model call of a conversation is offered, when the catalog is searched.

With `tool_search=` (see `toolreg.search.ToolSearch`), every model call is offered the
tools that best match the recent user messages, the `always` ones, and those called since
the last user message; a call to any other allowed tool still runs (it was offered before).
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..registry import ToolRegistry
from ..search.selection import ToolSearch, called_names, query_text

__all__ = ["check_always", "select"]

Message = dict[str, Any]


def check_always(registry: ToolRegistry, option: ToolSearch | None) -> None:
    """Every `always` entry names a registered tool or a tag (else a `UsageError`)."""
    if option is None or not option.always:
        return
    tags = {tag for tool in registry.tools() for tag in tool.tags}
    unknown = [a for a in option.always if a not in registry and a not in tags]
    if unknown:
        raise UsageError(
            f"ToolSearch(always={list(option.always)!r}): {', '.join(map(repr, unknown))} is "
            f"neither a registered tool nor a tag; registered: "
            f"{', '.join(registry.names()[:20]) or 'none'}"
        )


def select(
    registry: ToolRegistry, option: ToolSearch, names: list[str], history: list[Message]
) -> list[str]:
    """Of `names` (in their order), those the next model call is offered."""
    always = set(option.always)
    keep = {*called_names(history)}
    if always:
        keep.update(t.name for t in registry.tools(names) if t.name in always or t.tags & always)
    query = query_text(history, option.messages)
    if query:
        keep.update(t.name for t in registry.search_tools(query, limit=option.limit, among=names))
    return [name for name in names if name in keep]
