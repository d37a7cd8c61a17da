"""`deferred(toolset)`: its deferred tools (`defer_loading=True`) kept out of the offer until
the model finds them with the `search_tools` tool.

```python
view = deferred(registry)
view.offer(step)         # the tools not deferred, those found so far, and search_tools
view.get("search_tools") # a real tool: dispatched, it searches and loads what it finds
view.found               # what searches found, offered from then on (in order)
```

A catalog too large to send whole registers most of its tools with `defer_loading=True`.
While one of them is not found yet, the view offers its `search_tools` tool; a search
looks among the tools the last step was offered by the inner toolset (deferred ones or not:
`Toolset.search_tools`, its index and ranker), and what it finds is offered from the next
model call on. A call of a deferred tool not found yet is answered, never run (`answer`).

A conversation builds one for itself (`Conversation(registry=...)`: its `discovered` are
the view's `found`, which `export_state` saves) and answers a search itself (`answer`: the
arguments checked by dispatch against the search tool, bounded, with an example of a good
call in every refusal), so a search runs no tool and has no tool events. Where the API
searches or hides the deferred tools itself (`deferred_search=`), the conversation's view
is made with `hide=False` (every deferred tool is offered; the provider flags them) and, when
the server searches, `search=False` (no search tool: the API's own is sent).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from ..dispatch import Dispatcher, DispatchSettings
from ..errors import InvalidArgumentsError, ToolCallError, UnknownToolError, UsageError
from ..result import ToolCall, ToolResult
from ..tool import Tool
from .base import SEARCH_TOOL, StepContext, Toolset, label_of
from .views import _checked_part, _View

__all__ = ["MAX_FOUND", "Deferred", "Loader", "deferred"]

MAX_FOUND = 10
"""Tools one search may find, at most."""
_MAX_ARGUMENTS = 8192  # characters of a search call's arguments
_MAX_SHOWN = 160  # characters of a found tool's description in the answer
_EXAMPLE = '{"query": "create a calendar event"}.'


class Deferred(_View):
    """`inner` with its deferred tools held back until a search finds them (see the module
    and `deferred`, which makes one). `found` lists what was found, in order; `hide=False`
    offers the deferred tools anyway (the API keeps them from the model); `search=False`
    offers no search tool (the API searches)."""

    def __init__(self, inner: Toolset, *, hide: bool = True, search: bool = True) -> None:
        super().__init__(inner)
        self.hide = hide
        self.search = search
        self._found: dict[str, None] = {}  # in order, each once
        self._step: frozenset[str] | None = None  # what `inner` offered the last step (None: all)
        self._tool: Tool | None = None
        self._lock = threading.Lock()
        self.offered_search: Tool | None = None
        """The search tool, when the last `offer` included it."""

    @property  # named when a message needs it: a conversation builds a view per conversation
    def label(self) -> str:  # type: ignore[override]
        return f"deferred({label_of(self.inner)})"

    @property
    def found(self) -> list[str]:
        """The tools searches found, in order (a copy)."""
        return list(self._found)

    def restore(self, names: Iterable[str]) -> None:
        """Take a saved list of found tools (a conversation's state: checked by its codec)."""
        with self._lock:
            self._found = dict.fromkeys(names)

    def loaded(self, tool: Tool) -> bool:
        """Whether `tool` may be called: not deferred, found, or searched by the API."""
        return not tool.defer_loading or tool.name in self._found or not self.search

    def searching(self) -> bool:
        """Whether the model is offered a search: while a deferred tool is not found yet
        (`hide=False`: while any is deferred, since each stays offered behind the API's
        deferral)."""
        found = self._found
        return any(
            t.defer_loading and (not self.hide or t.name not in found) for t in self.inner.tools()
        )

    @property
    def search_tool(self) -> Tool:
        """The `search_tools` tool of this view (made on first use)."""
        tool = self._tool
        if tool is None:
            tool = self._tool = dataclasses.replace(_search_tool(), function=self._search_text)
        return tool

    # -- the Toolset -------------------------------------------------------------------------
    def tools(self) -> list[Tool]:
        held = self.inner.tools()
        return [*held, self.search_tool] if self._offers_search(held) else held

    def get(self, name: str) -> Tool | None:
        if name == SEARCH_TOOL and self._offers_search(self.inner.tools()):
            return self.search_tool
        return self.inner.get(name)

    def offer(self, step: StepContext) -> list[Tool]:
        offered = self.inner.offer(step)
        held = self.inner.tools()
        self._step = None if len(offered) == len(held) else frozenset(t.name for t in offered)
        shown = [t for t in offered if not self.hide or self.loaded(t)]
        search = self.offered_search = self.search_tool if self._offers_search(held) else None
        return shown if search is None else [*shown, search]

    def _offers_search(self, held: list[Tool]) -> bool:
        if not self.search or not self.searching():
            return False
        if any(t.name == SEARCH_TOOL for t in held):
            raise UsageError(
                f"{label_of(self.inner)} has a tool named {SEARCH_TOOL!r}, the name of the "
                "search tool its deferred tools (defer_loading=True) need: rename that tool"
            )
        return True

    # -- what the model may call, and the answers of the view's own ------------------------
    def callable_names(self) -> list[str]:
        """The tools the model may call now: loaded ones (see `loaded`) that the inner
        toolset offered for the last step (any, before the first)."""
        step = self._step
        return [
            t.name
            for t in self.inner.tools()
            if self.loaded(t) and (step is None or t.name in step)
        ]

    def answer(
        self, call: ToolCall, search_name: str | None = SEARCH_TOOL, loader: Loader | None = None
    ) -> ToolResult | None:
        """The view's own answer to a call: to a search (named `search_name`: a conversation
        on an API with its own search reads the API's calls as searches) while some inner
        tool is deferred, the tools found (`loader`: what the result's `value` carries to
        load them on the wire); to a call of a deferred tool not found yet, that it is not
        loaded. None for every other call (dispatch runs it)."""
        name: Any = call.name  # the model's: checked
        if not isinstance(name, str):
            return None
        if name == search_name and self.inner.get(name) is None:
            if self.search and any(t.defer_loading for t in self.inner.tools()):
                return self._answer_search(call, loader)
            return None
        tool = self.inner.get(name)
        if tool is None or self.loaded(tool):
            return None
        message = (
            f"Tool '{name}' is not loaded: call {SEARCH_TOOL} with what you need first, "
            "then call the tool it finds."
        )
        return _failed(call, UnknownToolError(message, tool_name=name))

    def _answer_search(self, call: ToolCall, loader: Loader | None) -> ToolResult:
        try:
            query, limit = _search_arguments(call)
        except ToolCallError as err:
            return _failed(call, err)
        found = self._find(query, limit)
        value = None if loader is None else loader([t.name for t in found])
        return ToolResult(call.name, call.call_id, True, _found_text(query, found), value=value)

    def _find(self, query: str, limit: int) -> list[Tool]:
        """Search among what the inner toolset offered the last step; keep what is found."""
        step = self._step
        among = [t.name for t in self.inner.tools() if step is None or t.name in step]
        found = self.inner.search_tools(query, limit=limit, among=among)
        with self._lock:
            for tool in found:
                self._found.setdefault(tool.name)
        return found

    def _search_text(
        self,
        query: Annotated[str, "What the tool should do, in a few words (any language)"],
        limit: Annotated[int, "How many tools to load, 1 to 10"] = 5,
    ) -> str:
        """The search tool's function, dispatched (outside a conversation's own answer)."""
        if not query.strip():
            raise _invalid(SEARCH_TOOL, "'query' must be a non-empty string")
        query, limit = query[:1000], min(max(limit, 1), MAX_FOUND)
        return _found_text(query, self._find(query, limit))


Loader = Callable[[list[str]], Any]
"""What loads the tools a search found on the wire, as its result's `value` carries them."""


def deferred(toolset: Toolset) -> Deferred:
    """`toolset`, with its deferred tools (`defer_loading=True`) offered only once the
    model's `search_tools` call has found them (see the module); a conversation makes one
    for itself."""
    return Deferred(_checked_part(toolset, "deferred()"))


def _search_tools(
    query: Annotated[str, "What the tool should do, in a few words (any language)"],
    limit: Annotated[int, "How many tools to load, 1 to 10"] = 5,
) -> str:
    """Find tools that are not loaded yet by what they do. The tools it finds can be
    called from your next step on."""
    raise NotImplementedError  # a view's search tool runs its own function


_TOOL: list[Tool] = []
_DECODER: list[Dispatcher] = []


def _search_tool() -> Tool:
    """The search tool's definition (built once): each view's runs its own function."""
    if not _TOOL:
        _TOOL.append(Tool.from_function(_search_tools, name=SEARCH_TOOL))
    return _TOOL[0]


def _decoder() -> Dispatcher:
    """Checks a search call's arguments the way dispatch checks any call's (decoding,
    bounds, validation, safe coercion) against the search tool; it runs nothing."""
    if not _DECODER:
        settings = DispatchSettings(
            coerce=True,
            errors="redact",
            max_payload_bytes=_MAX_ARGUMENTS,
            max_depth=8,
            max_concurrency=1,
            max_result_chars=None,
        )
        _DECODER.append(Dispatcher({SEARCH_TOOL: _search_tool()}, settings))
    return _DECODER[0]


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
        raise _invalid(call.name, "'query' must be a non-empty string")
    return query[:1000], min(max(limit, 1), MAX_FOUND)


def _found_text(query: str, found: list[Tool]) -> str:
    """What the model reads of a search: the tools found, or that none was."""
    if not found:
        shown = json.dumps(query[:80], ensure_ascii=False)
        return f"No tool matches {shown}. Try other words, or go on without a tool."
    lines = [f"Found {len(found)} tool(s); call them from your next step on:"]
    lines += [f"- {t.name}: {_shown(t.description)}" for t in found]
    return "\n".join(lines)


def _invalid(name: str, problem: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(
        f"Invalid arguments for tool '{name}': {problem}, e.g. {_EXAMPLE}", tool_name=name
    )


def _failed(call: ToolCall, error: ToolCallError) -> ToolResult:
    return ToolResult(call.name, call.call_id, False, error.message, error=error)


def _shown(description: str) -> str:
    line = " ".join(description.split())
    return line if len(line) <= _MAX_SHOWN else line[: _MAX_SHOWN - 3] + "..."
