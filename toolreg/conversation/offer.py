"""What each model call of a conversation is offered, when the catalog is searched.

With `tool_search=` (see `toolreg.search.ToolSearch`), every model call is offered the
tools that best match the recent user messages, the `always` ones, and those called since
the last user message; a call to any other allowed tool still runs (it was offered before).

Tools registered with `defer_loading=True` are not offered at all until the model finds
them: while the conversation allows any, a `search_tools` tool is offered, answered here
(it runs nothing), and what it finds is offered from the next model call on.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from ..errors import InvalidArgumentsError, ToolCallError, UnknownToolError, UsageError
from ..registry import ToolRegistry
from ..result import ToolCall, ToolResult
from ..search.selection import ToolSearch, called_names, query_text
from ..tool import Tool

__all__ = ["SEARCH_TOOL", "answer_search", "check_always", "not_loaded", "search_tool", "select"]

SEARCH_TOOL = "search_tools"
MAX_FOUND = 10  # tools one search may load
_MAX_ARGUMENTS = 8192  # characters of a search call's arguments
_MAX_SHOWN = 160  # characters of a found tool's description in the answer

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


def _search_tools(
    query: Annotated[str, "What the tool should do, in a few words (any language)"],
    limit: Annotated[int, "How many tools to load, 1 to 10"] = 5,
) -> str:
    """Find tools that are not loaded yet by what they do. The tools it finds can be
    called from your next step on."""
    raise NotImplementedError  # answered by the conversation (answer_search), never run


_TOOL: list[Tool] = []


def search_tool() -> Tool:
    """The `search_tools` tool the model is offered (built once)."""
    if not _TOOL:
        _TOOL.append(Tool.from_function(_search_tools, name=SEARCH_TOOL))
    return _TOOL[0]


def answer_search(
    registry: ToolRegistry, call: ToolCall, among: list[str], discovered: list[str]
) -> ToolResult:
    """The answer to a model's `search_tools` call: the tools found (now in `discovered`,
    once each), or a short text that says nothing was."""
    try:
        query, limit = _search_arguments(call.arguments)
    except ToolCallError as err:
        return _failed(call, err)
    found = registry.search_tools(query, limit=limit, among=among)
    if not found:
        shown = json.dumps(query[:80], ensure_ascii=False)
        content = f"No tool matches {shown}. Try other words, or go on without a tool."
        return ToolResult(SEARCH_TOOL, call.call_id, True, content)
    known = set(discovered)
    discovered.extend(t.name for t in found if t.name not in known)
    lines = [f"Found {len(found)} tool(s); call them from your next step on:"]
    lines += [f"- {t.name}: {_shown(t.description)}" for t in found]
    return ToolResult(SEARCH_TOOL, call.call_id, True, "\n".join(lines))


def not_loaded(call: ToolCall) -> ToolResult:
    """The answer to a call of a deferred tool the model has not searched for."""
    message = (
        f"Tool '{call.name}' is not loaded: call {SEARCH_TOOL} with what you need first, "
        "then call the tool it finds."
    )
    return _failed(call, UnknownToolError(message, tool_name=call.name))


def _search_arguments(arguments: Any) -> tuple[str, int]:
    if isinstance(arguments, (str, bytes)):
        if len(arguments) > _MAX_ARGUMENTS:
            raise _invalid("its arguments are too long")
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):
            raise _invalid("its arguments are not a JSON object") from None
    if not isinstance(arguments, dict):
        raise _invalid("its arguments are not a JSON object")
    query, limit = arguments.get("query"), arguments.get("limit", 5)
    if not isinstance(query, str) or not query.strip():
        raise _invalid("'query' must be a non-empty string")
    if isinstance(limit, bool) or not isinstance(limit, int):
        limit = 5
    return query[:1000], min(max(limit, 1), MAX_FOUND)


def _invalid(problem: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Invalid arguments for tool '{SEARCH_TOOL}': {problem}, e.g. "
        '{"query": "create a calendar event"}.',
        tool_name=SEARCH_TOOL,
    )


def _failed(call: ToolCall, error: ToolCallError) -> ToolResult:
    return ToolResult(call.name, call.call_id, False, error.message, error=error)


def _shown(description: str) -> str:
    line = " ".join(description.split())
    return line if len(line) <= _MAX_SHOWN else line[: _MAX_SHOWN - 3] + "..."
