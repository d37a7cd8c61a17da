"""Every call a conversation runs has an idempotency key (issue 32, section 2): the tool, the
result, the hooks, the guardrails and the stream events see the same one; it stays the same
across a retry of a failed call, a resume after approval (in this process, from a saved
state, from a store after a crash) and differs when the arguments differ."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    Hooks,
    ToolCallReady,
    ToolContext,
    ToolFinished,
    ToolRegistry,
    ToolRetry,
    ToolStarted,
)
from toolreg.idempotency import idempotency_key
from toolreg.stores import MemoryStore
from toolreg.testing import ScriptedServer, call, function_call, text, tool_call, tool_calls

MODEL = "scripted-model"
UUID8 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


class Ledger:
    """Tools that record the key each run sees: `seen` holds (tool, arguments, key)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], str | None]] = []
        self.retry_first = False
        self.registry = reg = ToolRegistry()

        @reg.register_tool
        def charge(amount: int, ctx: ToolContext[Any]) -> str:
            """Charge an amount."""
            self.seen.append(("charge", {"amount": amount}, ctx.idempotency_key))
            if self.retry_first:
                self.retry_first = False
                raise ToolRetry("The gateway timed out; call again.")
            return f"charged {amount}"

        @reg.register_tool(destructive=True)
        def refund(order: int, ctx: ToolContext[Any]) -> str:
            """Refund an order."""
            self.seen.append(("refund", {"order": order}, ctx.idempotency_key))
            return f"refunded {order}"

        @reg.register_tool(read_only=True)
        def balance(ctx: ToolContext[Any]) -> int:
            """The balance."""
            self.seen.append(("balance", {}, ctx.idempotency_key))
            return 100

    def keys(self) -> list[str | None]:
        return [key for _, _, key in self.seen]


def client_of(server: ScriptedServer, dialect: str) -> Any:
    return server.anthropic_client() if dialect == "anthropic" else server.client()


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_one_key_per_call_everywhere_the_call_is_seen(dialect: str) -> None:
    ledger = Ledger()
    hooked: list[tuple[str, str | None]] = []
    guarded: list[str | None] = []
    hooks = Hooks(
        before_tool_call=lambda e: hooked.append(("before", e.call.idempotency_key)),
        after_tool_call=lambda e: hooked.append(("after", e.result.idempotency_key)),
    )
    turns = [
        tool_calls(call("charge", amount=5, id="c1"), call("charge", amount=7, id="c2")),
        text("Done."),
    ]
    with ScriptedServer(turns) as server:
        chat = Conversation(
            client_of(server, dialect),
            MODEL,
            registry=ledger.registry,
            dialect=None if dialect == "anthropic" else dialect,
            hooks=hooks,
            input_guardrails=lambda e: guarded.append(e.idempotency_key),
        )
        events = list(chat.stream("charge twice"))
    keys = ledger.keys()
    assert len(keys) == 2
    assert len(set(keys)) == 2
    assert all(isinstance(k, str) and UUID8.fullmatch(k) for k in keys)
    reply = events[-1].reply
    by_amount = {args["amount"]: key for _, args, key in ledger.seen}
    assert [r.idempotency_key for r in reply.tool_results] == [by_amount[5], by_amount[7]]
    assert [k for stage, k in hooked if stage == "before"] == [by_amount[5], by_amount[7]]
    assert sorted(k for stage, k in hooked if stage == "after") == sorted(keys)  # type: ignore[type-var]
    assert sorted(guarded) == sorted(keys)  # type: ignore[type-var]
    for kind in (ToolCallReady, ToolStarted, ToolFinished):
        found = [e.call.idempotency_key for e in events if isinstance(e, kind)]
        assert sorted(found) == sorted(keys), kind  # type: ignore[type-var]
    assert all(
        e.result.idempotency_key == e.call.idempotency_key
        for e in events
        if isinstance(e, ToolFinished)
    )
    assert [r.outcome for r in reply.tool_results] == ["completed", "completed"]


def test_the_same_call_made_again_after_its_tool_failed_keeps_its_key() -> None:
    ledger = Ledger()
    ledger.retry_first = True
    turns = [
        tool_call("charge", amount=5, id="c1"),  # ToolRetry: the gateway timed out
        tool_call("charge", '{"amount": 5}', id="c2"),  # the same call, again: the same key
        tool_call("charge", amount=5, id="c3"),  # after it succeeded: a new operation
        tool_call("charge", amount=6, id="c4"),  # other arguments: another key
        text("Charged."),
    ]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=ledger.registry, max_repeats=None)
        reply = chat.send("charge 5")
    keys = ledger.keys()
    assert keys[0] == keys[1]
    assert len({keys[1], keys[2], keys[3]}) == 3
    assert [r.error_kind for r in reply.tool_results] == ["retry", None, None, None]


def test_a_new_turn_gives_the_same_call_a_new_key() -> None:
    ledger = Ledger()
    turns = [function_call("charge", amount=5), text("ok")] * 2  # no ids: only the turn differs
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=ledger.registry, dialect="functions")
        chat.send("charge 5")
        chat.send("charge 5 again")
    first, second = ledger.keys()
    assert first != second


def test_calls_without_ids_get_distinct_keys() -> None:
    ledger = Ledger()
    turns = [function_call("charge", amount=5), function_call("charge", amount=5), text("ok")]
    with ScriptedServer(turns) as server:
        chat = Conversation(
            server.client(), MODEL, registry=ledger.registry, dialect="functions", max_repeats=None
        )
        chat.send("charge 5 twice")
    first, second = ledger.keys()
    assert first is not None
    assert second is not None
    assert first != second


# -- approvals ---------------------------------------------------------------------------------


def paused_chat(server: ScriptedServer, ledger: Ledger, **options: Any) -> Conversation:
    chat = Conversation(
        server.client(), MODEL, registry=ledger.registry, confirm="defer", **options
    )
    reply = chat.send("refund order 7")
    assert reply.stop_reason == "approval_required"
    return chat


def test_an_approved_call_runs_with_the_key_it_was_shown_with() -> None:
    ledger = Ledger()
    shown: list[str | None] = []
    hooks = Hooks(before_tool_call=lambda e: shown.append(e.call.idempotency_key))
    with ScriptedServer([tool_call("refund", order=7), text("Refunded.")]) as server:
        chat = paused_chat(server, ledger, hooks=hooks)
        pending = chat.pending[0]
        assert pending.idempotency_key is not None
        assert shown == [pending.idempotency_key]
        chat.resume({pending.call_id: True})
    assert ledger.keys() == [pending.idempotency_key]


def test_a_resume_from_a_saved_state_in_another_conversation_keeps_the_key() -> None:
    ledger = Ledger()
    with ScriptedServer([tool_call("refund", order=7), text("Refunded.")]) as server:
        chat = paused_chat(server, ledger)
        pending = chat.pending[0]
        state = json.loads(json.dumps(chat.export_state()))
        assert state["conversation_id"] == chat.conversation_id
        other = Conversation.from_state(state, server.client(), registry=ledger.registry)
        assert other.conversation_id == chat.conversation_id
        assert other.pending[0].idempotency_key == pending.idempotency_key
        other.resume({pending.call_id: True})
    assert ledger.keys() == [pending.idempotency_key]


def test_edited_arguments_run_with_another_key() -> None:
    ledger = Ledger()
    with ScriptedServer([tool_call("refund", order=7), text("Refunded.")]) as server:
        chat = paused_chat(server, ledger)
        pending = chat.pending[0]
        chat.resume({pending.call_id: {"arguments": {"order": 8}}})
    (key,) = ledger.keys()
    assert key is not None
    assert key != pending.idempotency_key


def test_an_async_resume_keeps_the_key() -> None:
    ledger = Ledger()

    async def main(server: ScriptedServer) -> str | None:
        chat = AsyncConversation(
            server.async_client(), MODEL, registry=ledger.registry, confirm="defer"
        )
        await chat.send("refund order 7")
        pending = chat.pending[0]
        await chat.resume({pending.call_id: True})
        return pending.idempotency_key

    with ScriptedServer([tool_call("refund", order=7), text("Refunded.")]) as server:
        shown = asyncio.run(main(server))
    assert ledger.keys() == [shown]


def test_a_redispatch_after_a_crash_with_a_store_runs_with_the_same_key() -> None:
    """A process resumes a paused turn from the store and dies while the call runs; the
    paused state, kept aside, is dispatched again elsewhere: the tool gets the same key,
    so the payment API it calls can tell the second run from a new payment."""
    ledger = Ledger()
    crash = [True]

    @ledger.registry.register_tool(destructive=True, replace=True)
    def refund(order: int, ctx: ToolContext[Any]) -> str:
        """Refund an order."""
        ledger.seen.append(("refund", {"order": order}, ctx.idempotency_key))
        if crash.pop() if crash else False:
            raise KeyboardInterrupt  # the process dies half-way
        return f"refunded {order}"

    store = MemoryStore()
    turns = [tool_call("refund", order=7), text("Refunded.")]
    with ScriptedServer(turns) as server:

        def chat(on: MemoryStore) -> Conversation:
            return Conversation(
                server.client(),
                MODEL,
                registry=ledger.registry,
                confirm="defer",
                state_store=on,
                conversation_id="order-7",
            )

        chat(store).send("refund order 7")
        saved = store.load("order-7")
        assert saved is not None
        call_id = saved.state["pending"][0]["call_id"]
        with pytest.raises(KeyboardInterrupt):
            chat(store).resume({call_id: True})
        recovered = MemoryStore()  # the paused state, restored where it can run again
        recovered.save("order-7", saved.state, None)
        chat(recovered).resume({call_id: True})
    first, second = ledger.keys()
    assert first is not None
    assert first == second


def test_the_conversation_id_is_the_stores_or_a_new_one_kept_by_the_state() -> None:
    ledger = Ledger()
    with ScriptedServer([]) as server:
        stored = Conversation(
            server.client(),
            MODEL,
            registry=ledger.registry,
            state_store=MemoryStore(),
            conversation_id="c-9",
        )
        assert stored.conversation_id == "c-9"
        a = Conversation(server.client(), MODEL, registry=ledger.registry)
        b = Conversation(server.client(), MODEL, registry=ledger.registry)
        assert a.conversation_id != b.conversation_id
        again = Conversation.from_state(a.export_state(), server.client(), registry=ledger.registry)
        assert again.conversation_id == a.conversation_id


def test_a_state_whose_keys_parts_are_not_ids_is_refused() -> None:
    from toolreg import ConversationStateError

    ledger = Ledger()
    with ScriptedServer([tool_call("refund", order=7)]) as server:
        chat = paused_chat(server, ledger)
        state = chat.export_state()
        for where, bad in (("conversation_id", "x" * 300), ("conversation_id", 5)):
            broken = json.loads(json.dumps(state))
            broken[where] = bad
            with pytest.raises(ConversationStateError, match="conversation_id"):
                Conversation.from_state(broken, server.client(), registry=ledger.registry)
        broken = json.loads(json.dumps(state))
        broken["turn"]["turn_id"] = "\n"
        with pytest.raises(ConversationStateError, match="turn_id"):
            Conversation.from_state(broken, server.client(), registry=ledger.registry)
        broken = json.loads(json.dumps(state))
        broken["turn"]["retry_keys"] = [["charge", "{}"]]
        with pytest.raises(ConversationStateError, match="retry_keys"):
            Conversation.from_state(broken, server.client(), registry=ledger.registry)


def test_a_state_from_before_keys_is_read_with_new_ids() -> None:
    ledger = Ledger()
    with ScriptedServer([tool_call("refund", order=7), text("ok")]) as server:
        chat = paused_chat(server, ledger)
        state = json.loads(json.dumps(chat.export_state()))
        del state["conversation_id"], state["turn"]["turn_id"], state["turn"]["retry_keys"]
        for result in state["turn"]["round"]["done"]:
            result.pop("outcome", None)
        old = Conversation.from_state(state, server.client(), registry=ledger.registry)
        pending = old.pending[0]
        assert pending.idempotency_key is not None
        old.resume({pending.call_id: True})
    assert ledger.keys() == [pending.idempotency_key]


def test_an_early_started_call_keeps_the_key_it_started_with() -> None:
    ledger = Ledger()
    with ScriptedServer([tool_call("balance"), text("100.")]) as server:
        chat = Conversation(server.client(), MODEL, registry=ledger.registry, stream=True)
        events = list(chat.stream("balance?"))
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert [e.early for e in started] == [True]
    (key,) = ledger.keys()
    assert started[0].call.idempotency_key == key
    assert events[-1].reply.tool_results[0].idempotency_key == key


def test_a_callers_own_loop_derives_the_same_key() -> None:
    """`idempotency_key` is the one derivation: a loop of the application's own (or a
    replay) that has the parts computes what the conversation gives the tool."""
    assert idempotency_key("c", "t", "call_1", "charge", {"amount": 5}) == idempotency_key(
        "c", "t", "call_1", "charge", '{"amount":5}'
    )
