"""A registry as LangChain tools, and a LangChain tool inside a registry.

The tools go to any LangChain chat model's `bind_tools` or agent; here the definitions
go to a model with the `openai` client, and each call comes back as a LangChain
`ToolMessage` (status "error" with toolreg's message for a bad call)."""

import json

from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from toolreg import ToolContext, ToolRegistry
from toolreg.adapters.langchain import from_langchain, langchain_tools
from toolreg.testing import ScriptedServer, tool_call

registry = ToolRegistry()


@registry.register_tool(read_only=True)
def balance(customer: str, ctx: ToolContext[str]) -> float:
    """The open balance of a customer, in euros."""
    assert ctx.deps == "agent-7"
    return 42.0


tools = langchain_tools(registry, context=lambda config: config["configurable"]["user"])
config = {"configurable": {"user": "agent-7"}}

with ScriptedServer([tool_call("balance", customer=["ACME"])]) as server:
    completion = server.client().chat.completions.create(
        model="any-model",
        messages=[{"role": "user", "content": "ACME's balance?"}],
        tools=[convert_to_openai_tool(t) for t in tools],
    )
(call,) = completion.choices[0].message.tool_calls
answer = tools[0].invoke(
    {
        "type": "tool_call",
        "name": call.function.name,
        "args": json.loads(call.function.arguments),
        "id": call.id,
    },
    config=config,
)
print(answer.status, answer.content)  # error Invalid arguments for tool 'balance': ...
print(tools[0].invoke({"customer": "ACME"}, config=config))  # 42.0


# The other way: a LangChain tool registered in a toolreg registry. Its schema is checked
# as untrusted input; toolreg validates and coerces each call before the tool runs.
@tool
def convert(amount: float, currency: str) -> str:
    """Convert euros to another currency."""
    return f"{amount * 1.1:.2f} {currency}"


registry.add(from_langchain(convert, read_only=True))
print(registry.dispatch_tool("convert", '{"amount": "42", "currency": "USD"}').content)
