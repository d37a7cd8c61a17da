"""Views over toolsets: `filtered`, `prefixed`, `combined`, `searchable`.

```python
tools = combined(registry, prefixed(time_mount, "time"), filtered(files, tags=["read"]))
Conversation(client, model, registry=tools)
```

A view holds its parts and reads them on every question, so a registration, an
unregistration or a mount's refresh shows through at once. Names are checked when a view is
composed: two parts with the same tool name, a prefixed name a provider would refuse, a
name or a tag `filtered` does not find, each is a `UsageError` then, naming the name and
where it comes from; never a silent override. A clash that appears later (a mount's server
adds a tool whose name is taken) keeps the earlier part's tool and logs a warning naming
both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..definition.names import NAME_RULES, check_name
from ..dispatch import DispatchSettings
from ..errors import UsageError
from ..formats import export_tools
from ..formats.responses import namespace_tool
from ..tool import Tool
from .base import (
    SEARCH_TOOL,
    BaseToolset,
    Namespace,
    StepContext,
    Toolset,
    label_of,
    namespaces_of,
)
from .versions import versions_of

if TYPE_CHECKING:  # toolreg.toolsets.search loads on first use (its patterns take ~6 ms to compile)
    from openai.types.responses import NamespaceToolParam

    from .search.selection import ToolSearch

__all__ = [
    "Combined",
    "Filtered",
    "Prefixed",
    "Searchable",
    "combined",
    "filtered",
    "prefixed",
    "searchable",
]


def _warn(message: str, *args: object) -> None:
    """Log a warning on "toolreg.toolsets"; `logging` is imported here, on the first
    warning, not by `import toolreg`."""
    import logging

    logging.getLogger("toolreg.toolsets").warning(message, *args)


_PREFIX = re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,62}")


def _settings_of(toolset: Toolset) -> DispatchSettings:
    return toolset.dispatcher.settings


def _checked_part(toolset: object, where: str) -> Toolset:
    if not isinstance(toolset, Toolset):
        raise UsageError(
            f"{where} takes toolsets (a ToolRegistry, a Mount, or a view of them), not "
            f"{type(toolset).__name__}"
        )
    return toolset


class _View(BaseToolset):
    """A view over one toolset: dispatched under its settings, offered through its `offer`,
    searched by its `search_tools` (its index and its ranker), among this view's tools."""

    def __init__(self, inner: Toolset) -> None:
        super().__init__()
        self.inner = inner

    @property
    def revision(self) -> int:
        return self.inner.revision

    def tools(self) -> list[Tool]:
        return self.inner.tools()

    def get(self, name: str) -> Tool | None:
        return self.inner.get(name)

    def versions(self, name: str) -> list[Tool]:
        return versions_of(self.inner, name)

    def search_tools(
        self,
        query: str,
        *,
        limit: int = 5,
        among: Iterable[str] | None = None,
        step: StepContext | None = None,
    ) -> list[Tool]:
        """The inner toolset's search, among this view's tools (and what the inner toolset
        offers the `step`, when one is given)."""
        return self.inner.search_tools(query, limit=limit, among=self._among(among), step=step)

    def _among(self, among: Iterable[str] | None) -> Iterable[str] | None:
        """The names a search may find: of `among`, those this view holds (a view that
        holds fewer tools than the inner toolset narrows it)."""
        return among

    def dispatch_settings(self) -> DispatchSettings:
        return _settings_of(self.inner)

    def namespaces(self) -> list[Namespace]:
        """The inner toolset's namespaces, of the tools this view holds."""
        spaces = namespaces_of(self.inner)
        if not spaces:
            return []
        held = {tool.name for tool in self.tools()}
        kept = [replace(s, members=s.members & held) for s in spaces]
        return [s for s in kept if s.members]


class Filtered(_View):
    """The tools of `inner` that `keep(tool)` keeps (see `filtered`, which makes one);
    `label` is how messages name it."""

    def __init__(self, inner: Toolset, keep: Callable[[Tool], bool], label: str) -> None:
        super().__init__(inner)
        self.keep = keep
        self.label = label

    def tools(self) -> list[Tool]:
        return [tool for tool in self.inner.tools() if self.keep(tool)]

    def offer(self, step: StepContext) -> list[Tool]:
        return [tool for tool in self.inner.offer(step) if self.keep(tool)]

    def get(self, name: str) -> Tool | None:
        tool = self.inner.get(name)
        return tool if tool is not None and self.keep(tool) else None

    def versions(self, name: str) -> list[Tool]:
        return [t for t in versions_of(self.inner, name) if self.keep(t)]

    def _among(self, among: Iterable[str] | None) -> list[str]:
        held = [tool.name for tool in self.tools()]
        if among is None:
            return held
        wanted = {among} if isinstance(among, str) else set(among)
        return [name for name in held if name in wanted]


def filtered(
    toolset: Toolset,
    predicate: Callable[[Tool], bool] | None = None,
    *,
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
) -> Filtered:
    """The tools of `toolset` that `predicate(tool)` accepts, or whose name is one of
    `names`, or that carry one of `tags` (exactly one of the three). A name or a tag the
    toolset does not have now is a `UsageError`."""
    toolset = _checked_part(toolset, "filtered()")
    given = [k for k, v in (("predicate", predicate), ("names", names), ("tags", tags)) if v]
    if len(given) != 1 or (predicate is not None and not callable(predicate)):
        raise UsageError(
            "filtered(toolset, ...) takes exactly one of: a predicate (a function tool -> "
            "bool), names=[...] or tags=[...]; e.g. filtered(registry, tags=['read'])"
        )
    where = label_of(toolset)
    if predicate is not None:
        return Filtered(toolset, predicate, f"filtered({where})")
    wanted = _strings(names if names is not None else tags, "names=" if names else "tags=")
    have = toolset.tools()
    if names is not None:
        known = {tool.name for tool in have}
        keep: Callable[[Tool], bool] = lambda tool: tool.name in wanted  # noqa: E731
    else:
        known = {tag for tool in have for tag in tool.tags}
        keep = lambda tool: bool(tool.tags & wanted)  # noqa: E731
    missing = sorted(wanted - known)
    if missing:
        kind = "tool" if names is not None else "tag"
        shown = ", ".join(sorted(known)[:20]) or "none"
        raise UsageError(
            f"filtered(): {where} has no {kind} {', '.join(map(repr, missing))} (it has: {shown})"
        )
    return Filtered(toolset, keep, f"filtered({where})")


def _strings(values: Any, option: str) -> frozenset[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise UsageError(f"filtered({option}...) takes a list of strings, e.g. {option}['x']")
    out = frozenset(values)
    if not all(isinstance(v, str) and v for v in out):
        raise UsageError(f"filtered({option}...) takes non-empty strings")
    return out


class Prefixed(_View):
    """The tools of `inner`, each named `prefix` + `_` + its name (see `prefixed`, which
    checks the prefix and makes one). With a `description`, the Responses API is offered
    them as one namespace tool so described."""

    search_tools = BaseToolset.search_tools  # an index of its own: the names are its own

    def __init__(self, inner: Toolset, prefix: str, description: str | None = None) -> None:
        super().__init__(inner)
        self.prefix = prefix
        self.description = description
        self.label = f"prefixed({label_of(inner)}, {prefix!r})"
        self._renamed: dict[str, tuple[Tool, Tool | None]] = {}  # inner name -> (it, renamed)
        self._other_versions: dict[tuple[str, str], tuple[Tool, Tool | None]] = {}

    def local(self, name: str) -> str:
        """The exported name of the inner tool `name`."""
        return f"{self.prefix}_{name}"

    def _rename(self, tool: Tool) -> Tool | None:
        known = self._renamed.get(tool.name)
        if known is not None and known[0] is tool:
            return known[1]
        problem = _name_problem(tool.name, self.local(tool.name))
        renamed = None
        if problem is None:
            renamed = replace(tool, name=self.local(tool.name))
        else:
            _warn("%s leaves out the tool %r: %s", self.label, tool.name, problem)
        if len(self._renamed) > 4 * len(self.inner.tools()) + 64:  # tools come and go
            self._renamed = {}
        self._renamed[tool.name] = (tool, renamed)
        return renamed

    def _all(self, tools: Iterable[Tool]) -> list[Tool]:
        return [r for r in map(self._rename, tools) if r is not None]

    def tools(self) -> list[Tool]:
        return self._all(self.inner.tools())

    def offer(self, step: StepContext) -> list[Tool]:
        return self._all(self.inner.offer(step))

    def namespace(
        self, description: str | None = None, *, strict: bool | None = None
    ) -> NamespaceToolParam:
        """These tools as one Responses API `namespace` tool named by the prefix, each
        inside under its own name (`prefixed(mount, "crm").namespace("Customer orders.")`:
        a mounted server's tools as one namespace), for a loop of one's own; the view's own
        `description` when none is given. A call in the namespace is read back as
        `prefix_name` (`formats.responses.call_name`), which this view runs."""
        text = self.description if description is None else description
        if text is None:
            raise UsageError(
                f"{self.label}.namespace(): give the namespace a description, e.g. "
                ".namespace('Customer orders.'), or prefixed(..., description=...)"
            )
        definitions = export_tools(self.tools(), "responses", strict=strict)
        return namespace_tool(self.prefix, text, definitions)

    def namespaces(self) -> list[Namespace]:
        """With a `description`, its tools are one namespace named by the prefix (what a
        conversation on the Responses API offers); else the inner toolset's, renamed."""
        if self.description is not None:
            members = frozenset(tool.name for tool in self.tools())
            return [Namespace(self.prefix, self.description, members)] if members else []
        return [
            Namespace(self.local(s.name), s.description, frozenset(map(self.local, s.members)))
            for s in namespaces_of(self.inner)
        ]

    def get(self, name: str) -> Tool | None:
        head = self.prefix + "_"
        if not name.startswith(head):
            return None
        tool = self.inner.get(name[len(head) :])
        return None if tool is None else self._rename(tool)

    def versions(self, name: str) -> list[Tool]:
        """The inner tool's versions, each named `prefix_name`."""
        head = self.prefix + "_"
        if not name.startswith(head):
            return []
        inner = name[len(head) :]
        default = self.inner.get(inner)
        out = []
        for tool in versions_of(self.inner, inner):
            renamed = self._rename(tool) if tool is default else self._rename_version(tool)
            if renamed is not None:
                out.append(renamed)
        return out

    def _rename_version(self, tool: Tool) -> Tool | None:
        """`_rename` for a version other than the latest (kept apart: each is one object
        for as long as the inner one is)."""
        key = (tool.name, str(tool.version))
        known = self._other_versions.get(key)
        if known is not None and known[0] is tool:
            return known[1]
        renamed = None
        if _name_problem(tool.name, self.local(tool.name)) is None:
            renamed = replace(tool, name=self.local(tool.name))
        if len(self._other_versions) > 4 * len(self.inner.tools()) + 64:
            self._other_versions = {}
        self._other_versions[key] = (tool, renamed)
        return renamed


def _name_problem(name: str, new: str) -> str | None:
    """Why `new` (a prefixed `name`) breaks a rule of a provider that accepts `name`."""
    for provider, rule in NAME_RULES.items():
        if check_name(name, rule) is None and check_name(new, rule) is not None:
            return f"{new!r} is not a valid {provider} tool name ({rule[1]})"
    return None


def prefixed(toolset: Toolset, prefix: str, *, description: str | None = None) -> Prefixed:
    """`toolset`'s tools named `prefix_name` (`prefixed(mount, "time")` offers
    `time_get_current_time`); a call to `prefix_name` runs the tool `name`. The prefix is a
    letter or `_`, then letters, digits, `_` or `-`; a prefixed name that a provider
    accepting the original name would refuse (too long) is a `UsageError`.

    With a `description` (what the model reads of these tools as a whole), a conversation
    on the Responses API offers them as one `namespace` tool named by the prefix, each
    inside under its own name; elsewhere, and without one, the flat prefixed names."""
    toolset = _checked_part(toolset, "prefixed()")
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise UsageError(
            f"prefixed(toolset, {prefix!r}): the prefix is a letter or _, then up to 62 of "
            "a-z A-Z 0-9 _ - (it goes before each name with a _), e.g. prefixed(mount, 'time')"
        )
    if description is not None and (not isinstance(description, str) or not description.strip()):
        raise UsageError(
            f"prefixed(toolset, {prefix!r}, description={description!r}): text that says "
            "what these tools are for, e.g. 'Customer orders.'"
        )
    view = Prefixed(toolset, prefix, description)
    for tool in toolset.tools():
        problem = _name_problem(tool.name, view.local(tool.name))
        if problem is not None:
            raise UsageError(f"{view.label}: {problem}; choose a shorter prefix")
    return view


class Combined(BaseToolset):
    """The tools of several toolsets, `parts`, in their order (see `combined`, which makes
    one and refuses a name two parts share)."""

    def __init__(self, parts: Sequence[Toolset]) -> None:
        super().__init__()
        self.parts = tuple(parts)
        self.label = f"combined({', '.join(label_of(p) for p in self.parts)})"
        self._warned: set[tuple[str, int, int]] = set()

    @property
    def revision(self) -> int:
        return sum(part.revision for part in self.parts)  # each part's only grows

    def dispatch_settings(self) -> DispatchSettings:
        return _settings_of(self.parts[0])

    def _merged(self, lists: Iterable[list[Tool]]) -> list[Tool]:
        out: dict[str, Tool] = {}
        where: dict[str, int] = {}
        for i, tools in enumerate(lists):
            for tool in tools:
                if tool.name not in out:
                    out[tool.name], where[tool.name] = tool, i
                elif out[tool.name] is not tool:
                    self._clash(tool.name, where[tool.name], i)
        return list(out.values())

    def _clash(self, name: str, first: int, later: int) -> None:
        if (name, first, later) not in self._warned:
            self._warned.add((name, first, later))
            _warn(
                "%s: %s and %s both have a tool named %r; the first one's is kept",
                self.label,
                label_of(self.parts[first]),
                label_of(self.parts[later]),
                name,
            )

    def tools(self) -> list[Tool]:
        return self._merged(part.tools() for part in self.parts)

    def namespaces(self) -> list[Namespace]:
        """Every part's namespaces, in the parts' order."""
        return [space for part in self.parts for space in namespaces_of(part)]

    def offer(self, step: StepContext) -> list[Tool]:
        return self._merged(part.offer(step) for part in self.parts)

    def get(self, name: str) -> Tool | None:
        for part in self.parts:
            tool = part.get(name)
            if tool is not None:
                return tool
        return None

    def versions(self, name: str) -> list[Tool]:
        """The versions of the part whose tool `name` is the one this toolset holds."""
        for part in self.parts:
            if part.get(name) is not None:
                return versions_of(part, name)
        return []


def combined(*toolsets: Toolset) -> Combined:
    """The tools of all `toolsets`, in their order; calls are dispatched under the first
    one's settings (put your registry first). Two of them with the same tool name is a
    `UsageError` naming the name and both toolsets: give one a prefix (`prefixed`)."""
    if not toolsets:
        raise UsageError("combined() needs at least one toolset: combined(registry, mount)")
    parts = [_checked_part(t, "combined()") for t in toolsets]
    seen: dict[str, int] = {}
    for i, part in enumerate(parts):
        if any(part is other for other in parts[:i]):
            raise UsageError(f"combined(): {label_of(part)} is given twice")
        for tool in part.tools():
            if tool.name in seen:
                raise UsageError(
                    f"combined(): the tool name {tool.name!r} is in both "
                    f"{label_of(parts[seen[tool.name]])} and {label_of(part)}; give one of "
                    "them a prefix, e.g. prefixed(mount, 'remote')"
                )
            seen[tool.name] = i
    return Combined(parts)


class Searchable(_View):
    """`inner`, offering each model call only the tools that best match the recent user
    messages (see `searchable`); every tool of `inner` still runs when called. `option` is
    the `ToolSearch` that says how many tools, which are always offered, and how many
    messages make the query. A deferred tool (`defer_loading=True`) that `inner` offers was
    loaded on purpose (the model found it, see `deferred`, or the API searches them): it
    stays offered, and so does the `search_tools` tool that loads them (`SEARCH_TOOL`)."""

    def __init__(self, inner: Toolset, option: ToolSearch) -> None:
        super().__init__(inner)
        self.option = option
        self.label = f"searchable({label_of(inner)}, limit={option.limit})"

    def offer(self, step: StepContext) -> list[Tool]:
        offered = self.inner.offer(step)
        always = set(self.option.always)
        keep = {t.name for t in offered if t.defer_loading or t.name in always or t.tags & always}
        keep.add(SEARCH_TOOL)
        if step.history:
            from .search.selection import query_text  # lazily, as above

            reader = step.read()
            keep.update(reader.calls_in(step.history))
            query = query_text(step.history, self.option.messages, reader.user_text)
            if query:
                among = [t.name for t in offered]
                found = self.inner.search_tools(query, limit=self.option.limit, among=among)
                keep.update(t.name for t in found)
        return [tool for tool in offered if tool.name in keep]


def searchable(
    toolset: Toolset, limit: int = 5, *, always: Iterable[str] = (), messages: int = 3
) -> Searchable:
    """`toolset`, offering each model call only the `limit` tools that best match the last
    `messages` user messages, plus the `always` ones (names or tags) and those called since
    the last user message: `Conversation(tool_search=...)` as a toolset of its own."""
    from .search.selection import ToolSearch  # lazily, as above

    toolset = _checked_part(toolset, "searchable()")
    option = ToolSearch(limit=limit, always=tuple(always), messages=messages)
    return Searchable(toolset, option)
