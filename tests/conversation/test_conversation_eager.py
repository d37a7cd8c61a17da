"""Eager start: a call whose arguments are complete in the stream starts before the stream
ends, when it is safe to; the order of events is checked on a real HTTP stream, never
timings. The server holds request 0's last chunk (`Gate`) until the tool says it started
(at most a few seconds): so "started" comes before "stream end" only when the tool really
started while the answer was still streaming. A call is complete once its own arguments
are a whole JSON object: both calls of `TWO_CALLS` are before that last chunk."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationError,
    Hooks,
    ToolDefinitionError,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, call, text, tool_calls

MODEL = "scripted-model"
HOLD = 5.0  # how long the server holds the last chunk for a tool that should start early
BRIEF = 0.5  # ... for one that must not: it would have started by then, were it early


class Log:
    """What happened, in order, from every thread: the tools', the server's, the test's."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.lock = threading.Lock()
        self.started = threading.Event()

    def add(self, event: str) -> None:
        with self.lock:
            self.events.append(event)
        if event.endswith(" started"):
            self.started.set()


def ends_stream(chunk: dict[str, Any]) -> bool:
    if chunk.get("object") == "chat.completion.chunk":
        return bool(chunk["choices"] and chunk["choices"][0].get("finish_reason"))
    return chunk.get("type") in ("response.completed", "response.incomplete")


class Gate:
    """`before_send`: before request 0's last chunk, wait (at most `hold` s) until a tool
    has started, then log "stream end" and let it go; `cut=True` cuts the stream there."""

    def __init__(self, log: Log, hold: float = HOLD, cut: bool = False) -> None:
        self.log, self.hold, self.cut = log, hold, cut

    def __call__(self, index: int, chunk: dict[str, Any]) -> None:
        if index != 0 or not ends_stream(chunk):
            return
        self.log.started.wait(self.hold)
        if self.cut:
            self.log.add("stream cut")
            raise RuntimeError("the connection drops")
        self.log.add("stream end")


def registry(log: Log, **flags: dict[str, Any]) -> ToolRegistry:
    """`lookup` and `other` (read-only unless `flags` says otherwise), logging their runs."""
    reg = ToolRegistry()

    def lookup(topic: str) -> str:
        """Look a topic up."""
        log.add("lookup started")
        return f"lookup: {topic}"

    def other(topic: str) -> str:
        """Another lookup."""
        log.add("other started")
        return f"other: {topic}"

    for fn in (lookup, other):
        reg.register_tool(fn, **flags.get(fn.__name__, {"read_only": True}))
    return reg


TWO_CALLS = tool_calls(call("lookup", topic="a"), call("other", topic="b"))


def converse(
    reg: ToolRegistry, log: Log, hold: float = HOLD, turns: Any = None, **options: Any
) -> tuple[Any, ScriptedServer]:
    with ScriptedServer(turns or [TWO_CALLS, text("done")], before_send=Gate(log, hold)) as s:
        chat = Conversation(s.client(), MODEL, registry=reg, stream=True, **options)
        reply = chat.send("look both up")
        s.assert_all_consumed()
    return reply, s


def tool_results(server: ScriptedServer, index: int = 1) -> list[tuple[str, str]]:
    return [
        (m["tool_call_id"], m["content"])
        for m in server.requests[index]["messages"]
        if m.get("role") == "tool"
    ]


# -- what starts early -----------------------------------------------------------------------


def test_a_read_only_tool_starts_while_the_answer_still_streams() -> None:
    log = Log()
    reply, server = converse(registry(log), log)
    assert log.events[0] in ("lookup started", "other started")  # either, side by side
    assert log.events.count("lookup started") == 1  # it did not run again in its round
    assert sorted(log.events) == ["lookup started", "other started", "stream end"]
    assert reply.text == "done"
    assert tool_results(server) == [("call_1", "lookup: a"), ("call_2", "other: b")]


def test_results_go_back_in_the_models_order_whichever_finishes_first() -> None:
    log = Log()
    reg = ToolRegistry()
    other_done = threading.Event()

    @reg.register_tool(idempotent=True)
    def lookup(topic: str) -> str:
        """Started first, finishes last."""
        log.add("lookup started")
        other_done.wait(HOLD)
        log.add("lookup finished")
        return f"lookup: {topic}"

    @reg.register_tool(read_only=True)
    def other(topic: str) -> str:
        """Started second, finishes first."""
        log.add("other finished")
        other_done.set()
        return f"other: {topic}"

    _, server = converse(reg, log)
    assert log.events.index("other finished") < log.events.index("lookup finished")
    assert tool_results(server) == [("call_1", "lookup: a"), ("call_2", "other: b")]
    assert [m["role"] for m in server.requests[1]["messages"][-3:]] == ["assistant", "tool", "tool"]


def test_eager_true_starts_a_tool_that_is_neither_read_only_nor_idempotent() -> None:
    log = Log()
    converse(registry(log, lookup={"eager": True}, other={}), log)
    assert log.events[:2] == ["lookup started", "stream end"]


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        pytest.param({"lookup": {}}, {}, id="no flags: not known to be safe"),
        pytest.param({"lookup": {"read_only": True, "eager": False}}, {}, id="tool: eager=False"),
        pytest.param({}, {"eager_tools": False}, id="conversation: eager_tools=False"),
        pytest.param({}, {"parallel": False}, id="parallel=False"),
        pytest.param(
            {"lookup": {"destructive": True}},
            {"confirm": lambda tool, arguments: True},
            id="needs confirmation (a callback)",
        ),
        pytest.param({}, {"tools": ["other"]}, id="not offered (tools= filter)"),
    ],
)
def test_a_call_that_may_not_start_early_waits_for_the_whole_answer(
    flags: dict[str, Any], options: dict[str, Any]
) -> None:
    log = Log()
    converse(registry(log, **flags), log, hold=BRIEF, **options)
    if "lookup started" in log.events:  # (`other` may start early: it is read-only)
        assert log.events.index("stream end") < log.events.index("lookup started")
    assert log.events.count("lookup started") <= 1


def test_a_call_that_waits_for_approval_never_starts_early() -> None:
    log = Log()
    reg = registry(log, lookup={"read_only": True, "requires_confirmation": True})
    with ScriptedServer([TWO_CALLS, text("done")], before_send=Gate(log, BRIEF)) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, stream=True, confirm="defer")
        paused = chat.send("look both up")
        assert paused.stop_reason == "approval_required"
        assert "lookup started" not in log.events
        assert "stream end" in log.events
        chat.resume({paused.pending[0].call_id: True})
        server.assert_all_consumed()
    assert log.events.count("lookup started") == 1


def test_a_call_in_the_final_round_is_never_started() -> None:
    log = Log()
    again = tool_calls(call("lookup", topic="c"), call("other", topic="d"))
    with ScriptedServer([TWO_CALLS, again, text("done")], before_send=Gate(log)) as server:
        reg = registry(log)
        chat = Conversation(server.client(), MODEL, registry=reg, stream=True, max_rounds=1)
        reply = chat.send("look both up")
    assert reply.stop_reason == "max_rounds"
    assert log.events.count("lookup started") == 1  # round 1's; the final round runs none


# -- prechecks: hooks run once, before the call starts -----------------------------------------


def test_a_hook_vetoes_an_early_call_before_it_starts_and_is_asked_once() -> None:
    log = Log()
    asked: list[str] = []

    def before_tool_call(event: Any) -> Any:
        asked.append(event.call.name)
        log.add(f"hook {event.call.name}")
        return "no lookups today" if event.call.name == "lookup" else None

    reply, server = converse(
        registry(log), log, hold=BRIEF, hooks=Hooks(before_tool_call=before_tool_call)
    )
    assert asked == ["lookup", "other"]  # each call checked once
    assert log.events[0] == "hook lookup"  # lookup's check ran during the stream
    assert "lookup started" not in log.events
    assert tool_results(server)[0] == ("call_1", "no lookups today")
    assert reply.tool_results[1].content == "other: b"


def test_an_input_guardrail_checks_an_early_call_once_and_a_rejection_never_starts() -> None:
    log = Log()
    checked: list[str] = []

    def guard(checked_call: Any) -> Any:
        checked.append(checked_call.tool_name)
        return "lookups are off" if checked_call.tool_name == "lookup" else None

    reply, server = converse(registry(log), log, hold=BRIEF, input_guardrails=guard)
    assert checked == ["lookup", "other"]  # each call checked once, during the stream
    assert "lookup started" not in log.events
    assert tool_results(server)[0] == ("call_1", "lookups are off")
    assert reply.tool_results[0].error_kind == "rejected"
    assert reply.tool_results[1].content == "other: b"


def test_a_call_limit_counts_the_calls_started_early() -> None:
    log = Log()
    turns = [tool_calls(call("lookup", topic="a"), call("lookup", topic="b")), text("done")]
    reply, _ = converse(registry(log), log, hold=BRIEF, turns=turns, max_calls={"lookup": 1})
    assert log.events.count("lookup started") == 1  # the second is over the limit: not run
    assert reply.tool_results[0].content == "lookup: a"
    assert reply.tool_results[1].error_kind == "call_limit"


# -- a stream that fails --------------------------------------------------------------------


def test_sync_a_cut_off_stream_abandons_the_running_call_and_keeps_nothing() -> None:
    log = Log()
    release = threading.Event()
    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    def lookup(topic: str) -> str:
        """Runs until released."""
        log.add("lookup started")
        release.wait(HOLD)
        log.add("lookup finished")
        return "never seen"

    @reg.register_tool
    def other(topic: str) -> str:
        """Never reached: not known to be safe, it waits for the whole answer."""
        log.add("other started")
        return "never seen"

    with ScriptedServer([TWO_CALLS], before_send=Gate(log, cut=True)) as server:
        chat = Conversation(server.client(), MODEL, registry=reg, stream=True)
        with pytest.raises(ConversationError, match="endpoint") as raised:
            chat.send("look both up")
    release.set()
    assert log.events[:2] == ["lookup started", "stream cut"]
    assert "other started" not in log.events
    assert "lookup (call_1): left to finish" in str(raised.value)  # the error says it ran
    assert [c.name for c in raised.value.started] == ["lookup"]
    assert chat.messages == []  # the failed turn left nothing behind
    assert len(server.requests) == 1  # and nothing was sent again


def test_async_a_cut_off_stream_cancels_the_running_call() -> None:
    log = Log()
    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    async def lookup(topic: str) -> str:
        """Runs until cancelled."""
        log.add("lookup started")
        try:
            await asyncio.sleep(HOLD)
        except asyncio.CancelledError:
            log.add("lookup cancelled")
            raise
        return "never seen"

    @reg.register_tool
    async def other(topic: str) -> str:
        """Never reached: not known to be safe, it waits for the whole answer."""
        log.add("other started")
        return "never seen"

    async def main(server: ScriptedServer) -> None:
        async with server.async_client() as client:
            chat = AsyncConversation(client, MODEL, registry=reg, stream=True)
            with pytest.raises(ConversationError, match="endpoint") as raised:
                await chat.send("look both up")
            assert "lookup (call_1): cancelled" in str(raised.value)
            assert chat.messages == []

    with ScriptedServer([TWO_CALLS], before_send=Gate(log, cut=True)) as server:
        asyncio.run(main(server))
    assert log.events == ["lookup started", "stream cut", "lookup cancelled"]


# -- the async driver -----------------------------------------------------------------------


def test_async_an_early_call_starts_as_a_task_and_an_async_hook_is_awaited_first() -> None:
    log = Log()
    reg = ToolRegistry()

    @reg.register_tool(read_only=True)
    async def lookup(topic: str) -> str:
        """Look a topic up."""
        log.add("lookup started")
        return f"lookup: {topic}"

    @reg.register_tool(read_only=True)
    def other(topic: str) -> str:
        """A sync tool, run in a thread."""
        log.add("other started")
        return f"other: {topic}"

    async def before_tool_call(event: Any) -> None:
        await asyncio.sleep(0)
        log.add(f"hook {event.call.name}")

    async def main(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            hooks = Hooks(before_tool_call=before_tool_call)
            chat = AsyncConversation(client, MODEL, registry=reg, stream=True, hooks=hooks)
            return await chat.send("look both up")

    with ScriptedServer([TWO_CALLS, text("done")], before_send=Gate(log)) as server:
        reply = asyncio.run(main(server))
        server.assert_all_consumed()
    at = log.events.index
    assert at("hook lookup") < at("lookup started") < at("stream end")  # checked, then run
    assert at("hook other") < at("other started")
    assert log.events.count("lookup started") == 1
    assert [r.content for r in reply.tool_results] == ["lookup: a", "other: b"]


# -- options --------------------------------------------------------------------------------


def test_eager_tools_options_are_checked() -> None:
    reg = ToolRegistry()
    with pytest.raises(UsageError, match="needs stream=True"):
        Conversation(object(), MODEL, registry=reg, eager_tools=True)
    with pytest.raises(UsageError, match="parallel=False"):
        Conversation(object(), MODEL, registry=reg, stream=True, parallel=False, eager_tools=True)
    with pytest.raises(UsageError, match="True, False or None"):
        Conversation(object(), MODEL, registry=reg, stream=True, eager_tools="yes")


def test_the_eager_tool_option_is_checked() -> None:
    reg = ToolRegistry()

    def delete(path: str) -> None:
        """Delete a file."""

    with pytest.raises(ToolDefinitionError, match="never starts before it is confirmed"):
        reg.register_tool(delete, destructive=True, eager=True)
    with pytest.raises(ToolDefinitionError, match="eager must be True, False or None"):
        reg.register_tool(delete, eager="always")
    assert reg.register_tool(delete, read_only=True, eager=False) is delete
    assert reg.get("delete").eager is False


# -- the Anthropic Messages API --------------------------------------------------------------


class AnthropicGate:
    """`before_send` for /v1/messages: before request 0's `message_delta` (after every
    content block), wait until a tool has started, then log "stream end"."""

    def __init__(self, log: Log, hold: float = HOLD) -> None:
        self.log, self.hold = log, hold

    def __call__(self, index: int, event: dict[str, Any]) -> None:
        if index == 0 and event.get("type") == "message_delta":
            self.log.started.wait(self.hold)
            self.log.add("stream end")


@pytest.mark.parametrize("asynchronous", [False, True])
def test_anthropic_calls_start_while_the_message_still_streams(asynchronous: bool) -> None:
    log = Log()
    reg = registry(log)
    with ScriptedServer([TWO_CALLS, text("done")], before_send=AnthropicGate(log)) as server:
        if asynchronous:
            chat: Any = AsyncConversation(
                server.async_anthropic_client(), MODEL, registry=reg, stream=True
            )
            reply = asyncio.run(chat.send("look both up"))
        else:
            chat = Conversation(server.anthropic_client(), MODEL, registry=reg, stream=True)
            reply = chat.send("look both up")
        results = server.requests[1]["messages"][-1]["content"]
    # a call started before the message ended (both start early, side by side: which one
    # logs first is the threads' business)
    assert log.events[0] in ("lookup started", "other started")
    assert log.events.index("stream end") < len(log.events)
    assert sorted(log.events) == ["lookup started", "other started", "stream end"]
    assert [(r["tool_use_id"], r["content"]) for r in results] == [
        ("call_1", "lookup: a"),
        ("call_2", "other: b"),
    ]
    assert reply.text == "done"


def test_anthropic_a_tool_that_is_not_safe_waits_for_the_whole_message() -> None:
    log = Log()
    reg = registry(log, lookup={}, other={})  # neither read-only nor idempotent
    gate = AnthropicGate(log, hold=BRIEF)
    with ScriptedServer([TWO_CALLS, text("done")], before_send=gate) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=reg, stream=True)
        chat.send("look both up")
    assert log.events[0] == "stream end"


def test_anthropic_a_cut_off_stream_abandons_the_early_call_and_keeps_no_history() -> None:
    log = Log()

    def cut(index: int, event: dict[str, Any]) -> None:
        if index == 0 and event.get("type") == "message_delta":
            log.started.wait(HOLD)
            raise RuntimeError("the connection drops")

    with ScriptedServer([TWO_CALLS], before_send=cut) as server:
        chat = Conversation(
            server.anthropic_client(max_retries=0), MODEL, registry=registry(log), stream=True
        )
        with pytest.raises(ConversationError):
            chat.send("look both up")
        assert len(server.requests) == 1  # nothing sent again
    # started early, each at most once (`other` may or may not have started before the cut;
    # when both did, either may log first)
    assert log.events[0] in ("lookup started", "other started")
    assert sorted(set(log.events)) == sorted(log.events)
    assert set(log.events) <= {"lookup started", "other started"}
    assert chat.messages == []
