"""`Offer`: what each model call of a conversation is offered, in the provider's format.

The conversation's tools are a chain of toolset views over its toolset, built here from its
options: `tools=` is a `filtered` view, deferred tools (`defer_loading=True`) a `Deferred`
view (the tools the model found: the conversation's `discovered`), `tool_search=` a
`searchable` view on top:

```
searchable(deferred(filtered(registry)))     each part only when its option asks for it
```

Each model call is offered what the chain offers for the step (`definitions`), and the model
may call what the deferred view says is loaded, of what the toolset offered for that step
(`names`). A call the view answers itself (a search, a deferred tool not found yet) never
goes to dispatch (`answer`).

What is left is the wire: the definitions in the provider's format (a registry's cached
export), the Responses API's namespaces, and the API's own tool search
(`deferred_search=`). On the Responses API, "client" offers the `tool_search` tool,
answered by the deferred view's search (its `tool_search_output` carries the definitions
found, loaded from then on by the history itself); "hosted" sends the deferred tools with
`defer_loading: true` and the hosted `tool_search` tool, and the server searches. On
Anthropic's Messages API, "client" sends every deferred tool with `defer_loading: true` and
the `search_tools` tool, whose answers load the tools found by reference (`References`, a
`tool_result` of `tool_reference` blocks), from then on by the history itself; "hosted" sends
the deferred tools and the API's own `tool_search_tool_bm25`, and the server searches.

The toolset lookups the loop needs are here too: a call's validated arguments (input
guardrails, approvals, eager start), a tool's own guardrails and retry budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ToolCallError, UsageError
from ..formats import anthropic as anthropic_format
from ..formats import export_tools
from ..formats.responses import TOOL_SEARCH_CALL, namespace_tool, tool_search_tool
from ..registry import ToolRegistry
from ..result import ToolCall, ToolResult
from ..tool import Tool
from ..toolsets import SEARCH_TOOL, Namespace, StepContext, Toolset, namespaces_of
from ..toolsets.deferred import MAX_FOUND, Deferred, Loader
from ..toolsets.search import ToolSearch
from ..toolsets.views import Filtered, Searchable
from .guardrails import Guardrail
from .options import DEFERRED_SEARCH, ConversationOptions
from .providers import Provider
from .providers.base import References

__all__ = ["MAX_FOUND", "SEARCH_TOOL", "Found", "Offer", "check_deferred_search", "found_names"]

_NATIVE = ("responses", "anthropic")  # the dialects whose API has its own tool search

Message = dict[str, Any]


class Offer:
    """What a conversation offers each model call, built from its toolset, its options and
    its provider (see the module); `context` is what its calls are checked with."""

    def __init__(
        self, toolset: Toolset, options: ConversationOptions, provider: Provider, context: Any
    ) -> None:
        mode = options.deferred_search
        check_deferred_search(mode, options.dialect or "")
        self.toolset = toolset
        self.options = options
        self.provider = provider
        self.context = context
        self.fmt = provider.fmt
        wire = self.fmt.name
        self.filter = None if options.tools is None else tool_filter(toolset, options.tools)
        search = ToolSearch.of(options.tool_search)
        check_always(toolset, search)
        allowed: Toolset = toolset
        if self.filter is not None:
            wanted = set(self.filter)
            allowed = Filtered(
                toolset, lambda t: t.name in wanted or bool(t.tags & wanted), "tools="
            )
        # the API hides deferred tools itself (sent flagged) when it searches, or loads what
        # a search found by reference (Anthropic); it searches itself when "hosted"
        by_api = mode == "hosted" or (mode == "client" and wire == "anthropic")
        self.deferred = Deferred(allowed, hide=not by_api, search=mode != "hosted")
        self.view: Toolset = self.deferred if search is None else Searchable(self.deferred, search)
        # the name the model's searches come with: the Responses API's client search is a
        # `tool_search_call` item; none when the server searches
        self._search_call: str | None = SEARCH_TOOL
        if mode == "hosted":
            self._search_call = None
        elif mode == "client" and wire != "anthropic":
            self._search_call = TOOL_SEARCH_CALL
        self._exported: tuple[Any, list[dict[str, Any]]] | None = None  # a toolset's export
        self._search_export: list[dict[str, Any]] | None = None

    # -- what each model call is offered ---------------------------------------------------
    def definitions(self, history: list[Message], round_: int = 0) -> list[dict[str, Any]]:
        """The definitions the next model call offers: what the view chain offers for this
        step (`Toolset.offer`), in the provider's format, with the API's own search."""
        step = StepContext(self.context, tuple(history), round_, self.provider)
        offered = self.view.offer(step)
        mode, wire = self.options.deferred_search, self.fmt.name
        search = self.deferred.offered_search  # the view's, when its offer included it
        tools = offered if search is None else [t for t in offered if t is not search]
        if mode == "client" and wire != "anthropic":  # found ones: loaded by the history
            tools = [t for t in tools if not t.defer_loading]
        definitions = self.export([t.name for t in tools])
        if mode == "function":  # a found tool is a plain function here
            definitions = [
                {k: v for k, v in d.items() if k != "defer_loading"} for d in definitions
            ]
        if wire == "responses":  # the API's namespaces: a prefixed toolset with a description
            spaces = namespaces_of(self.toolset)
            if spaces:
                definitions = namespaced(definitions, spaces, self.options.tool_choice)
        if search is not None or (mode == "hosted" and self.deferred.searching()):
            definitions += self._search_definitions()
        return definitions

    def _search_definitions(self) -> list[dict[str, Any]]:
        """The search tool offered while the deferred view searches (see the module)."""
        mode, wire = self.options.deferred_search, self.fmt.name
        if mode == "hosted":
            native = (
                anthropic_format.tool_search_tool() if wire == "anthropic" else tool_search_tool()
            )
            return [dict(native)]
        tool = self.deferred.search_tool
        if mode == "client" and wire != "anthropic":
            return [dict(tool_search_tool(tool.description, dict(tool.parameters)))]
        if self._search_export is None:
            strict = self.options.strict or None
            required = self.options.advertise_required
            self._search_export = export_tools(
                [tool], self.fmt, strict=strict, advertise_required=required
            )
        return list(self._search_export)

    def export(self, names: list[str]) -> list[dict[str, Any]]:
        """The definitions of these tools in the provider's format (a registry's cached
        export; another toolset's, kept while its `revision` stays)."""
        if not names:
            return []
        fmt, strict = self.fmt, self.options.strict or None
        required = self.options.advertise_required
        toolset = self.toolset
        if isinstance(toolset, ToolRegistry):
            return toolset.get_tools(
                fmt.name, strict=strict, names=names, advertise_required=required
            )
        key = (toolset.revision, tuple(names))
        cached = self._exported
        if cached is None or cached[0] != key:
            wanted = set(names)
            tools = {t.name: t for t in toolset.tools() if t.name in wanted}
            chosen = [tools[name] for name in names if name in tools]
            defs = export_tools(chosen, fmt, strict=strict, advertise_required=required)
            cached = self._exported = (key, defs)
        return list(cached[1])

    # -- what the model may call -------------------------------------------------------------
    def names(self) -> list[str]:
        """The tools the model may call: those `tools=` allows (names or tags), a deferred
        one once a search found it (with `deferred_search="hosted"`, from the start: the
        server searches them), of those the toolset offered for the last model call."""
        return self.deferred.callable_names()

    def answer(self, call: ToolCall) -> ToolResult | None:
        """The conversation's own answer to a search call and to a call of a deferred tool
        not found yet (the deferred view's); None for every other call (dispatch runs it)."""
        return self.deferred.answer(call, self._search_call, self._loader())

    def _loader(self) -> Loader | None:
        """What a search's result carries beside its text: with the API's own
        client-executed search, what loads the tools found (the Responses API: their
        definitions; Anthropic: `References`); else nothing."""
        if self.options.deferred_search != "client":
            return None
        return References if self.fmt.name == "anthropic" else self.export

    def reload_found(self, results: Mapping[int, ToolResult]) -> None:
        """A restored paused round's search results load what they found again: of the
        names a state kept, only deferred tools this conversation allows; with no loader
        (another search mode), a search's result is its text alone."""
        loader = self._loader()
        deferred = {t.name for t in self.deferred.inner.tools() if t.defer_loading}
        for result in results.values():
            if isinstance(result.value, Found):
                names = [name for name in result.value if name in deferred]
                result.value = None if loader is None else loader(names)

    # -- the toolset's lookups for the loop --------------------------------------------------
    def tool(self, name: Any) -> Tool | None:
        """The toolset's tool a call names (None for none, or a name that is no text)."""
        return self.toolset.get(name) if isinstance(name, str) else None

    def checked(self, name: str, arguments: Any, *, offered: bool = True) -> dict[str, Any]:
        """A call's arguments as dispatch takes them (`ToolCallError` if it does not);
        `offered`: only a tool the model may call (`names`)."""
        allowed = self.names() if offered else None
        dispatcher = self.toolset.dispatcher
        return dispatcher.check_call(name, arguments, context=self.context, allowed=allowed)[1]

    def validated(self, call: ToolCall) -> dict[str, Any] | None:
        """A call's arguments as dispatch will run them, for its input guardrails; None for
        a call dispatch refuses (it answers that itself)."""
        try:
            return self.checked(call.name, call.arguments)
        except ToolCallError:
            return None

    def eager(self, call: ToolCall) -> bool:
        """Whether a call may start while the answer still streams: a tool offered to the
        model that needs no confirmation, `eager=True`, or read-only or idempotent, and
        arguments that dispatch takes as they are."""
        tool = self.tool(call.name)
        if tool is None or tool.needs_confirmation or tool.eager is False:
            return False
        if not (tool.eager or tool.read_only or tool.idempotent):
            return False
        return self.validated(call) is not None  # dispatch would run it as it is

    def guardrails_of(self, name: str) -> tuple[tuple[Guardrail, ...], tuple[Guardrail, ...]]:
        """A tool's own input and output guardrails (`register_tool(input_guardrails=...)`)."""
        tool = self.toolset.get(name)
        return ((), ()) if tool is None else (tool.input_guardrails, tool.output_guardrails)

    def retries_of(self, name: str) -> int | None:
        """A tool's own retry budget (`register_tool(retries=...)`); None: the default."""
        tool = self.toolset.get(name)
        return None if tool is None else tool.retries


def check_always(toolset: Toolset, option: ToolSearch | None) -> None:
    """Every `always` entry names a registered tool or a tag (else a `UsageError`)."""
    if option is None or not option.always:
        return
    tools = toolset.tools()
    tags = {tag for tool in tools for tag in tool.tags}
    unknown = [a for a in option.always if toolset.get(a) is None and a not in tags]
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


def tool_filter(toolset: Toolset, tools: str | Sequence[str]) -> list[str]:
    """`tools=` as a list (one str is one entry); an entry that is no name and no tag fails."""
    wanted = [tools] if isinstance(tools, str) else list(tools)
    held = toolset.tools()
    tags = {tag for tool in held for tag in tool.tags}
    unknown = [w for w in wanted if toolset.get(w) is None and w not in tags]
    if unknown:
        raise UsageError(
            f"tools={wanted!r}: {', '.join(map(repr, unknown))} is neither a registered tool "
            f"nor a tag; registered: {', '.join(t.name for t in held) or 'none'}"
        )
    return wanted


class Found(tuple[str, ...]):
    """The tools a search of a paused round found, as a saved state keeps them (names only:
    a state is untrusted); `Offer.reload_found` turns them back into what loads them."""


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
