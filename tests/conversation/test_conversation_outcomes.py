"""The truth about interrupted calls (issue 32, section 3): however a turn is stopped (a
`stream()` reader that closes it, a cancelled task, an interrupt, a hook or guardrail that
raises), every call of it ends as "completed", "interrupted" (it was running) or
"not_started", and the model (the history), the application (`turn_results`, events, the
saved state) and the stopped tool (its cancel signal) are told; a call that was running is
never reported as not run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    GuardrailTripped,
    ToolCancelled,
    ToolContext,
    ToolFinished,
    ToolRegistry,
    ToolStarted,
)
from toolreg.stores import MemoryStore
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls

MODEL = "scripted-model"
HOLD = 30.0  # a tool waits at most this long for the test (it is stopped long before)
NOT_RUN = "was not run: the turn was stopped before it started."
INTERRUPTED = (
    "was interrupted while it was running (the turn was stopped): what it did is not known."
)


class Shop:
    """Tools that record what they did; `hold` waits for its cancel signal."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.began = threading.Event()
        self.registry = reg = ToolRegistry()

        @reg.register_tool
        def hold(order: int, ctx: ToolContext[Any]) -> str:
            """Packs an order; stops between items when asked."""
            self.log.append(f"packing {order}")
            self.began.set()
            if ctx.cancelled.wait(HOLD):
                self.log.append(f"stopped {order}")
                raise ToolCancelled(f"Packing of order {order} stopped: one item of two packed.")
            return "packed"

        @reg.register_tool
        async def ahold(order: int) -> str:
            """Packs an order (async); says how far it got when cancelled."""
            self.log.append(f"packing {order}")
            self.began.set()
            try:
                await asyncio.sleep(HOLD)
            except asyncio.CancelledError:
                self.log.append(f"stopped {order}")
                raise ToolCancelled(f"Packing of order {order} stopped before any item.") from None
            return "packed"

        @reg.register_tool
        def quick(order: int) -> str:
            """Looks an order up."""
            self.log.append(f"looked {order}")
            return f"order {order}: open"

        @reg.register_tool
        def crash(order: int) -> str:
            """The process is stopped while this runs."""
            self.log.append(f"crash {order}")
            raise KeyboardInterrupt


def observations(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool"]


def test_a_reader_that_closes_the_stream_stops_the_round_and_each_call_is_told() -> None:
    shop = Shop()
    turns = [tool_calls(call("hold", order=1), call("quick", order=2)), text("Stopped.")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry, max_concurrency=1)
        with contextlib.closing(chat.stream("pack 1, look 2")) as events:
            for event in events:
                if isinstance(event, ToolStarted):
                    break  # the reader goes away while `hold` runs and `quick` waits
        assert shop.log == ["packing 1", "stopped 1"]  # asked to stop; `quick` never began
        assert [r.outcome for r in chat.turn_results] == ["interrupted", "not_started"]
        assert observations(chat.messages) == [
            "Packing of order 1 stopped: one item of two packed.",  # the tool's own words
            f"Tool 'quick' {NOT_RUN}",
        ]
        reply = chat.send("What happened?")  # a valid history: every call answered once
        assert reply.text == "Stopped."
        server.assert_all_consumed()
    sent = observations(server.requests[1]["messages"])
    assert sent[0].startswith("Packing of order 1 stopped")


def test_an_async_reader_that_closes_the_stream_cancels_the_running_call() -> None:
    shop = Shop()
    turns = [tool_calls(call("ahold", order=1), call("quick", order=2)), text("ok")]

    async def main(server: ScriptedServer) -> AsyncConversation:
        chat = AsyncConversation(
            server.async_client(), MODEL, registry=shop.registry, max_concurrency=1
        )
        async with contextlib.aclosing(chat.stream("pack")) as events:
            async for event in events:
                if isinstance(event, ToolStarted):
                    break
        return chat

    with ScriptedServer(turns) as server:
        chat = asyncio.run(main(server))
    assert shop.log == ["packing 1", "stopped 1"]
    assert [r.outcome for r in chat.turn_results] == ["interrupted", "not_started"]
    assert observations(chat.messages) == [
        "Packing of order 1 stopped before any item.",
        f"Tool 'quick' {NOT_RUN}",
    ]


@pytest.mark.parametrize("tool", ["hold", "ahold"])
def test_a_cancelled_send_task_tells_the_running_call_and_keeps_it_answered(tool: str) -> None:
    shop = Shop()

    async def main(server: ScriptedServer) -> AsyncConversation:
        chat = AsyncConversation(server.async_client(), MODEL, registry=shop.registry)
        task = asyncio.ensure_future(chat.send("pack order 3"))
        while not shop.began.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return chat

    with ScriptedServer([tool_call(tool, order=3), text("x")]) as server:
        chat = asyncio.run(main(server))
    assert shop.log == ["packing 3", "stopped 3"]
    (result,) = chat.turn_results
    assert (result.outcome, result.error_kind) == ("interrupted", "interrupted")
    assert observations(chat.messages)[0].startswith("Packing of order 3 stopped")


def test_a_shutdown_in_one_call_stops_the_others_and_none_is_reported_as_not_run() -> None:
    """KeyboardInterrupt in one call of a parallel round: the call that raised it was
    running (interrupted), the call beside it is asked to stop and says what it did."""
    shop = Shop()
    turns = [tool_calls(call("hold", order=1), call("crash", order=2)), text("x")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry)
        with pytest.raises(KeyboardInterrupt):
            chat.send("pack 1, then crash")
    assert sorted(shop.log) == ["crash 2", "packing 1", "stopped 1"]
    assert [r.outcome for r in chat.turn_results] == ["interrupted", "interrupted"]
    assert observations(chat.messages) == [
        "Packing of order 1 stopped: one item of two packed.",
        f"Tool 'crash' {INTERRUPTED}",
    ]


def test_a_failed_turn_with_a_store_saves_what_ran() -> None:
    shop = Shop()
    store = MemoryStore()
    turns = [tool_calls(call("quick", order=1), call("crash", order=2)), text("x")]
    with ScriptedServer(turns) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=shop.registry,
            state_store=store,
            conversation_id="c1",
            parallel=False,
        )
        with pytest.raises(KeyboardInterrupt):
            chat.send("look 1, crash 2")
    saved = store.load("c1")
    assert saved is not None
    assert observations(saved.state["messages"]) == ["order 1: open", f"Tool 'crash' {INTERRUPTED}"]


def test_a_turn_stopped_before_any_call_began_keeps_nothing() -> None:
    shop = Shop()

    def veto(event: Any) -> None:
        raise RuntimeError("policy service down")

    from toolreg import Hooks

    with ScriptedServer([tool_call("quick", order=1)]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=shop.registry, hooks=Hooks(before_tool_call=veto)
        )
        with pytest.raises(RuntimeError, match="policy service down"):
            chat.send("look 1")
    assert chat.messages == []
    assert shop.log == []


def test_a_result_no_output_guardrail_has_read_is_withheld_from_the_kept_history() -> None:
    shop = Shop()

    def broken(event: Any) -> None:
        raise RuntimeError("the checker is down")

    turns = [tool_call("quick", order=1), text("x")]
    with ScriptedServer(turns) as server:
        chat = Conversation(
            server.client(), MODEL, registry=shop.registry, output_guardrails=broken
        )
        with pytest.raises(GuardrailTripped):
            chat.send("look 1")
    assert shop.log == ["looked 1"]
    (result,) = chat.turn_results
    assert result.outcome == "completed"
    assert observations(chat.messages) == [
        "Tool 'quick' ran, but the turn was stopped before its result was checked: it is withheld."
    ]


def test_events_and_replies_carry_outcomes() -> None:
    shop = Shop()
    turns = [tool_calls(call("quick", order=1), call("quick", order="x")), text("ok")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry)
        events = list(chat.stream("look"))
    finished = {e.call.arguments: e.result.outcome for e in events if isinstance(e, ToolFinished)}
    assert sorted(finished.values()) == ["completed", "not_started"]
    assert [r.outcome for r in events[-1].reply.tool_results] == ["completed", "not_started"]
    assert chat.turn_results == events[-1].reply.tool_results


def test_a_declined_call_did_not_start_and_the_saved_state_keeps_outcomes() -> None:
    reg = ToolRegistry()
    ran: list[str] = []

    @reg.register_tool(read_only=True)
    def balance(account: str) -> int:
        """A balance."""
        ran.append("balance")
        return 100

    @reg.register_tool(destructive=True)
    def transfer(account: str, amount: int) -> str:
        """Moves money."""
        ran.append("transfer")
        return "sent"

    turns = [
        tool_calls(call("balance", account="A"), call("transfer", account="A", amount=5)),
        text("Not sent."),
    ]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, confirm="defer")
        chat.send("check, then send")
        state = json.loads(json.dumps(chat.export_state()))
        (done,) = state["turn"]["round"]["done"]
        assert (done["outcome"], done["idempotency_key"]) == (
            "completed",
            chat.turn_results[0].idempotency_key,
        )
        other = Conversation.from_state(state, server.client(), registry=reg)
        reply = other.resume({other.pending[0].call_id: "not today"})
    assert ran == ["balance"]
    assert [r.outcome for r in reply.tool_results] == ["completed", "not_started"]
    assert reply.tool_results[1].idempotency_key is not None


def test_a_state_with_an_unknown_outcome_is_refused() -> None:
    from toolreg import ConversationStateError

    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    def balance(account: str) -> int:
        """A balance."""
        return 100

    @reg.register_tool(destructive=True)
    def transfer(account: str, amount: int) -> str:
        """Moves money."""
        return "sent"

    turns = [tool_calls(call("balance", account="A"), call("transfer", account="A", amount=5))]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, confirm="defer")
        chat.send("go")
        state = json.loads(json.dumps(chat.export_state()))
        state["turn"]["round"]["done"][0]["outcome"] = "maybe"
        with pytest.raises(ConversationStateError, match="'outcome'"):
            Conversation.from_state(state, server.client(), registry=reg)
        state["turn"]["round"]["done"][0]["outcome"] = "completed"
        state["turn"]["round"]["done"][0]["idempotency_key"] = "k\n"
        with pytest.raises(ConversationStateError, match="idempotency_key"):
            Conversation.from_state(state, server.client(), registry=reg)
