"""Guardrails: a tool's own input check, and a conversation's check on every result."""

from toolreg import Conversation, GuardrailInput, GuardrailOutput, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

bank = ToolRegistry()


def at_most_100(event: GuardrailInput) -> str | None:
    """An input guardrail: None allows the call, a message refuses it."""
    if event.arguments["amount"] > 100:
        return f"Refused: {event.arguments['amount']} is over the limit of 100."
    return None


@bank.register_tool(input_guardrails=at_most_100)
def pay(amount: int) -> str:
    """Pay an amount to the user's landlord. Use it when the user asks to pay rent."""
    return f"paid {amount}"


@bank.register_tool(read_only=True)
def read_note(key: str) -> str:
    """Read one of the user's notes. Use it when the user asks what a note says."""
    return "wifi: password=hunter2" if key == "wifi" else "nothing"


def no_passwords(event: GuardrailOutput) -> str | None:
    """An output guardrail: the model reads the message instead of the result."""
    if "password" in event.result.content:
        return "The result was withheld: it holds a password."
    return None


script = [tool_call("pay", amount=500), tool_call("read_note", key="wifi"), text("Done.")]
with ScriptedServer(script) as model:
    chat = Conversation(
        model.client(), "scripted-model", registry=bank, output_guardrails=no_passwords
    )
    reply = chat.send("Pay 500, then tell me the wifi note.")
refused, withheld = reply.tool_results
print(refused.error_kind, refused.content)  # rejected Refused: 500 is over the limit of 100.
print(withheld.error_kind, withheld.content)  # rejected The result was withheld: ...
assert [r.error_kind for r in reply.tool_results] == ["rejected", "rejected"]
assert reply.text == "Done."
