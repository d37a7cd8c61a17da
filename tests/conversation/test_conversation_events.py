"""`Conversation.stream()` / `AsyncConversation.stream()`: the typed events of a turn, read
over real HTTP (`ScriptedServer`) with the real `openai` SDK. Orders are checked, never
timings: tools wait on each other with `threading.Event`s where an order must be forced."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from toolreg import AsyncConversation, Conversation, ToolContext, ToolRegistry, UsageError
from toolreg.conversation import (
    ApprovalRequired,
    TextDelta,
    ToolCallReady,
    ToolFinished,
    ToolProgress,
    ToolStarted,
    TurnFinished,
)
from toolreg.stores import MemoryStore
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls

MODEL = "scripted-model"
DEPS = {"user": "ada"}  # what a ToolContext carries


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def weather_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str, ctx: ToolContext) -> dict[str, Any]:
        """Get the weather of a city."""
        ctx.report_progress(1, 2, "asking the station")
        ctx.report_progress(2, 2)
        return {"city": city, "temperature": 18}

    return reg


@pytest.mark.parametrize("stream", [True, False])
def test_one_round_in_order_text_last(stream: bool) -> None:
    turns = [tool_call("get_weather", city="北京"), text("It is 18 degrees in Beijing.")]
    with ScriptedServer(turns) as server:
        chat = Conversation(
            server.client(), MODEL, registry=weather_registry(), context=DEPS, stream=stream
        )
        events = list(chat.stream("Weather in Beijing?"))
        server.assert_all_consumed()
    assert kinds(events) == [
        "ToolCallReady",
        "ToolStarted",
        "ToolProgress",
        "ToolProgress",
        "ToolFinished",
        *(["TextDelta"] * (len(events) - 6)),
        "TurnFinished",
    ]
    ready, started, half, whole, finished = events[:5]
    assert isinstance(ready, ToolCallReady)
    assert ready.call.name == "get_weather"
    assert ready.call.call_id == "call_1"
    assert not ready.early
    assert isinstance(started, ToolStarted)
    assert started.call == ready.call
    assert half == ToolProgress("call_1", "get_weather", 1.0, 2.0, "asking the station")
    assert whole == ToolProgress("call_1", "get_weather", 2.0, 2.0, None)
    assert isinstance(finished, ToolFinished)
    assert finished.result.ok
    assert finished.result.content == '{"city": "北京", "temperature": 18}'
    reply = events[-1].reply
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == reply.text == "It is 18 degrees in Beijing."
    assert len(deltas) > (1 if stream else 0)  # in pieces only when the answer streams
    assert reply.stop_reason == "answer"
    assert chat.messages == reply.messages  # the history is kept, as send() keeps it


def test_stream_and_send_give_the_same_reply() -> None:
    turns = [tool_call("get_weather", city="Paris"), text("Mild.")]
    outcomes = []
    for streamed in (True, False):
        with ScriptedServer(turns) as server:
            chat = Conversation(server.client(), MODEL, registry=weather_registry(), context=DEPS)
            if streamed:
                last = list(chat.stream("Paris?"))[-1]
                assert isinstance(last, TurnFinished)
                reply = last.reply
            else:
                reply = chat.send("Paris?")
            outcomes.append((reply.text, reply.messages, server.requests))
    assert outcomes[0] == outcomes[1]


def test_parallel_calls_finish_in_the_order_they_end_results_go_back_in_the_models() -> None:
    reg = ToolRegistry()
    second_done = threading.Event()

    @reg.register_tool
    def slow(x: int) -> int:
        """Waits for the other call to end first."""
        second_done.wait(5)
        return x

    @reg.register_tool
    def fast(x: int) -> int:
        """Ends at once."""
        return x * 10

    turns = [tool_calls(call("slow", x=1), call("fast", x=2)), text("done")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=reg)
        events = []
        for event in chat.stream("go"):
            events.append(event)
            if isinstance(event, ToolFinished) and event.call.name == "fast":
                second_done.set()
        sent = [(m["tool_call_id"], m["content"]) for m in server.requests[1]["messages"][2:]]
    finished = [e.call.name for e in events if isinstance(e, ToolFinished)]
    assert finished == ["fast", "slow"]
    assert sent == [("call_1", "1"), ("call_2", "20")]  # the model's order
    assert [r.tool_name for r in events[-1].reply.tool_results] == ["slow", "fast"]


def test_progress_that_is_not_a_number_is_dropped_and_the_call_still_succeeds() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def noisy(ctx: ToolContext) -> str:
        """Reports nonsense progress."""
        ctx.report_progress("half")  # type: ignore[arg-type]
        ctx.report_progress(float("nan"))
        ctx.report_progress(1, total=float("inf"))
        ctx.report_progress(True)
        ctx.report_progress(3, 4, "x" * 100_000)
        return "ok"

    with ScriptedServer([tool_call("noisy"), text("fine")]) as server:
        events = list(Conversation(server.client(), MODEL, registry=reg, context=DEPS).stream("go"))
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [(p.progress, p.total) for p in progress] == [(3.0, 4.0)]
    assert progress[0].message is not None
    assert len(progress[0].message) == 1_000
    assert events[-1].reply.tool_results[0].content == "ok"


def test_progress_goes_nowhere_without_a_reader() -> None:
    with ScriptedServer([tool_call("get_weather", city="Oslo"), text("Cold.")]) as server:
        reply = Conversation(
            server.client(), MODEL, registry=weather_registry(), context=DEPS
        ).send("Oslo?")
    assert reply.tool_results[0].ok
    assert reply.text == "Cold."


def test_an_approval_is_an_event_and_stream_resume_carries_on() -> None:
    reg = ToolRegistry()
    ran: list[int] = []

    @reg.register_tool(requires_confirmation=True)
    def refund(order: int) -> str:
        """Refund an order."""
        ran.append(order)
        return "refunded"

    with ScriptedServer([tool_call("refund", order=7), text("Refunded.")]) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, confirm="defer")
        events = list(chat.stream("refund order 7"))
        assert kinds(events)[-2:] == ["ApprovalRequired", "TurnFinished"]
        approval = events[-2]
        assert isinstance(approval, ApprovalRequired)
        assert [p.tool_name for p in approval.pending] == ["refund"]
        assert not any(isinstance(e, ToolStarted) for e in events)
        assert ran == []
        resumed = list(chat.stream_resume({approval.pending[0].call_id: True}))
    assert ran == [7]
    assert kinds(resumed)[:2] == ["ToolCallReady", "ToolStarted"]
    assert resumed[-1].reply.text == "Refunded."


def test_a_reader_that_stops_early_abandons_the_turn() -> None:
    turns = [tool_call("get_weather", city="Rome"), text("Warm.")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=weather_registry(), context=DEPS)
        with contextlib.closing(chat.stream("Rome?")) as events:
            first = next(events)
        assert isinstance(first, ToolCallReady)
        assert chat.messages == []  # nothing of the abandoned turn is kept
        assert chat.send("Rome again?").text == "Warm."
        assert server.requests[1]["messages"] == [{"role": "user", "content": "Rome again?"}]


def test_a_store_saves_a_streamed_turn() -> None:
    store = MemoryStore()
    with ScriptedServer([text("Hello."), text("Again.")]) as server:
        chat = Conversation(server.client(), MODEL, state_store=store, conversation_id="c1")
        assert list(chat.stream("hi"))[-1].reply.text == "Hello."
        later = Conversation(server.client(), MODEL, state_store=store, conversation_id="c1")
        later.send("and?")
    assert [m["content"] for m in server.requests[1]["messages"]] == ["hi", "Hello.", "and?"]


def test_on_text_and_the_stream_see_the_same_deltas() -> None:
    seen: list[str] = []
    with ScriptedServer([text("one two three four")]) as server:
        chat = Conversation(server.client(), MODEL, stream=True, on_text=seen.append)
        deltas = [e.text for e in chat.stream("count") if isinstance(e, TextDelta)]
    assert deltas == seen
    assert "".join(seen) == "one two three four"


def test_eager_calls_are_ready_and_started_while_the_answer_streams() -> None:
    reg = ToolRegistry()
    started = threading.Event()

    @reg.register_tool(read_only=True)
    def lookup(topic: str) -> str:
        """Look a topic up."""
        started.set()
        return topic

    def hold(index: int, chunk: dict[str, Any]) -> None:  # the last chunk waits for the run
        if index == 0 and chunk["choices"] and chunk["choices"][0].get("finish_reason"):
            started.wait(5)

    turns = [tool_calls(call("lookup", topic="a"), call("lookup", topic="b")), text("ok")]
    with ScriptedServer(turns, before_send=hold) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, stream=True)
        events = list(chat.stream("look up"))
    early = [(type(e).__name__, e.call.call_id) for e in events if getattr(e, "early", False)]
    assert ("ToolCallReady", "call_1") in early
    assert ("ToolStarted", "call_1") in early
    finished = [e.call.call_id for e in events if isinstance(e, ToolFinished)]
    assert sorted(finished) == ["call_1", "call_2"]
    assert [r.content for r in events[-1].reply.tool_results] == ["a", "b"]


def test_async_stream_in_order() -> None:
    async def main() -> list[Any]:
        turns = [tool_call("get_weather", city="Lima"), text("Sunny.")]
        with ScriptedServer(turns) as server:
            chat = AsyncConversation(
                server.async_client(), MODEL, registry=weather_registry(), context=DEPS, stream=True
            )
            return [event async for event in chat.stream("Lima?")]

    events = asyncio.run(main())
    assert kinds(events)[:5] == [
        "ToolCallReady",
        "ToolStarted",
        "ToolProgress",
        "ToolProgress",
        "ToolFinished",
    ]
    assert isinstance(events[-1], TurnFinished)
    assert events[-1].reply.text == "Sunny."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny."


def test_async_progress_from_an_async_tool_and_a_sync_one() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    async def fetch(ctx: ToolContext) -> str:
        """Async, reports progress from the event loop."""
        ctx.report_progress(1, 1, "fetched")
        return "a"

    @reg.register_tool
    def compute(ctx: ToolContext) -> str:
        """Sync, runs in a thread: reports progress from there."""
        ctx.report_progress(5, 10)
        return "b"

    async def main() -> list[Any]:
        turns = [tool_calls(call("fetch"), call("compute")), text("done")]
        with ScriptedServer(turns) as server:
            chat = AsyncConversation(server.async_client(), MODEL, registry=reg, context=DEPS)
            return [event async for event in chat.stream("go")]

    events = asyncio.run(main())
    progress = {(e.tool_name, e.progress, e.total) for e in events if isinstance(e, ToolProgress)}
    assert progress == {("fetch", 1.0, 1.0), ("compute", 5.0, 10.0)}
    for name in ("fetch", "compute"):
        mine = [
            type(e).__name__
            for e in events
            if getattr(getattr(e, "call", None), "name", None) == name
            or getattr(e, "tool_name", None) == name
        ]
        assert mine == ["ToolCallReady", "ToolStarted", "ToolProgress", "ToolFinished"]


def test_async_reader_that_stops_cancels_running_calls() -> None:
    reg = ToolRegistry()
    outcome: list[str] = []

    @reg.register_tool
    async def wait_forever() -> str:
        """Never ends by itself."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        return "never"

    async def main() -> None:
        with ScriptedServer([tool_call("wait_forever"), text("x")]) as server:
            chat = AsyncConversation(server.async_client(), MODEL, registry=reg)
            async with contextlib.aclosing(chat.stream("go")) as events:
                async for event in events:
                    if isinstance(event, ToolStarted):
                        break
            # the call began: the history keeps it, answered as interrupted (never "not run")
            assert [m["role"] for m in chat.messages] == ["user", "assistant", "tool"]
            assert "was interrupted while it was running" in chat.messages[-1]["content"]
            assert [r.outcome for r in chat.turn_results] == ["interrupted"]

    asyncio.run(main())
    assert outcome == ["cancelled"]


def test_a_paused_turn_refuses_a_new_stream() -> None:
    reg = ToolRegistry()

    @reg.register_tool(requires_confirmation=True)
    def refund(order: int) -> str:
        """Refund an order."""
        return "refunded"

    with ScriptedServer([tool_call("refund", order=1)]) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, confirm="defer")
        list(chat.stream("refund"))
        with pytest.raises(UsageError, match="resume"):
            list(chat.stream("another"))


# -- on_event: a reader of the same events for send() and resume() ---------------------------


def test_on_event_reads_what_stream_yields_for_send_too() -> None:
    turns = [tool_call("get_weather", city="Oslo"), text("Cold in Oslo.")]
    with ScriptedServer(turns) as server:
        streamed = list(
            Conversation(
                server.client(), MODEL, registry=weather_registry(), context=DEPS, stream=True
            ).stream("Oslo?")
        )
    read: list[Any] = []
    with ScriptedServer(turns) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=weather_registry(),
            context=DEPS,
            stream=True,
            on_event=read.append,
        )
        reply = chat.send("Oslo?")
    assert kinds(read) == kinds(streamed)
    assert read[-1] == TurnFinished(reply)
    assert [e for e in read if isinstance(e, ToolProgress)] == [
        e for e in streamed if isinstance(e, ToolProgress)
    ]


def test_on_event_and_a_stream_reader_see_the_same_events() -> None:
    read: list[Any] = []
    with ScriptedServer([tool_call("get_weather", city="Rome"), text("Warm.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=weather_registry(), context=DEPS, on_event=read.append
        )
        yielded = list(chat.stream("Rome?"))
    assert read == yielded


def test_an_async_on_event_is_awaited_in_order() -> None:
    read: list[str] = []

    async def on_event(event: Any) -> None:
        await asyncio.sleep(0)
        read.append(type(event).__name__)

    async def main() -> Any:
        turns = [tool_call("get_weather", city="Lima"), text("Sunny.")]
        with ScriptedServer(turns) as server:
            chat = AsyncConversation(
                server.async_client(),
                MODEL,
                registry=weather_registry(),
                context=DEPS,
                on_event=on_event,
            )
            return await chat.send("Lima?")

    reply = asyncio.run(main())
    assert read[:5] == [
        "ToolCallReady",
        "ToolStarted",
        "ToolProgress",
        "ToolProgress",
        "ToolFinished",
    ]
    assert read[-2:] == ["TextDelta", "TurnFinished"]
    assert reply.text == "Sunny."


def test_conversation_refuses_an_async_on_event() -> None:
    async def on_event(event: Any) -> None:
        return None

    with ScriptedServer([]) as server, pytest.raises(UsageError, match=r"on_event=.* is async"):
        Conversation(server.client(), MODEL, on_event=on_event)


def test_an_on_event_that_raises_ends_the_turn_and_keeps_only_the_call_that_ran() -> None:
    def on_event(event: Any) -> None:
        if isinstance(event, ToolFinished):
            raise RuntimeError("the reader broke")

    with ScriptedServer([tool_call("get_weather", city="Bern"), text("Mild.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=weather_registry(), context=DEPS, on_event=on_event
        )
        with pytest.raises(RuntimeError, match="the reader broke"):
            chat.send("Bern?")
        assert len(server.requests) == 1  # the turn stopped there
        # the call ran: the history keeps it, with its result, so it never runs again
        assert [m["role"] for m in chat.messages] == ["user", "assistant", "tool"]
        assert [r.outcome for r in chat.turn_results] == ["completed"]
