"""A conversation kept in a state store: each request builds a new Conversation."""

import secrets
import tempfile
from pathlib import Path

from toolreg import Conversation, StateConflictError, ToolRegistry
from toolreg.stores import SQLiteStore
from toolreg.testing import ScriptedServer, text, tool_call

payments = ToolRegistry()


@payments.register_tool(destructive=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order. Use it when the customer asks for their money back."""
    return f"refunded {amount:.2f} on {order_id}"


store = SQLiteStore(Path(tempfile.mkdtemp()) / "conversations.db")
kept = {"state_store": store, "conversation_id": "chat-42", "key": secrets.token_bytes(32)}
with ScriptedServer([tool_call("refund", order_id="A2", amount="5"), text("Refunded.")]) as server:

    def conversation() -> Conversation:  # what each request does
        return Conversation(
            server.client(), "any-model", registry=payments, confirm="defer", **kept
        )

    shown = conversation().send("Refund order A2, please.").pending[0]  # request 1
    print(conversation().resume({shown.digest: True}).text)  # request 2: Refunded.
    try:
        conversation().resume({shown.digest: True})  # a double click, or another server
    except StateConflictError as err:
        print(err)  # conversation 'chat-42' has no call waiting for approval ...
    else:
        raise AssertionError("an approval resumed twice")
