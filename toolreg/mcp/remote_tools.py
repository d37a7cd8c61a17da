"""A mounted server's `tools/list`, read as untrusted input and made local `Tool`s.

`RemoteTools` is a `Mount`'s catalog: it lists the server's tools (at most `_MAX_PAGES`
pages), keeps those `include=` names, refuses those no provider could offer (a local name
a provider rejects, a name two remote tools share, an `outputSchema` that cannot be checked
safely, an input schema past the bounds of `toolreg.validation.untrusted`), each with a
WARNING and a line in `refused`, and builds the others with `Tool.from_schema(...,
untrusted=True)`:

- `readOnlyHint` / `destructiveHint` / `idempotentHint` / `title` from the annotations,
  under MCP's defaults (a tool that says nothing may destroy); unless the application
  trusts the server's annotations (`trust_annotations`), every tool needs `confirm=`;
- its version from the entry's `_meta` (`catalog.remote_version`);
- its function from the mount (`caller`), which sends the call (`remote_call`).

A tool whose definition did not change since the last listing stays the same `Tool` (its
schema is not compiled again). A description that reads as instructions to the model is
reported once (`definition.injection`). What the mount then offers (names taken in its
registry, tools a pin file holds back) is the mount's to decide.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal

import mcp_types as types
from mcp import Client

from ..definition.injection import instructions_to_model, schema_descriptions
from ..definition.names import NAME_RULES, check_name
from ..errors import ToolDefinitionError, UsageError
from ..tool import Tool
from ..validation.untrusted import UntrustedSchemaError, check_patterns_for_re, check_size
from .catalog import remote_version
from .errors import McpConnectionError
from .remote_call import result_text
from .results import shown

__all__ = ["Caller", "RemoteTools"]

_log = logging.getLogger("toolreg.mcp")
_MAX_PAGES = 100  # of a tools/list answer: a server whose cursor never ends cannot hang us
_CONTEXT = "toolreg_context"  # the keyword a mounted tool's function gets its ToolContext by
_PREFIX = re.compile(r"[a-zA-Z0-9_-]*")

Caller = Callable[[str, str, str], Callable[..., Awaitable[Any]]]
"""(the server's name, the local name, the keyword of its `ToolContext`) -> the function
that a mounted tool runs: it sends the call."""


class RemoteTools:
    """The catalog of one server: its `tools/list` entries made local `Tool`s.

    `prefix` goes before every remote name; `include` keeps only those remote names;
    `trust_annotations`: False, True, or the remote names whose annotations to believe;
    `timeout` is each tool's; `label()` names the server in messages; `caller` makes each
    tool's function. Raises `UsageError` for an option that is wrong.
    """

    def __init__(
        self,
        *,
        prefix: str,
        include: Iterable[str] | None,
        trust_annotations: bool | Iterable[str],
        timeout: float,
        label: Callable[[], str],
        caller: Caller,
    ) -> None:
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise UsageError(
                f"prefix={shown(prefix)}: must be a string of a-z A-Z 0-9 _ - (the characters "
                "every provider accepts in a tool name), e.g. prefix='remote_'"
            )
        self.prefix = prefix
        self.trust_annotations = _trust(trust_annotations)
        self.include = None if include is None else _names(include)
        self.timeout = timeout
        self._label = label
        self._caller = caller
        self._built: dict[str, tuple[types.Tool, Tool]] = {}  # remote name -> as last built
        self._warned: set[tuple[str, str, str]] = set()  # (tool, parameter, text) reported
        self.refused: dict[str, str] = {}
        """Remote tools not mounted, by name (control characters escaped): why."""

    async def listed(self, client: Client, *, refresh: bool) -> list[types.Tool]:
        """The server's `tools/list`, every page (at most `_MAX_PAGES`)."""
        tools: list[types.Tool] = []
        cursor: str | None = None
        mode: Literal["refresh", "use"] = "refresh" if refresh else "use"
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode=mode)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise McpConnectionError(f"the tools/list answer ran past {_MAX_PAGES} pages")

    def wanted(self, remote: list[types.Tool], *, strict: bool) -> list[types.Tool]:
        """The entries of `remote` to build: those `include` names (`strict`: all of them
        must be there, else a `UsageError`), less those refused by name (`refused` starts
        anew)."""
        selected = self._selected(remote, strict)
        self.refused = {}
        return self._portable(selected, remote)

    def built(self, items: list[types.Tool]) -> list[tuple[types.Tool, Tool]]:
        """Each remote tool as a local `Tool` (the one built before, if its definition is
        the same); one whose definition is refused (its schema too big, a `$ref` cycle...)
        is left out, with a warning that names it. CPU-bound: run it off the event loop."""
        made = []
        before, self._built = self._built, {}
        for item in items:
            known = before.get(item.name)
            if known is not None and known[0] == item:
                made.append(known)
                self._built[item.name] = known
                continue
            try:
                made.append((item, self._tool(item)))
            except ToolDefinitionError as exc:  # the server's definition: that tool only
                self._refuse(item.name, exc.problem)
                continue
            self._built[item.name] = made[-1]
            if made[-1][1].schema_changes:  # an older draft's keywords, rewritten as 2020-12
                _log.info(
                    "rewrote the remote tool %s of %s as JSON Schema 2020-12: %s",
                    shown(item.name),
                    shown(self._label()),
                    shown("; ".join(made[-1][1].schema_changes), 1000),
                )
        return made

    def warn_of_instructions(self, listed: list[tuple[types.Tool, Tool]]) -> None:
        """A WARNING for each remote description (the tool's, a parameter's) that reads as
        instructions to the model (`definition.injection`), once per text."""
        for item, _ in listed:
            texts = [("", item.description or ""), *schema_descriptions(item.input_schema)]
            for parameter, text in texts:
                key = (item.name, parameter, text)
                phrases = instructions_to_model(text)
                if not phrases or key in self._warned:
                    continue
                self._warned.add(key)
                where = f" (its parameter {shown(parameter)})" if parameter else ""
                _log.warning(
                    "the remote tool %s of %s has a description%s that reads like instructions "
                    "to the model, a prompt injection?: %s",
                    shown(item.name),
                    shown(self._label()),
                    where,
                    ", ".join(shown(p) for p in phrases),
                )

    def _selected(self, remote: list[types.Tool], strict: bool) -> list[types.Tool]:
        if self.include is None:
            return remote
        by_name = {item.name: item for item in remote}
        missing = [name for name in self.include if name not in by_name]
        if missing and strict:
            have = ", ".join(by_name) or "none"
            raise UsageError(
                f"include= names {', '.join(map(repr, missing))}, which the MCP server "
                f"{self._label()} does not have (it has: {have})"
            )
        return [by_name[name] for name in self.include if name in by_name]

    def _portable(self, wanted: list[types.Tool], remote: list[types.Tool]) -> list[types.Tool]:
        """The remote tools whose local name every provider accepts, and that no other remote
        tool shares; the others are refused (a warning names each), so that one tool cannot
        make every export and every conversation of the registry fail."""
        seen: dict[str, int] = {}
        for item in remote:
            seen[item.name] = seen.get(item.name, 0) + 1
        kept: list[types.Tool] = []
        for item in wanted:
            local = self.prefix + item.name
            if seen[item.name] > 1:
                self._refuse(item.name, f"{seen[item.name]} remote tools have this name")
            elif not _portable_name(local):
                self._refuse(
                    item.name,
                    f"the name {shown(local)} is not accepted by every provider "
                    "(1-64 of a-z A-Z 0-9 _ -, a letter or _ first)",
                )
            else:
                kept.append(item)
        return kept

    def _refuse(self, name: str, reason: str) -> None:
        quoted = shown(name)
        if quoted not in self.refused:
            self.refused[quoted] = reason
            _log.warning(
                "refused the remote tool %s of %s: %s", quoted, shown(self._label()), reason
            )

    def _tool(self, remote: types.Tool) -> Tool:
        _check_output_schema(remote)
        hints = remote.annotations
        trusted = self.trust_annotations is True or (
            isinstance(self.trust_annotations, frozenset) and remote.name in self.trust_annotations
        )
        read_only = bool(hints is not None and hints.read_only_hint)
        # MCP's defaults: a tool that says nothing may destroy (destructiveHint true)
        destructive = not read_only and (hints is None or hints.destructive_hint is not False)
        idempotent = bool(not read_only and hints is not None and hints.idempotent_hint)
        title = remote.title or (hints.title if hints is not None else None)
        local = self.prefix + remote.name
        schema = dict(remote.input_schema)
        properties = schema.get("properties")
        context = _CONTEXT
        while isinstance(properties, Mapping) and context in properties:
            context += "_"  # a name the server's schema does not use
        return Tool.from_schema(
            local,
            schema,
            self._caller(remote.name, local, context),
            context_parameter=context,
            description=remote.description or "",
            read_only=read_only,
            destructive=destructive,
            idempotent=idempotent,
            # annotations are the server's claims: unless the application trusts them, a
            # remote tool is confirmed before it runs, whatever it says about itself
            requires_confirmation=not trusted,
            title=title if isinstance(title, str) and title.strip() else None,
            timeout=self.timeout,
            result_filter=result_text,
            untrusted=True,  # the server's schema: bounded in size before it is compiled
            version=remote_version(remote.meta),
        )


def _check_output_schema(remote: types.Tool) -> None:
    """A remote tool's `outputSchema`, as the MCP SDK will use it: the SDK checks each
    structured result against it with jsonschema, whose patterns run on `re`, unbounded,
    in the mount's event loop. A schema past the size limits, or with a pattern `re` could
    backtrack on (whatever engine toolreg has), refuses the tool."""
    schema = remote.output_schema
    if schema is None:
        return
    try:
        check_size(schema)
        check_patterns_for_re(schema)
    except UntrustedSchemaError as exc:
        raise ToolDefinitionError(
            f"its output schema cannot be checked safely: {exc} (the MCP SDK checks every "
            "structured result against it with Python's re)"
        ) from None


def _portable_name(name: str) -> bool:
    return all(check_name(name, rule) is None for rule in NAME_RULES.values())


def _trust(value: object) -> bool | frozenset[str]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UsageError(
            f"trust_annotations={value!r}: pass True, False or a list of remote tool names"
        )
    names = frozenset(value)
    if not all(isinstance(n, str) and n for n in names):
        raise UsageError("trust_annotations= takes True, False or remote tool names")
    return names


def _names(include: Iterable[str]) -> tuple[str, ...]:
    if isinstance(include, str):
        raise UsageError(f"include= takes a list of names, e.g. include=[{include!r}]")
    names = tuple(include)
    if not all(isinstance(n, str) and n for n in names):
        raise UsageError("include= takes tool names (non-empty strings)")
    return names
