"""A toolreg toolset as LangChain tools, and back (the `langchain` extra).

```python
from toolreg.adapters.langchain import langchain_tools

tools = langchain_tools(registry, context=lambda config: config["configurable"]["user"])
model = ChatOpenAI(...).bind_tools(tools)
by_name = {tool.name: tool for tool in tools}
for call in model.invoke(messages).tool_calls:
    messages.append(by_name[call["name"]].invoke(call))  # a ToolMessage
```

LangChain runs the loop (a chat model's `bind_tools`, an agent of `langchain` or
LangGraph); toolreg runs each call. How the two meet:

- **Definitions**: each tool is a `BaseTool` whose `args_schema` is the JSON Schema
  `get_tools()` exports, so `bind_tools` sends the model exactly that.
- **Calls**: LangChain does not validate a JSON-Schema `args_schema`; toolreg's dispatch
  does everything: validation, safe coercion, context injection, confirmation, the time
  limit, the result filter and cut. A tool works from sync code (`invoke`) and async code
  (`ainvoke`).
- **Errors**: a failed call is a `ToolException` with toolreg's message, which the tool
  handles (`handle_tool_error=True`): the model reads the message in a `ToolMessage` with
  `status="error"`, LangChain's own way of answering a model with an error; nothing is
  raised into the loop. A `MissingContextError`, the application's mistake, is raised.
  Invalid JSON never reaches a tool: the chat model puts such a call in
  `invalid_tool_calls`.
- **Approvals**: langchain-core has no approval flow (LangChain's agents have a
  human-in-the-loop middleware, configured by tool name, outside the tool). A tool that
  needs confirmation asks `confirm=` (a function `(tool, arguments) -> bool`) before it
  runs; without one it is refused, as `dispatch_tool` without `confirm=` refuses it.
- **Context**: `context=` a function of the call's `RunnableConfig` gives the call's
  `ToolContext.deps`; a toolset with a tool that needs a context and no `context=` is
  refused when the tools are made.

`from_langchain(tool)` is the reverse: a LangChain tool as a toolreg `Tool`, its JSON
Schema checked as untrusted input, its calls dispatched by toolreg.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from ..errors import ToolError, UsageError
from ..params import ToolContext
from ..result import ToolResult
from ..tool import Tool
from .base import Approvals, Bridge, Offered, checked_context, context_parameter, schema_of

__all__ = ["ToolregTool", "from_langchain", "langchain_tools"]


class ToolregTool(BaseTool):
    """One toolreg tool as a LangChain `BaseTool` (made by `langchain_tools`)."""

    handle_tool_error: bool = True
    """toolreg's message for a failed call goes to the model (`status="error"`)."""

    _bridge: Bridge = PrivateAttr()
    _context: Callable[[RunnableConfig], Any] | None = PrivateAttr(default=None)

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # The model's arguments go to toolreg's dispatch whole, unparsed and under names of
        # toolreg's own: an argument named like a keyword of LangChain's cannot collide.
        return (), {"arguments": tool_input, "call_id": tool_call_id}

    def _deps(self, config: RunnableConfig) -> Any:
        return None if self._context is None else self._context(config)

    def _answer(self, result: ToolResult) -> str:
        if not result.ok:
            raise ToolException(result.content)
        return result.content

    def _run(
        self, *, arguments: str | dict[str, Any], call_id: str | None, config: RunnableConfig
    ) -> str:
        result = self._bridge.run_sync(
            self.name, arguments, context=self._deps(config), call_id=call_id
        )
        return self._answer(result)

    async def _arun(
        self, *, arguments: str | dict[str, Any], call_id: str | None, config: RunnableConfig
    ) -> str:
        result = await self._bridge.run(
            self.name, arguments, context=self._deps(config), call_id=call_id
        )
        return self._answer(result)


def langchain_tools(
    toolset: object,
    *,
    context: Callable[[RunnableConfig], Any] | None = None,
    confirm: Approvals = None,
) -> list[ToolregTool]:
    """The tools of `toolset` (a `ToolRegistry`, a `Mount`, a view) as LangChain tools,
    for `bind_tools(...)` or an agent.

    The list is made now: a tool registered later is not in it (make the list again).

    Args:
        toolset: the tools.
        context: a function of the call's `RunnableConfig` that returns what its
            `ToolContext.deps` gets (e.g. `lambda config: config["configurable"]["user"]`).
        confirm: a function `(tool, arguments) -> bool` (it may be async) asked before a
            tool that needs confirmation runs; None (the default): such calls are refused.

    Raises:
        UsageError: `toolset` is not a toolset; `context` or `confirm` is not a function
            (`"defer"`: LangChain tools have no approval flow); a tool needs a context and
            `context` is None.
        ToolDefinitionError: a tool's name is not valid for OpenAI's function tools.
    """
    where = "langchain_tools()"
    bridge = Bridge(toolset, confirm=confirm, where=where, defer=False)
    deps_of = checked_context(context, where)
    offered = bridge.offered()
    if deps_of is None:
        needy = [o.name for o in offered if o.tool.plan.needs_context]
        if needy:
            raise UsageError(
                f"{where}: {', '.join(map(repr, needy))} need a context and none would be "
                "built: pass context=lambda config: ... (the deps, from the call's "
                "RunnableConfig)"
            )
    return [_tool(bridge, o, deps_of) for o in offered]


def _tool(
    bridge: Bridge, offered: Offered, deps_of: Callable[[RunnableConfig], Any] | None
) -> ToolregTool:
    made = ToolregTool(
        name=offered.name,
        description=offered.description,
        args_schema=offered.parameters,
        metadata={"toolreg": {"read_only": offered.tool.read_only, "strict": offered.strict}},
    )
    made._bridge = bridge
    made._context = deps_of
    return made


def from_langchain(tool: BaseTool, **options: Any) -> Tool:
    """A LangChain tool as a toolreg `Tool`: `registry.add(from_langchain(tool))`.

    Its name, description and JSON Schema are what `bind_tools` would send (injected
    arguments left out); the schema is checked as untrusted input (bounded size, depth and
    patterns, as a mounted server's). A call is validated by toolreg, then run by the tool
    (`ainvoke` with the call as a LangChain `ToolCall`, so its injected call id works).
    A `ToolException`'s message, or a `ToolMessage` with `status="error"`, is the tool's
    own words for the model (a `ToolError`); any other exception is redacted as any
    tool's.

    Args:
        tool: the LangChain tool (`@tool`, `StructuredTool`, a `BaseTool` of your own).
        options: toolreg's tool options (`read_only=True`, `timeout=5`, `tags=[...]`...).

    Raises:
        ToolDefinitionError: the schema is refused, or an option is wrong.
        UsageError: `tool` is not a LangChain `BaseTool`.
    """
    if not isinstance(tool, BaseTool):
        raise UsageError(f"from_langchain() takes a LangChain BaseTool, not {type(tool).__name__}")
    owner = f"LangChain tool {tool.name!r}"
    function = convert_to_openai_tool(tool)["function"]
    schema = schema_of(function.get("parameters", {"type": "object"}), owner=owner)
    parameter = context_parameter(schema)

    async def invoke(**arguments: Any) -> Any:
        ctx: ToolContext[Any] = arguments.pop(parameter)
        call: Any = arguments
        if ctx.call_id is not None:  # a LangChain ToolCall: the tool may inject its id
            call = {"type": "tool_call", "name": tool.name, "args": arguments, "id": ctx.call_id}
        try:
            answer = await tool.ainvoke(call)
        except ToolException as exc:
            raise ToolError(str(exc)) from exc
        if not isinstance(answer, ToolMessage):
            return answer
        content = answer.content if isinstance(answer.content, str) else answer.text
        if answer.status == "error":
            raise ToolError(content)
        return content

    invoke.__name__ = invoke.__qualname__ = f"langchain:{tool.name}"
    return Tool.from_schema(
        tool.name,
        schema,
        invoke,
        description=str(function.get("description") or ""),
        context_parameter=parameter,
        untrusted=True,
        **options,
    )
