"""The `Toolset` protocol: what supplies tools to a conversation, a dispatcher or a server.

A toolset answers four questions:

- `tools()`: every tool it holds now, in order (what may run, what a server lists);
- `offer(step)`: the tools offered for one model call, given the run's `StepContext`
  (the application's context and the history so far); a subset of `tools()`;
- `get(name)`: the tool a call names, or None (what dispatch looks up);
- `search_tools(query, limit=5)`: the best matches for a query, best first; with
  `step=`, only among what `offer(step)` gives (a tool a step does not offer is never found
  for it).

and carries `revision` (a number that grows whenever `tools()` would answer differently:
caches and the search index follow it) and `dispatcher` (the `Dispatcher` that runs calls
against it, with its dispatch settings). `ToolRegistry` is a toolset; so is a `Mount` of
an MCP server, and every view built with `filtered`, `prefixed`, `combined` and
`searchable`. A toolset of your own can derive from `BaseToolset` and write `tools`, `get`
and `revision` only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..dispatch import Dispatcher, DispatchSettings
from ..errors import UsageError, with_article
from ..tool import Tool

if TYPE_CHECKING:  # the index loads on the first search (its patterns take ~6 ms to compile)
    from .search import SearchIndex

__all__ = [
    "SEARCH_TOOL",
    "BaseToolset",
    "HistoryReader",
    "Namespace",
    "StepContext",
    "ToolMap",
    "Toolset",
    "check_search",
    "label_of",
    "namespaces_of",
    "searched_names",
]


SEARCH_TOOL = "search_tools"
"""The name of the tool that finds deferred tools (`deferred`'s): a view that narrows what is
offered (`searchable`) keeps it, as it keeps the deferred tools it loads."""


@runtime_checkable
class HistoryReader(Protocol):
    """Reads a history in one wire format for what needs none: a conversation's provider
    is one (`toolreg.conversation.history_reader(dialect)` gives one by the dialect)."""

    def calls_in(self, history: Sequence[Mapping[str, Any]]) -> list[str]:
        """The names of the tools called since the person last wrote, in order."""
        ...

    def user_text(self, entry: Mapping[str, Any]) -> str | None:
        """The text of `entry` if the person wrote it, else None (tool results too)."""
        ...


@dataclass(frozen=True, slots=True)
class StepContext:
    """What a toolset knows of the step it offers tools for: the application's `context`
    (what `Conversation(context=...)` was given), the conversation's `history` so far (its
    messages in the wire format of its API, read-only), the model call's `round` in the
    turn (0 first), and the `reader` of that format (`HistoryReader`: what the person
    wrote, which tools were called), which a conversation always gives."""

    context: Any = None
    history: Sequence[Mapping[str, Any]] = field(default=())
    round: int = 0
    reader: HistoryReader | None = None

    def read(self) -> HistoryReader:
        """`reader`; a `UsageError` when there is a history and none to read it with."""
        if self.reader is None:
            raise UsageError(
                "StepContext(history=...) needs reader=, the history's wire format: e.g. "
                "StepContext(history=messages, reader=toolreg.conversation.history_reader("
                "'tools')) for chat completions messages"
            )
        return self.reader


@dataclass(frozen=True, slots=True)
class Namespace:
    """Tools of a toolset that an API with namespaces (the Responses API) offers as one
    `namespace` tool: `name` (every member's name starts with `name_`), what the model reads
    of them as a whole (`description`), and the member tool names (`members`)."""

    name: str
    description: str
    members: frozenset[str]


@runtime_checkable
class Toolset(Protocol):
    """See the module: `tools`, `offer`, `get`, `search_tools`, `revision`, `dispatcher`."""

    @property
    def revision(self) -> int:
        """Grows whenever `tools()` would answer differently."""
        ...

    @property
    def dispatcher(self) -> Dispatcher:
        """Runs calls against this toolset (`dispatcher.dispatch_tool(name, arguments)`)."""
        ...

    def tools(self) -> list[Tool]:
        """Every tool the toolset holds now, in its order."""
        ...

    def offer(self, step: StepContext) -> list[Tool]:
        """The tools offered for one model call (a subset of `tools()`)."""
        ...

    def get(self, name: str) -> Tool | None:
        """The tool named `name`, or None."""
        ...

    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        among: Iterable[str] | None = None,
        step: StepContext | None = None,
    ) -> list[Tool]:
        """The `limit` tools that best match `query`, best first (`among`: only those names;
        `step`: only those `offer(step)` gives)."""
        ...


class ToolMap(Mapping[str, Tool]):
    """A toolset read as the live name -> `Tool` map a `Dispatcher` looks tools up in."""

    __slots__ = ("_toolset",)

    def __init__(self, toolset: Toolset) -> None:
        self._toolset = toolset

    def get(self, name: str, default: Any = None) -> Any:
        tool = self._toolset.get(name)
        return default if tool is None else tool

    def __getitem__(self, name: str) -> Tool:
        tool = self._toolset.get(name)
        if tool is None:
            raise KeyError(name)
        return tool

    def __iter__(self) -> Iterator[str]:
        return iter([tool.name for tool in self._toolset.tools()])

    def __len__(self) -> int:
        return len(self._toolset.tools())


def label_of(toolset: object) -> str:
    """How a message names a toolset: its `label` when it is a `BaseToolset`, else its
    type and its first tool names (`a ToolRegistry (add, sub)`)."""
    if isinstance(toolset, BaseToolset):
        return toolset.label
    names = [tool.name for tool in toolset.tools()] if isinstance(toolset, Toolset) else []
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return f"{with_article(type(toolset).__name__)} ({shown or 'no tools'})"


def check_search(query: object, limit: object) -> None:
    """`search_tools`'s arguments, checked the same way by every toolset: `query` must be a
    string and `limit` a whole number >= 0; else a `UsageError` says which."""
    if not isinstance(query, str):
        raise UsageError(f"search_tools() takes a query string, not {type(query).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise UsageError(f"search_tools(limit={limit!r}): a whole number >= 0")


def searched_names(
    toolset: Toolset, among: Iterable[str] | None, step: StepContext | None
) -> Callable[[str], bool] | None:
    """Which names a search may answer: those of `among` (one str is one name) that
    `toolset.offer(step)` gives, when a step is given; None: any."""
    accept: frozenset[str] | None = None
    if among is not None:
        accept = frozenset([among] if isinstance(among, str) else among)
    if step is not None:
        offered = frozenset(tool.name for tool in toolset.offer(step))
        accept = offered if accept is None else accept & offered
    return None if accept is None else accept.__contains__


def namespaces_of(toolset: object) -> list[Namespace]:
    """`toolset`'s namespaces: a `BaseToolset`'s `namespaces()`; none for another toolset."""
    return toolset.namespaces() if isinstance(toolset, BaseToolset) else []


class BaseToolset:
    """What every toolset shares: `offer` (all of `tools()`, unless overridden), a search
    index over `tools()` kept up to date tool by tool as `revision` moves, membership, and
    a `dispatcher` with the settings `dispatch_settings()` gives.

    Subclasses write `tools()`, `get(name)`, `revision` and `dispatch_settings()`."""

    label = "a toolset"

    def __init__(self) -> None:
        self._search_lock = threading.Lock()
        self._index: SearchIndex | None = None
        self._indexed: dict[str, Tool] = {}  # what the index holds, by name
        self._indexed_at = -1  # the revision it was brought up to date at
        self._dispatcher: Dispatcher | None = None

    # -- what subclasses write ---------------------------------------------------------------
    @property
    def revision(self) -> int:
        raise NotImplementedError

    def tools(self) -> list[Tool]:
        raise NotImplementedError

    def get(self, name: str) -> Tool | None:
        raise NotImplementedError

    def dispatch_settings(self) -> DispatchSettings:
        """The settings calls against this toolset are dispatched under."""
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    def offer(self, step: StepContext) -> list[Tool]:
        return self.tools()

    def namespaces(self) -> list[Namespace]:
        """The groups of tools an API with namespaces offers as one (none, unless a
        subclass says otherwise; see `prefixed(..., description=...)`)."""
        return []

    def versions(self, name: str) -> list[Tool]:
        """The versions this toolset holds of the tool `name`, latest first (see
        `toolreg.toolsets.versions`): the one `get(name)` gives, unless a subclass holds
        more."""
        tool = self.get(name)
        return [] if tool is None else [tool]

    @property
    def dispatcher(self) -> Dispatcher:
        dispatcher = self._dispatcher
        settings = self.dispatch_settings()
        if dispatcher is None or dispatcher.settings is not settings:
            dispatcher = self._dispatcher = Dispatcher(ToolMap(self), settings)
        return dispatcher

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.tools())

    def __iter__(self) -> Iterator[str]:
        return iter([tool.name for tool in self.tools()])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}: {len(self.tools())} tools>"

    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        among: Iterable[str] | None = None,
        step: StepContext | None = None,
    ) -> list[Tool]:
        """The `limit` tools of `tools()` that best match `query`, best first (the same
        index and scoring as `ToolRegistry.search_tools`, see `toolreg.toolsets.search`); `among`
        keeps only those names, `step` only the tools `offer(step)` gives."""
        check_search(query, limit)
        accept = searched_names(self, among, step)
        with self._search_lock:
            index = self._current_index()
            return [self._indexed[name] for name in index.search(query, limit, accept=accept)]

    def _current_index(self) -> SearchIndex:
        """The index, told only about the tools added, changed or gone since it last was."""
        index = self._index
        if index is None:
            from .search import SearchIndex  # lazily: `import toolreg` stays light

            index = self._index = SearchIndex()
        revision = self.revision
        if revision == self._indexed_at:
            return index
        now = {tool.name: tool for tool in self.tools()}
        before = self._indexed
        for name in before.keys() - now.keys():
            index.remove(name)
        for name, tool in now.items():
            if before.get(name) is not tool:
                index.add(tool)
        self._indexed, self._indexed_at = now, revision
        return index
