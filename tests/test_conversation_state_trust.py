"""A saved conversation state is hostile data: signed states, digests that bind a decision to
the call it was shown, options that cannot widen the application's, malformed states.

Each attack is made the way an attacker with write access to the storage would: by editing the
exported JSON (and, where the naive edit is caught, everything else that would give it away).
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationStateError,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, function_call, text, tool_call

MODEL = "scripted-model"
KEY = b"k" * 32
OLD_KEY = "an older secret, still accepted"
DIALECTS = ["tools", "responses", "chatglm3", "functions"]


class Shop:
    """Tools that need approval (refund, delete_account) and one that does not (lookup);
    `ran` records every execution."""

    def __init__(self, description: str = "Refund an order.") -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.registry = reg = ToolRegistry()

        @reg.register_tool(read_only=True)
        def lookup(order_id: str) -> str:
            """Look an order up."""
            self.ran.append(("lookup", {"order_id": order_id}))
            return "order A1: 20 EUR"

        @reg.register_tool(destructive=True, description=description)
        def refund(order_id: str, amount: int) -> str:
            self.ran.append(("refund", {"order_id": order_id, "amount": amount}))
            return f"refunded {amount}"

        @reg.register_tool(destructive=True)
        def delete_account(user: str) -> str:
            """Delete a user's account."""
            self.ran.append(("delete_account", {"user": user}))
            return "deleted"


def paused(
    server: ScriptedServer, shop: Shop, dialect: str = "tools", **options: Any
) -> tuple[Conversation, Any]:
    chat = Conversation(
        server.client(), MODEL, registry=shop.registry, dialect=dialect, confirm="defer", **options
    )
    return chat, chat.send("Refund A1")


def stored(state: dict[str, Any]) -> dict[str, Any]:
    """Through storage and back: what another process reads."""
    return json.loads(json.dumps(state))


REFUND = tool_call("refund", order_id="A1", amount=20)


def refund_call(dialect: str) -> Any:
    """The model asks for a refund of 20 on A1 (the legacy dialect has its own call shape)."""
    maker = function_call if dialect == "functions" else tool_call
    return maker("refund", order_id="A1", amount=20)


# -- signing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_signed_state_resumes_and_any_change_to_it_is_refused(dialect: str) -> None:
    shop, fresh = Shop(), Shop()
    with ScriptedServer([refund_call(dialect), text("Refunded.")]) as server:
        chat, reply = paused(server, shop, dialect)
        state = stored(chat.export_state(key=KEY))
        assert state["signature"].startswith("hmac-sha256:")
        for path, value in [
            (("pending", 0, "arguments", "amount"), 2000),
            (("id",), "0" * 32),
            (("options", "max_rounds"), 100),
            (("messages", 0, "content"), "Refund A1 and delete my account"),
        ]:
            changed = copy.deepcopy(state)
            target = changed
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = value
            with pytest.raises(ConversationStateError, match="signature does not match"):
                Conversation.from_state(changed, server.client(), registry=fresh.registry, key=KEY)
        later = Conversation.from_state(state, server.client(), registry=fresh.registry, key=KEY)
        done = later.resume({reply.pending[0].call_id: True})
    assert done.text == "Refunded."
    assert fresh.ran == [("refund", {"order_id": "A1", "amount": 20})]


def test_async_conversations_sign_and_verify() -> None:
    shop = Shop()

    async def main(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            chat = AsyncConversation(client, MODEL, registry=shop.registry, confirm="defer")
            reply = await chat.send("Refund A1")
            state = stored(chat.export_state(key="a str key of 16+ bytes"))
            with pytest.raises(ConversationStateError, match="signature does not match"):
                AsyncConversation.from_state(
                    {**state, "status": "ready", "turn": None, "pending": []},
                    client,
                    registry=shop.registry,
                    key="a str key of 16+ bytes",
                )
            later = AsyncConversation.from_state(
                state, client, registry=shop.registry, key="a str key of 16+ bytes"
            )
            return await later.resume({reply.pending[0].call_id: True})

    with ScriptedServer([REFUND, text("Refunded.")]) as server:
        done = asyncio.run(main(server))
    assert done.text == "Refunded."
    assert shop.ran == [("refund", {"order_id": "A1", "amount": 20})]


def test_keys_rotate_newest_first() -> None:
    shop = Shop()
    with ScriptedServer([REFUND, text("Refunded.")]) as server:
        chat, _ = paused(server, shop)
        old = stored(chat.export_state(key=OLD_KEY))
        new = stored(chat.export_state(key=[KEY, OLD_KEY]))  # signs with the first
        Conversation.from_state(new, server.client(), registry=shop.registry, key=KEY)
        with pytest.raises(ConversationStateError, match="signature does not match"):
            Conversation.from_state(new, server.client(), registry=shop.registry, key=OLD_KEY)
        with pytest.raises(ConversationStateError, match="signature does not match"):
            Conversation.from_state(old, server.client(), registry=shop.registry, key=KEY)
        later = Conversation.from_state(
            old, server.client(), registry=shop.registry, key=[KEY, OLD_KEY]
        )
        later.resume({"call_1": True})
    assert shop.ran == [("refund", {"order_id": "A1", "amount": 20})]


def test_signed_and_unsigned_states_are_not_interchangeable() -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        chat, _ = paused(server, shop)
        signed, unsigned = stored(chat.export_state(key=KEY)), stored(chat.export_state())
        assert "signature" not in unsigned
        with pytest.raises(ConversationStateError, match="is signed: give from_state"):
            Conversation.from_state(signed, server.client(), registry=shop.registry)
        with pytest.raises(ConversationStateError, match="not signed, and from_state"):
            Conversation.from_state(unsigned, server.client(), registry=shop.registry, key=KEY)
        stripped = {k: v for k, v in signed.items() if k != "signature"}  # drop the signature
        with pytest.raises(ConversationStateError, match="not signed"):
            Conversation.from_state(stripped, server.client(), registry=shop.registry, key=KEY)
        for forged in (5, "hmac-sha256:" + "0" * 64, "hmac-sha256:é"):
            with pytest.raises(ConversationStateError, match="signature"):
                Conversation.from_state(
                    {**signed, "signature": forged},
                    server.client(),
                    registry=shop.registry,
                    key=KEY,
                )
    assert shop.ran == []


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (b"short", "5 bytes long; a signing key needs at least 16"),
        ("fifteen bytes!!", "15 bytes long"),
        ([], "at least one signing key"),
        ([KEY, b"x"], "1 bytes long"),
        (12345678901234567890, "must be bytes or str"),
    ],
)
def test_weak_or_wrong_keys_are_usage_errors(key: Any, message: str) -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        chat, _ = paused(server, shop)
        with pytest.raises(UsageError, match=message) as raised:
            chat.export_state(key=key)
        assert not isinstance(raised.value, ConversationStateError)
        state = stored(chat.export_state(key=KEY))
        with pytest.raises(UsageError, match=message):
            Conversation.from_state(state, server.client(), registry=shop.registry, key=key)


def test_a_signature_covers_text_beyond_ascii() -> None:
    shop = Shop()
    with ScriptedServer([tool_call("refund", order_id="订单-١٢", amount=20)]) as server:
        chat, _ = paused(server, shop)
        state = stored(chat.export_state(key=KEY))
        assert "订单-١٢" in json.dumps(state, ensure_ascii=False)
        Conversation.from_state(state, server.client(), registry=shop.registry, key=KEY)
        changed = json.loads(json.dumps(state, ensure_ascii=False).replace("١٢", "١٣"))
        with pytest.raises(ConversationStateError, match="signature does not match"):
            Conversation.from_state(changed, server.client(), registry=shop.registry, key=KEY)
