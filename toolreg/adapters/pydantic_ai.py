"""A toolreg toolset as a pydantic-ai toolset (the `pydantic-ai` extra).

```python
from pydantic_ai import Agent
from toolreg.adapters.pydantic_ai import ToolregToolset

agent = Agent(model, toolsets=[ToolregToolset(registry)], deps_type=User)
agent.run_sync("...", deps=user)  # each call's ToolContext.deps is the run's deps
```

pydantic-ai runs the loop; toolreg runs each call. How the two meet:

- **Definitions**: each tool's name, description and JSON Schema as `get_tools()` exports
  them (strict when the tool is), `defer_loading` as pydantic-ai's own (its tool search
  reveals the tool), toolreg's flags in `ToolDefinition.metadata["toolreg"]`.
- **Validation**: pydantic-ai's validation step runs toolreg's (decoding with its limits,
  validation, safe coercion, the argument converters), so pydantic-ai's hooks and its
  approval flow see the arguments toolreg accepted, coerced. The tool then runs through
  toolreg's dispatch (context injection, confirmation, time limit, result filter and cut).
- **Errors**: what the model can fix by calling again (invalid JSON or arguments, a
  `ToolRetry`, a time limit) is raised as pydantic-ai's `ModelRetry` with toolreg's
  message: pydantic-ai's own convention for these, counted against the tool's
  `max_retries`, as its own validation errors are. Whatever else fails (the tool's
  exception, redacted as toolreg redacts it; a `ToolFailed`; a refused confirmation) is
  pydantic-ai's `ToolFailed`: a failed result the model reads, no retry used.
- **Approvals**: a tool that needs confirmation is an `"unapproved"` tool: the run ends
  with pydantic-ai's `DeferredToolRequests`, and toolreg runs the call once the
  application approves it (`DeferredToolResults`). `confirm=` a function instead asks it
  inline, toolreg's way.
- **Context**: the call's `ToolContext.deps` is the run's `deps` (`context=` a function
  of the `RunContext` chooses something else).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from ..dispatch import Dispatcher
from ..errors import ToolCallError
from ..result import ToolResult
from .base import Approvals, Bridge, Offered, checked_context

__all__ = ["ToolregToolset"]

_RETRY_KINDS = frozenset({"invalid_json", "invalid_arguments", "unknown_tool", "timeout"})
"""`ToolResult.error_kind`s pydantic-ai gets as `ModelRetry` (a `ToolRetry` too: it is an
`execution_error` whose error is a `RetryRequestedError`)."""


def _deps(ctx: RunContext[Any]) -> Any:
    return ctx.deps


def _failure(result: ToolResult) -> ModelRetry | ToolFailed:
    """What pydantic-ai's loop gets for a failed call: see the module."""
    from ..errors import RetryRequestedError

    if result.error_kind in _RETRY_KINDS or isinstance(result.error, RetryRequestedError):
        return ModelRetry(result.content)
    return ToolFailed(result.content)


@dataclass(frozen=True, slots=True)
class _Arguments:
    """pydantic-ai's `args_validator` for one tool in one run step: toolreg's decoding,
    validation and coercion (the dispatcher's `check_call`), its message as a `ModelRetry`.
    Returns the arguments as JSON values, the way toolreg accepted them."""

    dispatcher: Dispatcher
    name: str
    context: Any

    def validate_json(self, input: str | bytes | bytearray, **_: Any) -> Any:
        return self._checked(bytes(input) if isinstance(input, bytearray) else input)

    def validate_python(self, input: Any, **_: Any) -> Any:
        return self._checked(input)

    def _checked(self, arguments: Any) -> dict[str, Any]:
        try:
            return self.dispatcher.check_call(self.name, arguments, context=self.context)[1]
        except ToolCallError as err:
            raise ModelRetry(err.message) from None


class ToolregToolset(AbstractToolset[Any]):
    """A toolreg toolset (a `ToolRegistry`, a `Mount`, a view) as a pydantic-ai toolset.

    Give it to an `Agent` (`toolsets=[...]`) like any pydantic-ai toolset; compose it with
    pydantic-ai's own views (`.prefixed()`, `.filtered()`, ...). The tools are read on
    every run step, so a registration or a mount's refresh shows at the next step.

    Args:
        toolset: the tools.
        context: a function of pydantic-ai's `RunContext` that returns what a call's
            `ToolContext.deps` gets; by default the run's `deps`.
        confirm: how a tool that needs confirmation is confirmed: `"defer"` (the default),
            by pydantic-ai's deferred tools; a function `(tool, arguments) -> bool`, asked
            by toolreg before the call; None, such calls are refused.
        max_retries: how many `ModelRetry`s a tool may cause in a run (pydantic-ai's
            budget); None: the agent's own setting (`Agent(retries=...)`, 1 by default).
        id: the toolset's id (pydantic-ai needs one for durable execution).

    Raises:
        UsageError: `toolset` is not a toolset, or `context` / `confirm` is not one of the
            above.
    """

    def __init__(
        self,
        toolset: object,
        *,
        context: Callable[[RunContext[Any]], Any] | None = None,
        confirm: Approvals = "defer",
        max_retries: int | None = None,
        id: str | None = None,
    ) -> None:
        where = "ToolregToolset()"
        self.bridge = Bridge(toolset, confirm=confirm, where=where)
        self.context: Callable[[RunContext[Any]], Any] = checked_context(context, where) or _deps
        self.max_retries = max_retries
        self._id = id
        self._definitions: tuple[list[Offered], list[tuple[Offered, ToolDefinition]]] | None = None

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def label(self) -> str:
        return f"ToolregToolset({self.bridge.label})"

    def _definition(self, offered: Offered) -> ToolDefinition:
        tool = offered.tool
        unapproved = tool.needs_confirmation and self.bridge.deferred
        return ToolDefinition(
            name=offered.name,
            description=offered.description or None,
            parameters_json_schema=offered.parameters,
            strict=offered.strict,
            kind="unapproved" if unapproved else "function",
            defer_loading=tool.defer_loading,
            metadata={
                "toolreg": {
                    "read_only": tool.read_only,
                    "destructive": tool.destructive,
                    "idempotent": tool.idempotent,
                    "needs_confirmation": tool.needs_confirmation,
                    "tags": sorted(tool.tags),
                }
            },
        )

    def _tool_definitions(self) -> list[tuple[Offered, ToolDefinition]]:
        offered = self.bridge.offered()
        cached = self._definitions
        if cached is None or cached[0] is not offered:
            made = [(o, self._definition(o)) for o in offered]
            cached = self._definitions = (offered, made)
        return cached[1]

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        default = ctx.max_retries if self.max_retries is None else self.max_retries
        dispatcher = self.bridge.toolset.dispatcher
        deps = self.context(ctx)
        found: dict[str, ToolsetTool[Any]] = {}
        for offered, definition in self._tool_definitions():
            retries = offered.tool.retries
            found[offered.name] = ToolsetTool(
                toolset=self,
                tool_def=definition,
                max_retries=default if retries is None else retries,
                args_validator=_Arguments(dispatcher, offered.name, deps),
            )
        return found

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        approved = ctx.tool_call_approved
        if self.bridge.deferred and not approved:
            found = self.bridge.toolset.get(name)
            if found is not None and found.needs_confirmation:
                raise ApprovalRequired
        result = await self.bridge.run(
            name,
            tool_args,
            context=self.context(ctx),
            call_id=ctx.tool_call_id,
            approved=approved and self.bridge.deferred,
        )
        if not result.ok:
            raise _failure(result)
        return result.content
