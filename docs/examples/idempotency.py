"""Idempotency keys: one per call, the same whenever the same call runs again."""

from typing import Any

from toolreg import Conversation, ToolContext, ToolRegistry, idempotency_key
from toolreg.testing import ScriptedServer, text, tool_call

registry = ToolRegistry()
charged: dict[str, int] = {}  # a payment API that deduplicates by key


@registry.register_tool(destructive=True)
def charge(amount: int, ctx: ToolContext[Any]) -> str:
    """Charge the customer's card."""
    key = ctx.idempotency_key or "no key"
    charged.setdefault(key, amount)  # a second run with the same key charges nothing more
    return f"charged {amount}"


# dispatch from a loop of your own: give the key
result = registry.dispatch_tool(
    "charge", {"amount": 5}, idempotency_key="order-7", confirm=lambda t, a: True
)
assert (result.idempotency_key, result.outcome) == ("order-7", "completed")

# a conversation gives every call one; a paused call keeps it, here and in another process
with ScriptedServer([tool_call("charge", amount=20), text("Charged 20.")]) as model:
    chat = Conversation(model.client(), "scripted-model", registry=registry, confirm="defer")
    chat.send("Charge 20")
    pending = chat.pending[0]
    state = chat.export_state()  # saved somewhere; resumed later, elsewhere
    later = Conversation.from_state(state, model.client(), registry=registry)
    reply = later.resume({pending.call_id: True})
print(pending.idempotency_key)  # e.g. 3a641edd-360b-8a77-8245-9d9a465348c0
assert reply.tool_results[0].idempotency_key == pending.idempotency_key
assert charged[pending.idempotency_key] == 20

# the one derivation, for a replay or a loop of your own
key = idempotency_key("chat-42", "turn-1", "call_1", "charge", '{"amount": 5}')
assert key == idempotency_key("chat-42", "turn-1", "call_1", "charge", {"amount": 5})
