"""A conversation over a toolset: two registries composed, one of them prefixed, and a view
that keeps the admin tools away from the model."""

from toolreg import Conversation, ToolRegistry, combined, filtered, prefixed
from toolreg.testing import ScriptedServer, text, tool_call

billing = ToolRegistry()


@billing.register_tool(read_only=True)
def balance(customer: str) -> float:
    """The open balance of a customer, in euros."""
    return 42.0


@billing.register_tool(tags={"admin"})
def write_off(customer: str) -> str:
    """Write a customer's balance off."""
    return "written off"


support = ToolRegistry()


@support.register_tool
def open_ticket(summary: str) -> str:
    """Open a support ticket."""
    return "T-1"


tools = combined(
    prefixed(filtered(billing, lambda tool: "admin" not in tool.tags), "billing"), support
)
with ScriptedServer([tool_call("billing_balance", customer="ACME"), text("42 €.")]) as server:
    reply = Conversation(server.client(), "any-model", registry=tools).send("ACME's balance?")
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]

assert offered == ["billing_balance", "open_ticket"]
assert reply.tool_results[0].content == "42.0"
print(reply.text)  # 42 €.
