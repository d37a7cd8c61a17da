"""A registry inside pydantic-ai's Agent: toolreg validates and runs each call, pydantic-ai
runs the loop, a destructive tool waits for pydantic-ai's approval."""

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from toolreg import ToolContext, ToolRegistry
from toolreg.adapters.pydantic_ai import ToolregToolset
from toolreg.testing import ScriptedServer, text, tool_call

registry = ToolRegistry()


@registry.register_tool(read_only=True)
def balance(customer: str, ctx: ToolContext[str]) -> float:
    """The open balance of a customer, in euros."""
    assert ctx.deps == "agent-7"  # the run's deps
    return 42.0


@registry.register_tool(destructive=True)
def write_off(customer: str, amount: float) -> str:
    """Write part of a customer's balance off."""
    return f"wrote off {amount} for {customer}"


script = [
    tool_call("balance", customer="ACME"),
    tool_call("write_off", customer="ACME", amount="42"),  # a string: toolreg coerces it
    text("Written off."),
]
with ScriptedServer(script) as server:
    provider = OpenAIProvider(openai_client=server.async_client())
    model = OpenAIChatModel("any-model", provider=provider)
    agent = Agent(
        model,
        toolsets=[ToolregToolset(registry)],
        deps_type=str,
        output_type=[str, DeferredToolRequests],
    )
    paused = agent.run_sync("Write ACME's balance off.", deps="agent-7")
    assert isinstance(paused.output, DeferredToolRequests)  # write_off waits for a person
    (call,) = paused.output.approvals
    print(call.tool_name, paused.output.validated_args[call.tool_call_id])
    done = agent.run_sync(
        message_history=paused.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={call.tool_call_id: True}),
        deps="agent-7",
    )
print(done.output)  # Written off.
