"""A registry as OpenAI Agents SDK function tools: the SDK's Runner runs the loop, toolreg
validates and runs each call; a bad call is answered with toolreg's message."""

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled

from toolreg import ToolContext, ToolRegistry
from toolreg.adapters.agents import function_tools
from toolreg.testing import ScriptedServer, text, tool_call

set_tracing_disabled(True)  # the SDK would send its traces to OpenAI

registry = ToolRegistry()


@registry.register_tool(read_only=True)
def balance(customer: str, ctx: ToolContext[dict]) -> float:
    """The open balance of a customer, in euros."""
    assert ctx.deps["user"] == "agent-7"  # the run's context
    return 42.0


async def main() -> None:
    script = [
        tool_call("balance", client="ACME"),  # a wrong argument name
        tool_call("balance", customer="ACME"),
        text("ACME owes 42 €."),
    ]
    with ScriptedServer(script) as server:
        async with server.async_client() as client:
            model = OpenAIChatCompletionsModel(model="any-model", openai_client=client)
            agent = Agent(name="billing", model=model, tools=function_tools(registry))
            result = await Runner.run(agent, "ACME's balance?", context={"user": "agent-7"})
        answers = [m["content"] for m in server.history(-1) if m["role"] == "tool"]
    print(answers[0])  # toolreg's message: what is missing, what is unexpected
    print(result.final_output)  # ACME owes 42 €.


asyncio.run(main())
