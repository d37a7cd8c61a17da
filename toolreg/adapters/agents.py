"""A toolreg toolset as OpenAI Agents SDK function tools, and back (the `agents` extra).

```python
from agents import Agent, Runner
from toolreg.adapters.agents import function_tools

agent = Agent(name="helper", tools=function_tools(registry))
await Runner.run(agent, "...", context=user)  # each call's ToolContext.deps is `user`
```

The Agents SDK runs the loop; toolreg runs each call. How the two meet:

- **Definitions**: each tool's name, description and JSON Schema as `get_tools()` exports
  them; `strict_json_schema` is the tool's own `strict=` (toolreg's strict schema when it
  is), `defer_loading` the SDK's own (the Responses API's tool search loads the tool).
- **Calls**: the SDK hands the model's arguments over as JSON text, and toolreg's
  dispatch does everything from there: decoding with its limits, validation, safe
  coercion, context injection, confirmation, the time limit, the result filter and cut.
- **Errors**: every failed call is answered with toolreg's message as the tool's output,
  not raised: the SDK's own convention for a function tool (its default failure handler
  answers the model with text too; a raised exception would end the run). A
  `MissingContextError`, the application's mistake, is raised.
- **Approvals**: a tool that needs confirmation gets `needs_approval=True`: the run stops
  with the SDK's interruptions, and toolreg runs the call once the application approves
  it (`state.approve(...)`); a rejected call never reaches toolreg. `confirm=` a function
  instead asks it inline, toolreg's way.
- **Context**: the call's `ToolContext.deps` is the run's context
  (`Runner.run(..., context=...)`); `context=` a function of the SDK's `ToolContext`
  chooses something else.

`from_function_tool(tool)` is the reverse: an SDK `FunctionTool` as a toolreg `Tool`,
its JSON Schema checked as untrusted input, its calls dispatched by toolreg.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents import FunctionTool
from agents.tool_context import ToolContext as AgentsToolContext

from ..errors import UsageError
from ..params import ToolContext
from ..tool import Tool
from .base import Approvals, Bridge, Offered, checked_context, context_parameter, schema_of

__all__ = ["from_function_tool", "function_tools"]


def _run_context(ctx: AgentsToolContext[Any]) -> Any:
    return ctx.context


def function_tools(
    toolset: object,
    *,
    context: Callable[[AgentsToolContext[Any]], Any] | None = None,
    confirm: Approvals = "defer",
) -> list[FunctionTool]:
    """The tools of `toolset` (a `ToolRegistry`, a `Mount`, a view) as Agents SDK
    `FunctionTool`s, for `Agent(tools=[...])`.

    The list is made now: a tool registered later is not in it (make the list again).

    Args:
        toolset: the tools.
        context: a function of the SDK's `ToolContext` that returns what a call's
            `ToolContext.deps` gets; by default the run's context (`ctx.context`).
        confirm: how a tool that needs confirmation is confirmed: `"defer"` (the default),
            by the SDK's `needs_approval`; a function `(tool, arguments) -> bool`, asked
            by toolreg before the call; None, such calls are refused.

    Raises:
        UsageError: `toolset` is not a toolset, or `context` / `confirm` is not one of the
            above.
        ToolDefinitionError: a tool's name is not valid for OpenAI's function tools.
    """
    where = "function_tools()"
    bridge = Bridge(toolset, confirm=confirm, where=where)
    deps_of = checked_context(context, where) or _run_context
    return [_function_tool(bridge, offered, deps_of) for offered in bridge.offered()]


def _function_tool(
    bridge: Bridge, offered: Offered, deps_of: Callable[[AgentsToolContext[Any]], Any]
) -> FunctionTool:
    made: FunctionTool

    async def invoke(ctx: AgentsToolContext[Any], arguments: str) -> str:
        result = await bridge.run(
            offered.name,
            arguments,
            context=deps_of(ctx),
            call_id=ctx.tool_call_id,
            # the SDK invokes a tool whose needs_approval is True only once the call is
            # approved; read when the call runs, so a tool changed since is asked again
            approved=bridge.deferred and made.needs_approval is True,
        )
        return result.content

    made = FunctionTool(
        name=offered.name,
        description=offered.description,
        params_json_schema=offered.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=offered.strict,
        needs_approval=offered.tool.needs_confirmation and bridge.deferred,
        defer_loading=offered.tool.defer_loading,
    )
    return made


def from_function_tool(tool: FunctionTool, **options: Any) -> Tool:
    """An Agents SDK `FunctionTool` as a toolreg `Tool`: `registry.add(from_function_tool(t))`.

    Its name, description and JSON Schema are read from the tool; the schema is checked as
    untrusted input (bounded size, depth and patterns, as a mounted server's). A call is
    validated by toolreg, then handed to the tool's `on_invoke_tool` with an SDK
    `ToolContext` whose `context` is the call's `ToolContext.deps`; what it returns is the
    result (its errors are redacted as any tool's).

    Args:
        tool: the SDK's function tool.
        options: toolreg's tool options (`read_only=True`, `timeout=5`, `tags=[...]`...).

    Raises:
        ToolDefinitionError: the schema is refused, or an option is wrong.
        UsageError: `tool` is not a `FunctionTool`.
    """
    if not isinstance(tool, FunctionTool):
        raise UsageError(
            f"from_function_tool() takes an agents FunctionTool, not {type(tool).__name__}"
        )
    owner = f"agents FunctionTool {tool.name!r}"
    schema = schema_of(tool.params_json_schema, owner=owner)
    parameter = context_parameter(schema)
    invoke_tool = tool.on_invoke_tool

    async def invoke(**arguments: Any) -> Any:
        ctx: ToolContext[Any] = arguments.pop(parameter)
        text = json.dumps(arguments, ensure_ascii=False)
        sdk_context = AgentsToolContext(
            context=ctx.deps,
            tool_name=tool.name,
            tool_call_id=ctx.call_id or "",
            tool_arguments=text,
        )
        return await invoke_tool(sdk_context, text)

    invoke.__name__ = invoke.__qualname__ = f"agents:{tool.name}"
    return Tool.from_schema(
        tool.name,
        schema,
        invoke,
        description=tool.description or "",
        context_parameter=parameter,
        untrusted=True,
        **options,
    )
