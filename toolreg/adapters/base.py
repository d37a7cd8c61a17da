"""`Bridge`: the toolreg side of every framework adapter.

A framework asks two things of the tools it is given: what to tell the model (a name, a
description, a JSON Schema, whether the schema is strict) and how to run a call. `Bridge`
answers both from a toolset: `offered()` gives one `Offered` record per tool (the OpenAI
export, so a framework shows the model exactly what `get_tools()` would), kept until the
toolset's `revision` moves; `run()` dispatches one call with the toolset's own dispatcher
(async: every framework here runs its tools in an event loop), so validation, coercion,
context injection, confirmation, time limits, redaction and the cut of results stay
toolreg's. The framework modules only translate: their context into toolreg's `context=`,
their approval into `confirm=`, a `ToolResult` into what their loop gives the model.

`run_from()` and `schema_of()` serve the reverse direction: a framework's tool registered
in a toolreg registry, its JSON Schema checked as untrusted input (`Tool.from_schema(...,
untrusted=True)`: bounded size, depth and patterns).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

from ..dispatch import ConfirmCallback
from ..errors import ToolDefinitionError, UsageError, with_article
from ..formats import export_tools
from ..jsonvalues import copy_json
from ..result import ToolResult
from ..tool import Tool
from ..toolsets import Toolset, label_of

__all__ = [
    "Approvals",
    "Bridge",
    "Offered",
    "checked_context",
    "context_parameter",
    "schema_of",
]

Approvals = Union[ConfirmCallback, Literal["defer"], None]
"""How a tool that needs confirmation (`destructive=True`, `requires_confirmation=True`)
is confirmed: `"defer"`, by the framework's own approval flow (pydantic-ai's deferred
tools, the Agents SDK's `needs_approval`); a `ConfirmCallback` `(tool, arguments) -> bool`
(it may be async), asked by toolreg's dispatch before the call; None: such calls are
refused, as `dispatch_tool` without `confirm=` refuses them."""


@dataclass(frozen=True, slots=True)
class Offered:
    """One tool as a framework's definition needs it: `name`, `description` (with the
    examples appended, as the OpenAI export writes it), `parameters` (the exported JSON
    Schema, strict when the tool is; a private copy the framework may change) and
    `strict`, and the `tool` itself."""

    tool: Tool
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool


def _always(tool: Tool, arguments: dict[str, Any]) -> bool:
    """The `confirm=` of a call the framework's own approval flow approved."""
    return True


class Bridge:
    """A toolset seen from a framework: its definitions (`offered`) and its calls (`run`).

    Args:
        toolset: a `ToolRegistry`, a `Mount`, or a view of them.
        confirm: see `Approvals`.
        where: how usage errors name the adapter (e.g. `"ToolregToolset()"`).

    Raises:
        UsageError: `toolset` is not a toolset, or `confirm` is neither "defer", a
            callable nor None (or "defer" where the framework has no approval flow).
    """

    __slots__ = ("_cache", "_lock", "confirm", "toolset")

    def __init__(
        self,
        toolset: object,
        *,
        confirm: Approvals,
        where: str,
        defer: bool = True,
    ) -> None:
        if not isinstance(toolset, Toolset):
            raise UsageError(
                f"{where} takes a toolset (a ToolRegistry, a Mount, or a view of them), not "
                f"{type(toolset).__name__}"
            )
        if confirm == "defer" and not defer:
            raise UsageError(
                f'{where}: confirm="defer" needs an approval flow this framework does not '
                "have; pass a function (tool, arguments) -> bool, or None to refuse the "
                "tools that need confirmation"
            )
        if confirm is not None and confirm != "defer" and not callable(confirm):
            raise UsageError(
                f'{where}: confirm= takes "defer", a function (tool, arguments) -> bool, or '
                f"None, not {type(confirm).__name__}"
            )
        self.toolset: Toolset = toolset
        self.confirm = confirm
        self._lock = threading.Lock()
        self._cache: tuple[int, list[Offered]] | None = None

    @property
    def label(self) -> str:
        return label_of(self.toolset)

    @property
    def deferred(self) -> bool:
        """Whether the framework's approval flow confirms the tools that need it."""
        return self.confirm == "defer"

    def offered(self) -> list[Offered]:
        """Every tool of the toolset, as the OpenAI export describes it, in order (cached
        until the toolset's `revision` moves).

        Raises:
            ToolDefinitionError: a tool's name is not valid for OpenAI's function tools
                (the name every framework here sends on).
        """
        revision = self.toolset.revision
        cached = self._cache
        if cached is not None and cached[0] == revision:
            return cached[1]
        with self._lock:
            tools = self.toolset.tools()
            made = []
            for tool, export in zip(tools, export_tools(tools, "openai")):
                function: Mapping[str, Any] = export["function"]
                made.append(
                    Offered(
                        tool=tool,
                        name=tool.name,
                        description=str(function.get("description", "")),
                        parameters=copy_json(dict(function["parameters"])),
                        strict=bool(function.get("strict", False)),
                    )
                )
            self._cache = (revision, made)
        return made

    async def run(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        *,
        context: Any,
        call_id: str | None,
        approved: bool = False,
    ) -> ToolResult:
        """One call, dispatched by the toolset's dispatcher: never raises for the model's
        mistakes or the tool's (a `ToolResult` with `ok=False` says what went wrong);
        raises the application's (`MissingContextError`). `approved`: the framework's
        approval flow approved this call, so toolreg does not ask again."""
        return await self.toolset.dispatcher.adispatch_tool(
            name, arguments, context=context, call_id=call_id, confirm=self._confirm(approved)
        )

    def run_sync(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        *,
        context: Any,
        call_id: str | None,
        approved: bool = False,
    ) -> ToolResult:
        """`run` for a framework that calls tools from sync code."""
        return self.toolset.dispatcher.dispatch_tool(
            name, arguments, context=context, call_id=call_id, confirm=self._confirm(approved)
        )

    def _confirm(self, approved: bool) -> ConfirmCallback | None:
        if approved:
            return _always
        if self.confirm == "defer":
            return None  # the framework asks; a call it did not approve is refused
        return self.confirm


def checked_context(context: object, where: str) -> Callable[[Any], Any] | None:
    """`context=` of an adapter: None or a function of the framework's run context.

    Args:
        context: what the application passed.
        where: how the message names the adapter.

    Raises:
        UsageError: `context` is neither None nor callable.
    """
    if context is not None and not callable(context):
        raise UsageError(
            f"{where}: context= takes a function of the framework's run context that returns "
            f"the deps toolreg's ToolContext gets, not {type(context).__name__}"
        )
    return context


def schema_of(schema: object, *, owner: str) -> Mapping[str, Any]:
    """A framework tool's JSON Schema of its arguments, or the `ToolDefinitionError` that
    says why it is not one (what is in it is checked by `Tool.from_schema(...,
    untrusted=True)`).

    Args:
        schema: what the framework's tool gives as its argument schema.
        owner: how the error names the tool.

    Raises:
        ToolDefinitionError: `schema` is not a mapping.
    """
    if not isinstance(schema, Mapping):
        raise ToolDefinitionError(
            f"the tool's argument schema is {with_article(type(schema).__name__)}, not a JSON "
            "Schema object",
            function=owner,
            fix="give the tool a JSON Schema (an object schema) for its arguments",
        )
    return schema


def context_parameter(schema: Mapping[str, Any]) -> str:
    """The keyword a reverse tool's function gets the call's `ToolContext` as: `ctx`, or
    `ctx` with underscores added, a name the schema's properties do not use."""
    name = "ctx"
    properties = schema.get("properties")
    while isinstance(properties, Mapping) and name in properties:
        name += "_"
    return name
