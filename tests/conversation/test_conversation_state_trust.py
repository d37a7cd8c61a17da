"""A saved conversation state is hostile data: signed states, digests that bind a decision to
the call it was shown, options that cannot widen the application's, malformed states.

Each attack is made the way an attacker with write access to the storage would: by editing the
exported JSON (and, where the naive edit is caught, everything else that would give it away).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationStateError,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, call, function_call, text, tool_call, tool_calls

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
            return await later.resume({reply.pending[0].digest: True})

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


# -- digests: a decision applies to the call it was shown --------------------------------------


def forged_digest(pending: dict[str, Any]) -> str:
    """What an attacker recomputes after editing a pending call (the digest is no secret)."""
    bound = {k: pending[k] for k in ("call_id", "tool_name", "arguments", "tool")}
    text_ = json.dumps(bound, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text_.encode()).hexdigest()


def rewrite_call(state: dict[str, Any], name: str, arguments: dict[str, Any], tool: str) -> None:
    """Edit the paused call everywhere it appears, consistently: the pending entry (with a
    recomputed digest), the round and the assistant message in the history."""
    pending = state["pending"][0]
    pending.update(tool_name=name, arguments=arguments, tool=tool)
    pending["digest"] = forged_digest(pending)
    as_text = json.dumps(arguments)
    state["turn"]["round"]["calls"][0].update(name=name, arguments=as_text)
    state["messages"][-1]["tool_calls"][0]["function"] = {"name": name, "arguments": as_text}


def test_pending_calls_carry_a_digest_of_call_and_tool() -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        chat, reply = paused(server, shop)
        first, second = stored(chat.export_state()), stored(chat.export_state(key=KEY))
    shown = reply.pending[0]
    assert shown.digest.startswith("sha256:")
    assert len(shown.digest) == 71
    assert chat.pending[0].digest == shown.digest
    assert first["pending"][0]["digest"] == second["pending"][0]["digest"] == shown.digest
    assert forged_digest(first["pending"][0]) == shown.digest  # the documented definition
    assert "digest" not in repr(shown)


def test_edited_arguments_after_approval_are_refused() -> None:
    """The person approved refunding 20; the stored state now says 2000."""
    shop = Shop()
    with ScriptedServer([REFUND, text("Refunded.")]) as server:
        chat, reply = paused(server, shop)
        shown = reply.pending[0]  # what the person saw and approved
        state = stored(chat.export_state())

        naive = copy.deepcopy(state)
        naive["pending"][0]["arguments"]["amount"] = 2000
        with pytest.raises(ConversationStateError, match="does not match its digest"):
            Conversation.from_state(naive, server.client(), registry=shop.registry)
        naive["pending"][0]["digest"] = forged_digest(naive["pending"][0])
        with pytest.raises(ConversationStateError, match="other arguments than the model's"):
            Conversation.from_state(naive, server.client(), registry=shop.registry)

        thorough = copy.deepcopy(state)  # history, round and digest all agree on 2000
        rewrite_call(thorough, "refund", {"order_id": "A1", "amount": 2000}, shown_tool(state))
        later = Conversation.from_state(thorough, server.client(), registry=shop.registry)
        assert later.pending[0].arguments["amount"] == 2000
        with pytest.raises(ConversationStateError, match="no pending call has the digest"):
            later.resume({shown.digest: True})  # the decision names what was shown
        signed = stored(chat.export_state(key=KEY))
        rewrite_call(signed, "refund", {"order_id": "A1", "amount": 2000}, shown_tool(state))
        with pytest.raises(ConversationStateError, match="signature does not match"):
            Conversation.from_state(signed, server.client(), registry=shop.registry, key=KEY)
        Conversation.from_state(state, server.client(), registry=shop.registry).resume(
            {shown.digest: True}
        )
    assert shop.ran == [("refund", {"order_id": "A1", "amount": 20})]


def shown_tool(state: dict[str, Any]) -> str:
    return str(state["pending"][0]["tool"])


def test_a_swapped_tool_is_refused() -> None:
    """refund becomes delete_account, with the fingerprint copied from another state."""
    shop = Shop()
    script = [REFUND, tool_call("delete_account", user="bob")]
    with ScriptedServer(script) as server:
        chat, reply = paused(server, shop)
        state = stored(chat.export_state())
        other, _ = paused(server, shop)  # any state paused on delete_account
        delete_tool = shown_tool(stored(other.export_state()))

        naive = copy.deepcopy(state)
        naive["pending"][0]["tool_name"] = "delete_account"
        with pytest.raises(ConversationStateError, match="not the call of its round"):
            Conversation.from_state(naive, server.client(), registry=shop.registry)

        thorough = copy.deepcopy(state)
        rewrite_call(thorough, "delete_account", {"user": "bob"}, delete_tool)
        later = Conversation.from_state(thorough, server.client(), registry=shop.registry)
        with pytest.raises(ConversationStateError, match="no pending call has the digest"):
            later.resume({reply.pending[0].digest: True})
        signed = stored(chat.export_state(key=KEY))
        rewrite_call(signed, "delete_account", {"user": "bob"}, delete_tool)
        with pytest.raises(ConversationStateError, match="signature does not match"):
            Conversation.from_state(signed, server.client(), registry=shop.registry, key=KEY)
    assert shop.ran == []


def test_a_pending_call_the_model_never_made_is_refused() -> None:
    shop = Shop()
    with ScriptedServer([REFUND, tool_call("delete_account", user="bob")]) as server:
        chat, _ = paused(server, shop)
        state = stored(chat.export_state())
        other, _ = paused(server, shop)
        delete_tool = shown_tool(stored(other.export_state()))
        added = {"name": "delete_account", "arguments": '{"user": "bob"}', "call_id": "call_9"}
        state["turn"]["round"]["calls"].append(added)
        state["turn"]["round"]["waiting"].append(1)
        entry = {
            "call_id": "call_9",
            "tool_name": "delete_account",
            "arguments": {"user": "bob"},
            "tool": delete_tool,
        }
        state["pending"].append({**entry, "digest": forged_digest(entry)})
        with pytest.raises(ConversationStateError, match="not the calls of the last assistant"):
            Conversation.from_state(state, server.client(), registry=shop.registry)
    assert shop.ran == []


def test_two_pending_calls_with_one_id_are_refused() -> None:
    """One approval must not run two calls."""
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        chat, _ = paused(server, shop)
        state = stored(chat.export_state())
    state["turn"]["round"]["calls"].append(dict(state["turn"]["round"]["calls"][0]))
    state["turn"]["round"]["waiting"].append(1)
    state["pending"].append(dict(state["pending"][0]))
    calls = state["messages"][-1]["tool_calls"]
    calls.append(copy.deepcopy(calls[0]))
    with pytest.raises(ConversationStateError, match="two pending calls have the id 'call_1'"):
        Conversation.from_state(state, None, registry=shop.registry)
    state["turn"]["round"]["waiting"] = [0, 0]
    with pytest.raises(ConversationStateError, match="pending calls do not match its round"):
        Conversation.from_state(state, None, registry=shop.registry)
    assert shop.ran == []


@pytest.mark.parametrize(
    "change",
    ["description", "flag"],
)
def test_a_tool_whose_definition_changed_since_export_is_refused(change: str) -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        chat, _ = paused(server, shop)
        state = stored(chat.export_state(key=KEY))
    changed = Shop("Refund an order, and close the customer's account.")
    if change == "flag":
        changed = Shop()
        changed.registry.unregister("refund")

        @changed.registry.register_tool(
            destructive=True, timeout=600, description="Refund an order."
        )
        def refund(order_id: str, amount: int) -> str:
            changed.ran.append(("refund", {}))
            return "refunded"

    with pytest.raises(ConversationStateError, match="'refund' has changed its definition"):
        Conversation.from_state(state, None, registry=changed.registry, key=KEY)
    assert changed.ran == []


def test_decisions_by_digest() -> None:
    shop = Shop()
    both = tool_calls(call("refund", order_id="A1", amount=20), call("delete_account", user="bob"))
    with ScriptedServer([both, text("Done.")]) as server:
        chat, reply = paused(server, shop)
        refund_, delete = reply.pending
        with pytest.raises(UsageError, match="two decisions for 'call_1'"):
            chat.resume({refund_.digest: True, "call_1": True, delete.digest: False})
        with pytest.raises(UsageError, match="no decision for 'call_2'"):
            chat.resume({refund_.digest: True})
        with pytest.raises(ConversationStateError, match="no pending call has the digest"):
            chat.resume({refund_.digest: True, "sha256:" + "0" * 64: True})
        chat.resume({refund_.digest: True, "call_2": "not today"})  # ids and digests mix
    assert shop.ran == [("refund", {"order_id": "A1", "amount": 20})]


def test_a_decision_does_not_carry_over_to_another_states_call() -> None:
    """A replayed decision (a digest recorded for one paused call) approves nothing else,
    even where the model reused the call id."""
    shop = Shop()
    small = tool_call("refund", order_id="A1", amount=20, id="call_1")
    big = tool_call("refund", order_id="A1", amount=2000, id="call_1")
    with ScriptedServer([small, big]) as server:
        _, small_reply = paused(server, shop)
        chat, _ = paused(server, shop)
        assert chat.pending[0].call_id == small_reply.pending[0].call_id  # the model reused it
        with pytest.raises(ConversationStateError, match="no pending call has the digest"):
            chat.resume({small_reply.pending[0].digest: True})
    assert shop.ran == []


# -- options: a state never widens what the application allows -----------------------------


def between_turns(shop: Shop, **options: Any) -> dict[str, Any]:
    with ScriptedServer([text("Hello.")]) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry, **options)
        chat.send("hi")
        return stored(chat.export_state())


def test_a_saved_tool_filter_only_narrows_the_applications() -> None:
    shop = Shop()
    state = between_turns(shop, tools=["lookup"])
    app_filter = ["lookup", "refund"]
    later = Conversation.from_state(state, None, registry=shop.registry, tools=app_filter)
    assert later.offered_names() == ["lookup"]  # the saved filter narrows the app's
    widened = {**state, "options": {**state["options"], "tools": None}}
    later = Conversation.from_state(widened, None, registry=shop.registry, tools=app_filter)
    assert later.offered_names() == ["lookup", "refund"]  # None cannot widen the app's
    later = Conversation.from_state(widened, None, registry=shop.registry, tools="lookup")
    assert later.offered_names() == ["lookup"]
    with pytest.raises(ConversationStateError, match="not signed"):  # an app that signs
        Conversation.from_state(widened, None, registry=shop.registry, key=KEY)


def test_a_widened_filter_in_a_signed_state_is_refused() -> None:
    shop = Shop()
    with ScriptedServer([text("Hello.")]) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry, tools=["lookup"])
        chat.send("hi")
        state = stored(chat.export_state(key=KEY))
    state["options"]["tools"] = None
    with pytest.raises(ConversationStateError, match="signature does not match"):
        Conversation.from_state(state, None, registry=shop.registry, key=KEY)


@pytest.mark.parametrize(
    ("limit", "saved", "given", "kept"),
    [
        ("max_rounds", 2, 8, 2),
        ("max_rounds", 100, 4, 4),
        ("max_repeats", None, 3, 3),
        ("max_repeats", 2, None, 2),
        ("output_retries", 50, 1, 1),
    ],
)
def test_saved_limits_only_narrow(limit: str, saved: Any, given: Any, kept: Any) -> None:
    shop = Shop()
    state = between_turns(shop)
    state["options"][limit] = saved
    later = Conversation.from_state(state, None, registry=shop.registry, **{limit: given})
    assert later.export_state()["options"][limit] == kept


@pytest.mark.parametrize(
    "request_options",
    [
        {"confirm": None},
        {"tools": None},
        {"max_rounds": 99},
        {"registry": None},
        {"stream": True},
        {"previous_response_id": "resp_someone_elses"},
        {"messages": []},
    ],
)
def test_request_options_cannot_set_constructor_options(request_options: Any) -> None:
    shop = Shop()
    with ScriptedServer([REFUND, text("Refunded.")]) as server:
        chat, _ = paused(server, shop, tools=["lookup", "refund"], max_rounds=2)
        state = stored(chat.export_state())
        state["options"]["request_options"] = request_options
        with pytest.raises(ConversationStateError, match="which no request option may set"):
            Conversation.from_state(state, server.client(), registry=shop.registry)
    assert shop.ran == []


def test_request_options_are_kept_apart_from_constructor_options() -> None:
    shop = Shop()
    state = between_turns(shop, temperature=0, max_rounds=3)
    with ScriptedServer([text("Hi again.")]) as server:
        later = Conversation.from_state(
            state, server.client(), registry=shop.registry, top_p=0.5, max_rounds=2
        )
        later.send("again")
        body = server.requests[0]
    assert (body["temperature"], body["top_p"]) == (0, 0.5)
    assert "max_rounds" not in body
    options = later.export_state()["options"]
    assert options["max_rounds"] == 2
    assert options["request_options"] == {"temperature": 0, "top_p": 0.5}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_rounds", "lots"),
        ("max_rounds", True),
        ("max_rounds", -1),
        ("dialect", "nope"),
        ("dialect", 5),
        ("tools", ["ghost"]),
        ("tools", "lookup"),
        ("confirm", "ask"),
        ("confirm", False),
        ("state", "server"),
        ("final_call", "later"),
        ("max_repeats", 1),
        ("stream", "yes"),
    ],
)
def test_saved_options_are_checked_like_constructor_options(option: str, value: Any) -> None:
    shop = Shop()
    state = between_turns(shop)
    state["options"][option] = value
    with pytest.raises(ConversationStateError, match="its option"):
        Conversation.from_state(state, None, registry=shop.registry)


def test_the_applications_own_wrong_option_is_its_usage_error() -> None:
    shop = Shop()
    state = between_turns(shop)
    with pytest.raises(UsageError, match="max_rounds must be >= 0") as raised:
        Conversation.from_state(state, None, registry=shop.registry, max_rounds=-1)
    assert not isinstance(raised.value, ConversationStateError)
    with pytest.raises(UsageError, match="'ghost' is neither") as raised:
        Conversation.from_state(state, None, registry=shop.registry, tools=["ghost"])
    assert not isinstance(raised.value, ConversationStateError)


@pytest.mark.parametrize("missing", ["model", "request_options", "max_rounds"])
def test_a_state_with_options_missing_is_refused(missing: str) -> None:
    shop = Shop()
    state = between_turns(shop)
    del state["options"][missing]
    with pytest.raises(ConversationStateError, match="its options are not"):
        Conversation.from_state(state, None, registry=shop.registry)


# -- malformed states -------------------------------------------------------------------------


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.fixture(scope="module")
def saved_round() -> dict[str, Any]:
    """A paused round with one call done and one pending, through storage."""
    shop = Shop()
    both = tool_calls(call("lookup", order_id="A1"), call("refund", order_id="A1", amount="20"))
    with ScriptedServer([both]) as server:
        chat, reply = paused(server, shop)
        state = stored(chat.export_state())
    state["shown"] = reply.pending[0].digest  # taken out again by the tests
    return state


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("pending", 0, "arguments", "order_id"), deep(600), "nests more than 100 levels"),
        (("messages", 0, "content"), deep(100_000), "nests more than 100 levels"),
        (("messages", 0, "content"), "x" * (33 << 20), "larger than"),
        (("version",), True, "version True"),
        (("pending", 0, "arguments", "amount"), float("nan"), "not finite"),
        (("messages", 0, "role"), {"a": 1}, "no text 'role'"),
        (("messages", 1, "role"), "tool", "not the calls of the last assistant message"),
        (("messages", 1, "role"), "tools", "has the role"),
        (("messages", 1, "tool_calls"), "call", "'tool_calls' are not a list"),
        (("turn", "round", "done", 0, "call_id"), "call_9", "result 1 of its round is not"),
        (("turn", "round", "done", 0, "index"), 1, "result 2 of its round is not for call 2"),
        (("turn", "round", "done", 0, "index"), 7, "results do not match"),
        (("turn", "usage"), [], "no valid 'usage'"),
        (("pending", 0, "digest"), 5, "no valid 'digest'"),
        (("turn", "tool_rounds"), 2**70, "more tool rounds than model calls"),
        (("turn", "tool_rounds"), -1, "more tool rounds than model calls"),
        (("options", "max_rounds"), 0, "at least max_rounds=0"),
    ],
)
def test_malformed_states_are_state_errors(
    saved_round: dict[str, Any], path: tuple[Any, ...], value: Any, message: str
) -> None:
    state = copy.deepcopy(saved_round)
    del state["shown"]
    target = state
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(ConversationStateError, match=message):
        Conversation.from_state(state, None, registry=Shop().registry)


def test_a_state_holding_python_objects_is_refused(saved_round: dict[str, Any]) -> None:
    state = copy.deepcopy(saved_round)
    state["messages"][0]["content"] = object()
    with pytest.raises(ConversationStateError, match="not a JSON value"):
        Conversation.from_state(state, None, registry=Shop().registry)
    state["messages"][0] = {1: "user"}
    with pytest.raises(ConversationStateError, match="key that is not text"):
        Conversation.from_state(state, None, registry=Shop().registry)


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3) | st.just(2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "call_1", "refund", "delete_account", "tools", "sha256:0"]),
    st.builds(deep, st.just(600)),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["role", "a"]), st.sampled_from(["user", 1]), max_size=2),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _paths(v, (*prefix, i))
    return found


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_states_are_refused_or_resume_only_what_was_approved(
    saved_round: dict[str, Any], fuzz_server: ScriptedServer, data: Any
) -> None:
    """Mutations of a real state (a value replaced, a key or element dropped or doubled):
    only a ConversationStateError, or a resume that runs exactly the approved call."""
    state = copy.deepcopy(saved_round)
    shown = state.pop("shown")
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(state)[1:]))
        parent = state
        for step in path[:-1]:
            parent = parent[step]
        action = data.draw(st.sampled_from(["replace", "drop", "double"]))
        if action == "replace":
            parent[path[-1]] = data.draw(_VALUES)
        elif action == "drop":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        else:
            parent[path[-1]] = copy.deepcopy(parent)
    shop = Shop()
    fuzz_server.add(text("Done."))
    try:
        later = Conversation.from_state(state, fuzz_server.client(), registry=shop.registry)
        reply = later.resume({shown: True})
    except ConversationStateError:
        assert shop.ran == []
        return
    assert reply.stop_reason == "answer"
    refunds = [r for r in shop.ran if r[0] != "lookup"]  # lookup needs no approval
    assert refunds in ([], [("refund", {"order_id": "A1", "amount": 20})])


@pytest.fixture(scope="module")
def fuzz_server() -> Any:
    with ScriptedServer() as server:
        yield server


def test_replay_needs_a_claim_but_a_signed_state_binds_its_id_and_content() -> None:
    """toolreg alone cannot tell a copy of a state from the original across processes: the
    application claims a state by its id once (a store with claim() is a later issue). With
    a signed state the id cannot be changed to get past that claim, and nothing in it can be
    changed at all."""
    shop = Shop()
    with ScriptedServer([REFUND, text("Refunded.")]) as server:
        chat, reply = paused(server, shop)
        state = stored(chat.export_state(key=KEY))
        in_storage = json.dumps(state)
        claimed = {state["id"]}  # the application's claim, e.g. a row it deletes
        copy_ = {**state, "id": "f" * 32}  # a replayed copy under a new id
        with pytest.raises(ConversationStateError, match="signature does not match"):
            Conversation.from_state(copy_, server.client(), registry=shop.registry, key=KEY)
        assert state["id"] in claimed
        later = Conversation.from_state(state, server.client(), registry=shop.registry, key=KEY)
        later.resume({reply.pending[0].digest: True})
        # storage still holds a resumable copy: only the application's claim stops it
        assert json.loads(in_storage)["status"] == "approval_required"
        with pytest.raises(ConversationStateError, match="resumed already"):  # in process
            Conversation.from_state(state, server.client(), registry=shop.registry, key=KEY)
    assert shop.ran == [("refund", {"order_id": "A1", "amount": 20})]
