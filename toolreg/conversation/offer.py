"""What each model call of a conversation is offered, when the catalog is searched.

With `tool_search=` (see `toolreg.search.ToolSearch`), every model call is offered the
tools that best match the recent user messages, the `always` ones, and those called since
the last user message; a call to any other allowed tool still runs (it was offered before).

Tools registered with `defer_loading=True` are not offered at all until the model finds
them: while the conversation allows any, a `search_tools` tool is offered, answered here
(it runs nothing), and what it finds is offered from the next model call on.

On the Responses API the search can be the API's own (`deferred_search=`): "client" offers
the `tool_search` tool executed by toolreg's index (its `tool_search_output` carries the
definitions found, loaded from then on by the history itself); "hosted" sends the deferred
tools with `defer_loading: true` and the hosted `tool_search` tool, and the server searches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from ..errors import InvalidArgumentsError, ToolCallError, UnknownToolError, UsageError
from ..formats import export_tools
from ..formats.responses import tool_search_tool
from ..result import ToolCall, ToolResult
from ..search.selection import ToolSearch, called_names, query_text
from ..tool import Tool
from ..toolsets import Toolset

__all__ = [
    "DEFERRED_SEARCH",
    "SEARCH_TOOL",
    "DeferredSearch",
    "answer_search",
    "check_always",
    "check_deferred_search",
    "not_loaded",
    "search_definitions",
    "search_tool",
    "select",
]

DeferredSearch = Literal["function", "client", "hosted"]
DEFERRED_SEARCH: tuple[DeferredSearch, ...] = ("function", "client", "hosted")
"""How the model searches deferred tools: toolreg's `search_tools` function (any endpoint),
the Responses API's `tool_search` executed by toolreg ("client") or by the server."""

SEARCH_TOOL = "search_tools"
MAX_FOUND = 10  # tools one search may load
_MAX_ARGUMENTS = 8192  # characters of a search call's arguments
_MAX_SHOWN = 160  # characters of a found tool's description in the answer

Message = dict[str, Any]


def check_always(registry: Toolset, option: ToolSearch | None) -> None:
    """Every `always` entry names a registered tool or a tag (else a `UsageError`)."""
    if option is None or not option.always:
        return
    tools = registry.tools()
    tags = {tag for tool in tools for tag in tool.tags}
    unknown = [a for a in option.always if registry.get(a) is None and a not in tags]
    if unknown:
        raise UsageError(
            f"ToolSearch(always={list(option.always)!r}): {', '.join(map(repr, unknown))} is "
            f"neither a registered tool nor a tag; registered: "
            f"{', '.join(t.name for t in tools[:20]) or 'none'}"
        )


def check_deferred_search(mode: Any, dialect: str) -> None:
    """`deferred_search=` is one of `DEFERRED_SEARCH`; the API's own needs the Responses API."""
    if mode not in DEFERRED_SEARCH or isinstance(mode, bool):
        raise UsageError(
            f"deferred_search={mode!r}: one of {', '.join(map(repr, DEFERRED_SEARCH))}"
        )
    if mode != "function" and dialect != "responses":
        raise UsageError(
            f"deferred_search={mode!r} is the Responses API's tool_search: it needs "
            f'dialect="responses" (the {dialect!r} dialect gets the search_tools function)'
        )


def search_definitions(
    mode: DeferredSearch, fmt: str, strict: bool | None, required: bool
) -> list[dict[str, Any]]:
    """The search tool offered while some allowed tool is deferred and not found yet."""
    if mode == "hosted":
        return [dict(tool_search_tool())]
    tool = search_tool()
    if mode == "client":
        return [dict(tool_search_tool(tool.description, dict(tool.parameters)))]
    return export_tools([tool], fmt, strict=strict, advertise_required=required)


def select(
    registry: Toolset, option: ToolSearch, names: list[str], history: list[Message]
) -> list[str]:
    """Of `names` (in their order), those the next model call is offered."""
    always = set(option.always)
    keep = {*called_names(history)}
    if always:
        among = set(names)
        keep.update(
            t.name
            for t in registry.tools()
            if t.name in among and (t.name in always or t.tags & always)
        )
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
    registry: Toolset,
    call: ToolCall,
    among: list[str],
    discovered: list[str],
    definitions: Callable[[list[str]], list[dict[str, Any]]] | None = None,
) -> ToolResult:
    """The answer to a model's search call (`search_tools`, or the Responses API's
    client-executed tool search): the tools found (now in `discovered`, once each), or a
    short text that says nothing was. With `definitions`, the result's `value` is the
    definitions of the tools found (what a `tool_search_output` item carries)."""
    try:
        query, limit = _search_arguments(call)
    except ToolCallError as err:
        return _failed(call, err)
    found = registry.search_tools(query, limit=limit, among=among)
    value = None if definitions is None else definitions([t.name for t in found])
    if not found:
        shown = json.dumps(query[:80], ensure_ascii=False)
        content = f"No tool matches {shown}. Try other words, or go on without a tool."
        return ToolResult(call.name, call.call_id, True, content, value=value)
    known = set(discovered)
    discovered.extend(t.name for t in found if t.name not in known)
    lines = [f"Found {len(found)} tool(s); call them from your next step on:"]
    lines += [f"- {t.name}: {_shown(t.description)}" for t in found]
    return ToolResult(call.name, call.call_id, True, "\n".join(lines), value=value)


def not_loaded(call: ToolCall) -> ToolResult:
    """The answer to a call of a deferred tool the model has not searched for."""
    message = (
        f"Tool '{call.name}' is not loaded: call {SEARCH_TOOL} with what you need first, "
        "then call the tool it finds."
    )
    return _failed(call, UnknownToolError(message, tool_name=call.name))


def _search_arguments(call: ToolCall) -> tuple[str, int]:
    arguments = call.arguments
    if isinstance(arguments, (str, bytes)):
        if len(arguments) > _MAX_ARGUMENTS:
            raise _invalid(call, "its arguments are too long")
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):
            raise _invalid(call, "its arguments are not a JSON object") from None
    if not isinstance(arguments, dict):
        raise _invalid(call, "its arguments are not a JSON object")
    query, limit = arguments.get("query"), arguments.get("limit", 5)
    if not isinstance(query, str) or not query.strip():
        raise _invalid(call, "'query' must be a non-empty string")
    if isinstance(limit, bool) or not isinstance(limit, int):
        limit = 5
    return query[:1000], min(max(limit, 1), MAX_FOUND)


def _invalid(call: ToolCall, problem: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Invalid arguments for tool '{call.name}': {problem}, e.g. "
        '{"query": "create a calendar event"}.',
        tool_name=call.name,
    )


def _failed(call: ToolCall, error: ToolCallError) -> ToolResult:
    return ToolResult(call.name, call.call_id, False, error.message, error=error)


def _shown(description: str) -> str:
    line = " ".join(description.split())
    return line if len(line) <= _MAX_SHOWN else line[: _MAX_SHOWN - 3] + "..."
