"""What each model call of a conversation is offered, when the catalog is searched.

With `tool_search=` (see `toolreg.toolsets.search.ToolSearch`), every model call is offered the
tools that best match the recent user messages, the `always` ones, and those called since
the last user message; a call to any other allowed tool still runs (it was offered before).

Tools registered with `defer_loading=True` are not offered at all until the model finds
them: while the conversation allows any, a `search_tools` tool is offered, answered here
(it runs nothing), and what it finds is offered from the next model call on.

On the Responses API the search can be the API's own (`deferred_search=`): "client" offers
the `tool_search` tool executed by toolreg's index (its `tool_search_output` carries the
definitions found, loaded from then on by the history itself); "hosted" sends the deferred
tools with `defer_loading: true` and the hosted `tool_search` tool, and the server searches.

On Anthropic's Messages API the same two: "client" sends every deferred tool with
`defer_loading: true` and the `search_tools` tool; toolreg's index answers its calls with a
`tool_result` of `tool_reference` blocks (`References`), which load the tools found, from
then on by the history itself; "hosted" sends the deferred tools and the API's own
`tool_search_tool_bm25`, and the server searches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from ..dispatch import Dispatcher, DispatchSettings
from ..errors import InvalidArgumentsError, ToolCallError, UnknownToolError, UsageError
from ..formats import anthropic as anthropic_format
from ..formats import export_tools
from ..formats.responses import TOOL_SEARCH_CALL, namespace_tool, tool_search_tool
from ..result import ToolCall, ToolResult
from ..tool import Tool
from ..toolsets import HistoryReader, Namespace, Toolset
from ..toolsets.search.selection import ToolSearch, query_text
from .options import DEFERRED_SEARCH, DeferredSearch
from .providers.base import References

__all__ = [
    "SEARCH_TOOL",
    "Found",
    "answer_search",
    "check_always",
    "check_deferred_search",
    "found_loader",
    "found_names",
    "namespaced",
    "not_loaded",
    "offers_search",
    "reload_found",
    "search_call",
    "search_definitions",
    "search_tool",
    "select",
    "sent_names",
]


_NATIVE = ("responses", "anthropic")  # the dialects whose API has its own tool search

SEARCH_TOOL = "search_tools"
MAX_FOUND = 10  # tools one search may load
_MAX_ARGUMENTS = 8192  # characters of a search call's arguments
_MAX_SHOWN = 160  # characters of a found tool's description in the answer

Message = dict[str, Any]
Loader = Callable[[list[str]], Any]
"""What loads the tools a search found, as its result's `value` carries them: their
definitions (the Responses API's `tool_search_output`), or `References` (Anthropic)."""


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
    if mode != "function" and dialect not in _NATIVE:
        raise UsageError(
            f"deferred_search={mode!r} is the API's own tool search: it needs "
            'dialect="responses" or an anthropic.Anthropic client (the '
            f"{dialect!r} dialect gets the search_tools function)"
        )


def _references(names: list[str]) -> References:
    return References(names)


class Found(tuple[str, ...]):
    """The tools a search of a paused round found, as a saved state keeps them (names only:
    a state is untrusted); `reload_found` turns them back into what loads them."""


def found_names(result: ToolResult) -> list[str] | None:
    """The names of the tools a client-executed search's result loads (`References`, or
    the Responses API's definitions), for a saved state; None for any other result."""
    value = result.value
    if result.tool_name not in (SEARCH_TOOL, TOOL_SEARCH_CALL):
        return None
    if isinstance(value, References):
        return list(value)
    if isinstance(value, list) and all(isinstance(d, dict) for d in value):
        names = [d.get("name") for d in value]
        return [n for n in names if isinstance(n, str)] if len(names) == len(value) else None
    return None


def reload_found(
    results: Mapping[int, ToolResult],
    loader: Loader | None,
    deferred: set[str],
) -> None:
    """A restored paused round's search results load what they found again (`loader`, see
    `found_loader`): of the names a state kept, only deferred tools this conversation
    allows; with no loader (another search mode), a search's result is its text alone."""
    for result in results.values():
        if isinstance(result.value, Found):
            names = [name for name in result.value if name in deferred]
            result.value = None if loader is None else loader(names)


def found_loader(
    mode: DeferredSearch, fmt: str, definitions: Callable[[list[str]], list[dict[str, Any]]]
) -> Loader | None:
    """What a search's result carries beside its text (`answer_search`'s `definitions`):
    with the API's own client-executed search, what loads the tools found (the Responses
    API: their `definitions`; Anthropic: `References`); else nothing."""
    if mode != "client":
        return None
    return _references if fmt == "anthropic" else definitions


def offers_search(mode: DeferredSearch, fmt: str, allowed: list[Tool], found: set[str]) -> bool:
    """Whether a request offers the search tool: while some allowed tool is deferred and
    not found yet; when the API searches, or loads by reference (Anthropic), while any is
    deferred (those are sent with `defer_loading`, and the API refuses tools all deferred)."""
    always = mode == "hosted" or (mode == "client" and fmt == "anthropic")
    return any(t.defer_loading and (always or t.name not in found) for t in allowed)


def search_call(mode: DeferredSearch, fmt: str) -> str | None:
    """The name the model's search calls come with: `search_tools`, the Responses API's
    client-executed `tool_search_call` (`TOOL_SEARCH_CALL`); none when the server searches."""
    if mode == "hosted":
        return None
    return TOOL_SEARCH_CALL if mode == "client" and fmt != "anthropic" else SEARCH_TOOL


def sent_names(mode: DeferredSearch, fmt: str, names: list[str], allowed: list[Tool]) -> list[str]:
    """Of the tools allowed, those whose definitions go with a request that offers `names`:
    when the API searches or loads by reference (hosted, or Anthropic's client search),
    every deferred tool too (with `defer_loading`: the API keeps it out of the model's
    context); with the Responses API's client search, no deferred one (those found are
    loaded by the history's `tool_search_output`)."""
    if mode == "hosted" or (mode == "client" and fmt == "anthropic"):
        chosen = set(names)
        return [t.name for t in allowed if t.name in chosen or t.defer_loading]
    if mode == "client":
        deferred = {t.name for t in allowed if t.defer_loading}
        return [name for name in names if name not in deferred]
    return names


def search_definitions(
    mode: DeferredSearch, fmt: str, strict: bool | None, required: bool
) -> list[dict[str, Any]]:
    """The search tool offered while some allowed tool is deferred and not found yet."""
    if mode == "hosted":
        hosted = anthropic_format.tool_search_tool() if fmt == "anthropic" else tool_search_tool()
        return [dict(hosted)]
    tool = search_tool()
    if mode == "client" and fmt != "anthropic":
        return [dict(tool_search_tool(tool.description, dict(tool.parameters)))]
    return export_tools([tool], fmt, strict=strict, advertise_required=required)


def select(
    registry: Toolset,
    option: ToolSearch,
    names: list[str],
    history: Sequence[Message],
    reader: HistoryReader,
) -> list[str]:
    """Of `names` (in their order), those the next model call is offered; the history is
    read through `reader` (the provider: only it knows the wire format)."""
    always = set(option.always)
    keep = set(reader.calls_in(history))
    if always:
        among = set(names)
        keep.update(
            t.name
            for t in registry.tools()
            if t.name in among and (t.name in always or t.tags & always)
        )
    query = query_text(history, option.messages, reader.user_text)
    if query:
        keep.update(t.name for t in registry.search_tools(query, limit=option.limit, among=names))
    return [name for name in names if name in keep]


def namespaced(
    definitions: list[dict[str, Any]], spaces: list[Namespace], choice: str
) -> list[dict[str, Any]]:
    """The Responses API's definitions with each namespace's offered members as one
    `namespace` tool, where its first member stood (a call in it is read back by its flat
    name). A namespace holding the tool `choice` names stays flat (a forced call names a
    function of its own)."""
    where: dict[str, Namespace] = {}
    for space in spaces:
        if choice not in space.members:
            for name in space.members:
                where.setdefault(name, space)
    if not where:
        return definitions
    out: list[dict[str, Any] | Namespace] = []
    members: dict[str, list[Any]] = {}
    for definition in definitions:
        named: Any = definition.get("name") if definition.get("type") == "function" else None
        found = where.get(named) if isinstance(named, str) else None
        if found is None:
            out.append(definition)
            continue
        if found.name not in members:
            members[found.name] = []
            out.append(found)
        members[found.name].append(definition)
    return [
        dict(namespace_tool(d.name, d.description, members[d.name]))
        if isinstance(d, Namespace)
        else d
        for d in out
    ]


def _search_tools(
    query: Annotated[str, "What the tool should do, in a few words (any language)"],
    limit: Annotated[int, "How many tools to load, 1 to 10"] = 5,
) -> str:
    """Find tools that are not loaded yet by what they do. The tools it finds can be
    called from your next step on."""
    raise NotImplementedError  # answered by the conversation (answer_search), never run


_TOOL: list[Tool] = []
_DECODER: list[Dispatcher] = []


def search_tool() -> Tool:
    """The `search_tools` tool the model is offered (built once)."""
    if not _TOOL:
        _TOOL.append(Tool.from_function(_search_tools, name=SEARCH_TOOL))
    return _TOOL[0]


def _decoder() -> Dispatcher:
    """Checks a search call's arguments the way dispatch checks any call's (decoding,
    bounds, validation, safe coercion) against `search_tool()`; it runs nothing."""
    if not _DECODER:
        settings = DispatchSettings(
            coerce=True,
            errors="redact",
            max_payload_bytes=_MAX_ARGUMENTS,
            max_depth=8,
            max_concurrency=1,
            max_result_chars=None,
        )
        _DECODER.append(Dispatcher({SEARCH_TOOL: search_tool()}, settings))
    return _DECODER[0]


def answer_search(
    registry: Toolset,
    call: ToolCall,
    among: list[str],
    discovered: list[str],
    definitions: Loader | None = None,
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
    """The query and the limit of a search call, checked by dispatch (`_decoder`); the
    limit brought into 1 to `MAX_FOUND`."""
    try:
        _, arguments = _decoder().check_call(SEARCH_TOOL, call.arguments)
    except ToolCallError as err:  # dispatch's own words, and an example of a good call
        err.message = f"{err.message} e.g. {_EXAMPLE}"
        err.args = (err.message,)
        err.tool_name = call.name
        raise
    query, limit = arguments["query"], arguments.get("limit", 5)
    if not query.strip():
        raise _invalid(call, "'query' must be a non-empty string")
    return query[:1000], min(max(limit, 1), MAX_FOUND)


_EXAMPLE = '{"query": "create a calendar event"}.'


def _invalid(call: ToolCall, problem: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Invalid arguments for tool '{call.name}': {problem}, e.g. {_EXAMPLE}",
        tool_name=call.name,
    )


def _failed(call: ToolCall, error: ToolCallError) -> ToolResult:
    return ToolResult(call.name, call.call_id, False, error.message, error=error)


def _shown(description: str) -> str:
    line = " ".join(description.split())
    return line if len(line) <= _MAX_SHOWN else line[: _MAX_SHOWN - 3] + "..."
