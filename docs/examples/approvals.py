"""Approvals that outlive a request: pause, store the state as JSON, resume elsewhere."""

import json
import tempfile
from pathlib import Path

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

payments = ToolRegistry()


@payments.register_tool(destructive=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order. Use it when the customer asks for their money back."""
    return f"refunded {amount:.2f} on {order_id}"


saved = Path(tempfile.mkdtemp()) / "pending.json"
with ScriptedServer([tool_call("refund", order_id="A1", amount="20"), text("Done.")]) as server:
    # request 1: the turn stops before the refund, and the state goes to storage
    chat = Conversation(server.client(), "any-model", registry=payments, confirm="defer")
    reply = chat.send("Refund order A1, please.")
    print(reply.stop_reason, reply.pending)
    # approval_required [PendingCall(call_id='call_1', tool_name='refund', arguments={...})]
    saved.write_text(json.dumps(chat.export_state()))

    # request 2, perhaps in another process: a person approved call_1
    state = json.loads(saved.read_text())
    chat = Conversation.from_state(state, server.client(), registry=payments)
    reply = chat.resume({"call_1": True})
    print(reply.text, reply.tool_results[0].content)  # Done. refunded 20.00 on A1
assert reply.tool_results[0].content == "refunded 20.00 on A1"
