"""Durable turns on DBOS over SQLite: each model request and tool call a recorded step."""

import tempfile
from pathlib import Path

from toolreg import Conversation, ToolContext, ToolRegistry
from toolreg.durable import DurableTurns
from toolreg.durable.dbos import DBOSEngine
from toolreg.stores import SQLiteStore
from toolreg.testing import ScriptedServer, text, tool_call

tools = ToolRegistry()
charges: list[str] = []  # the key of each run of `charge`


@tools.register_tool
def charge(order: str, amount: int, ctx: ToolContext) -> str:
    """Charge a customer for an order."""
    charges.append(str(ctx.idempotency_key))  # pass it on to the payment provider
    return f"charged {amount} for {order}"


@tools.register_tool(destructive=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


folder = Path(tempfile.mkdtemp())
store = SQLiteStore(folder / "conversations.sqlite")  # the history, between turns
engine = DBOSEngine(f"sqlite:///{folder}/dbos.sqlite")  # PostgreSQL: postgresql://...
model = ScriptedServer(
    [
        tool_call("charge", order="A1", amount=5),
        text("Charged 5 for A1."),
        tool_call("refund", order="A1"),
        text("Refunded A1."),
    ]
)


def support(conversation_id: str) -> Conversation:
    """What cannot be recorded (the client, the tools, the store) is given again, in every
    process, for the conversation a turn belongs to."""
    return Conversation(
        model.client(),
        "any-model",
        registry=tools,
        state_store=store,
        conversation_id=conversation_id,
        context="support desk",  # what ctx.deps is: built again, like the client
        confirm="defer",  # a destructive call waits for a person, in the store
    )


with model:
    turns = DurableTurns(engine, "support", support)  # bound before launch: recovery finds it
    engine.launch()  # the turns this process left unfinished (it was killed) run on here
    try:
        reply = turns.send("chat-42", "Charge order A1", turn_id="req-1")
        print(reply.text, charges)  # Charged 5 for A1. ['...']

        # The same turn id again (a retried request): the recorded reply, nothing runs again.
        again = turns.send("chat-42", "Charge order A1", turn_id="req-1")
        assert again.text == reply.text
        assert len(charges) == 1
        assert len(model.requests) == 2

        # A turn that waits for approval ends; the call waits in the store, and the resume
        # (from any process) is a durable turn of its own that claims it once.
        paused = turns.send("chat-42", "Refund it", turn_id="req-2")
        print(paused.stop_reason, [p.call_id for p in paused.pending])  # approval_required
        done = turns.resume("chat-42", {paused.pending[0].call_id: True}, turn_id="req-3")
        print(done.text)  # Refunded A1.
        assert done.tool_results[0].content == "refunded A1"
    finally:
        engine.shutdown()
