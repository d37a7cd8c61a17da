"""A signed state: any change after export_state() is refused; keys rotate."""

import json
import secrets

from toolreg import Conversation, ConversationStateError, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

payments = ToolRegistry()


@payments.register_tool(destructive=True)
def refund(order_id: str, amount: float) -> str:
    """Refund an order. Use it when the customer asks for their money back."""
    return f"refunded {amount:.2f} on {order_id}"


new_key, old_key = secrets.token_bytes(32), secrets.token_bytes(32)
with ScriptedServer([tool_call("refund", order_id="A1", amount="20"), text("Done.")]) as server:
    chat = Conversation(server.client(), "any-model", registry=payments, confirm="defer")
    shown = chat.send("Refund order A1, please.").pending[0]  # what the person approves
    signed = json.loads(json.dumps(chat.export_state(key=old_key)))

    forged = json.loads(json.dumps(signed))
    forged["pending"][0]["arguments"]["amount"] = 2000
    try:
        Conversation.from_state(forged, server.client(), registry=payments, key=[new_key, old_key])
    except ConversationStateError as err:
        print(err)  # ...signature does not match: it was changed after export_state()...
    else:
        raise AssertionError("a forged state was accepted")

    # after a rotation: sign with the new key, still accept the old one
    chat = Conversation.from_state(
        signed, server.client(), registry=payments, key=[new_key, old_key]
    )
    print(chat.resume({shown.digest: True}).text)  # Done.
