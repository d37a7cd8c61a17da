"""Versions of a tool side by side, and the `pinned` view that picks one.

A `ToolRegistry` holds several versions of one name (`register_tool(version="2")`); its
`tools()` and a call by name get the latest (see `toolreg.definition.versions` for the
order). Every toolset answers `versions_of(toolset, name)`: the versions it holds of a
name, latest first (a tool without versions is its own only version). A view shows the
versions of what it holds (renamed by `prefixed`, kept by `filtered`...).

```python
registry.register_tool(search_v1, name="search", version="1")
registry.register_tool(search_v2, name="search", version="2")
old_clients = pinned(registry, {"search": "1"})  # search is version 1 here
```

A pin never falls back to another version: when the pinned version goes away (it is
unregistered, a mount's server drops it), the view holds no tool of that name and logs a
warning, rather than give the model a tool it was not built for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..definition.versions import VERSION_RULE, VersionKey, check_version, version_key
from ..dispatch import DispatchSettings
from ..errors import ToolDefinitionError, UsageError
from ..tool import Tool
from .base import BaseToolset, StepContext, Toolset, label_of

__all__ = [
    "Pinned",
    "pinned",
    "same_version",
    "same_version_text",
    "version_order",
    "versions_of",
]


def version_order(tool: Tool) -> VersionKey:
    """A tool's place among its name's versions (sort with `reverse=True`: latest first)."""
    version = tool.version
    key = None if version is None else version_key(version)
    return (-1, (), "") if key is None else key


def same_version(a: Tool, b: Tool) -> bool:
    """Whether two tools of one name are the same version (both without one included)."""
    if a.version is None or b.version is None:
        return a.version is None and b.version is None
    return version_key(a.version) == version_key(b.version)


def same_version_text(tool: Tool, version: str) -> bool:
    """Whether `tool` is `version` (`"1"` is `"1.0"`); never for a tool without versions."""
    if tool.version is None or not isinstance(version, str):
        return False
    key = version_key(version)
    return key is not None and key == version_key(tool.version)


def mixed_versions(tool: Tool, family: list[Tool], function: str) -> ToolDefinitionError:
    """The error for a tool with a version where its name has none, or the other way
    (`function`: how the message names the tool's function)."""
    if tool.version is None:
        shown = ", ".join(str(t.version) for t in family)
        return ToolDefinitionError(
            f"the tool '{tool.name}' is registered with versions ({shown}); this one has none",
            function=function,
            fix="give it a later version=... too, or unregister the others first",
        )
    return ToolDefinitionError(
        f"the tool '{tool.name}' is registered without a version; this one is version "
        f"'{tool.version}'",
        function=function,
        fix="give the registered one a version too (version='1'), so that both are kept",
    )


def versions_of(toolset: object, name: str) -> list[Tool]:
    """The versions `toolset` holds of the tool `name`, latest first: its `versions(name)`
    when its class has that method (a registry, every `BaseToolset`), else the one tool
    `get(name)` gives; none when it holds no such tool."""
    method = getattr(type(toolset), "versions", None)
    if callable(method):
        return list(method(toolset, name))
    tool = toolset.get(name) if isinstance(toolset, Toolset) else None
    return [] if tool is None else [tool]


class Pinned(BaseToolset):
    """`inner`, with the tools named in `pins` at the version given there (see `pinned`)."""

    def __init__(self, inner: Toolset, pins: Mapping[str, str]) -> None:
        super().__init__()
        self.inner = inner
        self.pins = dict(pins)
        shown = ", ".join(f"{n}={v}" for n, v in self.pins.items())
        self.label = f"pinned({label_of(inner)}, {shown})"
        self._gone: set[tuple[str, str]] = set()

    @property
    def revision(self) -> int:
        return self.inner.revision

    def dispatch_settings(self) -> DispatchSettings:
        return self.inner.dispatcher.settings

    def _pinned(self, name: str) -> Tool | None:
        version = self.pins[name]
        held = versions_of(self.inner, name)
        tool = next((t for t in held if same_version_text(t, version)), None)
        if tool is None and (name, version) not in self._gone:
            self._gone.add((name, version))
            import logging  # not loaded by `import toolreg`

            logging.getLogger("toolreg.toolsets").warning(
                "%s: version %r of the tool %r is gone; the tool is not offered (a pin never "
                "falls back to another version)",
                self.label,
                version,
                name,
            )
        return tool

    def _swap(self, tools: list[Tool]) -> list[Tool]:
        out = []
        for tool in tools:
            if tool.name in self.pins:
                chosen = self._pinned(tool.name)
                if chosen is None:
                    continue
                tool = chosen
            out.append(tool)
        return out

    def tools(self) -> list[Tool]:
        return self._swap(self.inner.tools())

    def offer(self, step: StepContext) -> list[Tool]:
        return self._swap(self.inner.offer(step))

    def get(self, name: str) -> Tool | None:
        if name in self.pins:
            return self._pinned(name) if self.inner.get(name) is not None else None
        return self.inner.get(name)

    def versions(self, name: str) -> list[Tool]:
        """A pinned tool's one version here; the others' as the inner toolset has them."""
        if name in self.pins:
            tool = self.get(name)
            return [] if tool is None else [tool]
        return versions_of(self.inner, name)


def pinned(toolset: Toolset, versions: Mapping[str, Any]) -> Pinned:
    """`toolset` with the tools named in `versions` at the version given for each
    (`pinned(registry, {"search": "1"})`): what is offered, exported, searched and called
    under that name is that version; the other tools are as in `toolset` (their latest).
    A name the toolset does not have, or a version it does not have of it, is a
    `UsageError` naming the versions there are. A pinned version that goes away later is
    left out, never replaced by another (see the module)."""
    if not isinstance(toolset, Toolset):
        raise UsageError(
            f"pinned() takes a toolset (a ToolRegistry, a Mount, or a view of them), not "
            f"{type(toolset).__name__}"
        )
    if not isinstance(versions, Mapping) or not versions:
        raise UsageError(
            "pinned(toolset, versions): versions maps tool names to versions, e.g. "
            "pinned(registry, {'search': '1'})"
        )
    pins: dict[str, str] = {}
    for name, given in versions.items():
        version = check_version(given)
        if not isinstance(name, str) or version is None:
            raise UsageError(
                f"pinned(): {name!r}: {given!r} is not a version ({VERSION_RULE}); e.g. "
                "{'search': '1'}"
            )
        held = versions_of(toolset, name)
        if not held:
            raise UsageError(f"pinned(): {label_of(toolset)} has no tool {name!r}")
        if not any(same_version_text(t, version) for t in held):
            shown = ", ".join(str(t.version) for t in held if t.version) or "none"
            raise UsageError(
                f"pinned(): the tool {name!r} of {label_of(toolset)} has no version "
                f"{version!r} (its versions: {shown})"
            )
        pins[name] = version
    return Pinned(toolset, pins)
