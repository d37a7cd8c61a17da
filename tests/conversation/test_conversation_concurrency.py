"""Bounded parallelism in a conversation (issue 32, section 4): `max_concurrency=` bounds the
calls of one model answer that run at once, those started early included, on both drivers,
with or without a reader. Overlap is counted (calls running at once), not timed."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from toolreg import AsyncConversation, Conversation, ConversationOptions, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, call, text, tool_calls

MODEL = "scripted-model"
HOLD = 20.0
WIDEN = 0.02  # a call lingers this long, so that a broken bound would show more overlap


class Gauge:
    """Calls running at once; each call waits until `limit` run (or all have begun), so the
    bound is reached whenever it holds, and passed when it does not."""

    def __init__(self, limit: int, total: int) -> None:
        self.limit, self.total = limit, total
        self.cond = threading.Condition()
        self.now = self.peak = self.begun = 0

    def run(self) -> None:
        with self.cond:
            self.now += 1
            self.begun += 1
            self.peak = max(self.peak, self.now)
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.now >= self.limit or self.begun >= self.total, HOLD)
        time.sleep(WIDEN)
        with self.cond:
            self.now -= 1
            self.cond.notify_all()


def shop(gauge: Gauge) -> ToolRegistry:
    reg = ToolRegistry(max_concurrency=8)  # the conversation's bound is tighter

    @reg.register_tool(read_only=True)
    def stock(item: str) -> str:
        """Stock of an item (read-only: may start while the answer streams)."""
        gauge.run()
        return f"{item}: 3"

    @reg.register_tool
    async def astock(item: str) -> str:
        """Stock of an item, async."""
        await asyncio.get_running_loop().run_in_executor(None, gauge.run)
        return f"{item}: 3"

    return reg


def four(tool: str) -> Any:
    return tool_calls(*(call(tool, item=f"i{n}") for n in range(4)))


@pytest.mark.parametrize("listening", [False, True])
@pytest.mark.parametrize("tool", ["stock", "astock"])
def test_max_concurrency_bounds_a_round(listening: bool, tool: str) -> None:
    gauge = Gauge(limit=2, total=4)
    with ScriptedServer([four(tool), text("ok")]) as server:
        chat = Conversation(server.client(), MODEL, registry=shop(gauge), max_concurrency=2)
        reply = list(chat.stream("stock?"))[-1].reply if listening else chat.send("stock?")
    assert [r.ok for r in reply.tool_results] == [True] * 4
    assert gauge.peak == 2


@pytest.mark.parametrize("listening", [False, True])
@pytest.mark.parametrize("tool", ["stock", "astock"])
def test_max_concurrency_bounds_an_async_round(listening: bool, tool: str) -> None:
    gauge = Gauge(limit=2, total=4)

    async def main(server: ScriptedServer) -> Any:
        chat = AsyncConversation(
            server.async_client(), MODEL, registry=shop(gauge), max_concurrency=2
        )
        if not listening:
            return await chat.send("stock?")
        events = [e async for e in chat.stream("stock?")]
        return events[-1].reply

    with ScriptedServer([four(tool), text("ok")]) as server:
        reply = asyncio.run(main(server))
    assert [r.ok for r in reply.tool_results] == [True] * 4
    assert gauge.peak == 2


def test_calls_started_early_count_against_the_bound() -> None:
    gauge = Gauge(limit=1, total=4)
    with ScriptedServer([four("stock"), text("ok")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=shop(gauge), stream=True, max_concurrency=1
        )
        reply = chat.send("stock?")
    assert [r.ok for r in reply.tool_results] == [True] * 4
    assert gauge.peak == 1


def test_calls_started_early_count_against_the_bound_async() -> None:
    gauge = Gauge(limit=2, total=4)

    async def main(server: ScriptedServer) -> Any:
        chat = AsyncConversation(
            server.async_client(), MODEL, registry=shop(gauge), stream=True, max_concurrency=2
        )
        return await chat.send("stock?")

    with ScriptedServer([four("stock"), text("ok")]) as server:
        reply = asyncio.run(main(server))
    assert [r.ok for r in reply.tool_results] == [True] * 4
    assert gauge.peak == 2


def test_without_max_concurrency_the_registrys_bound_applies() -> None:
    gauge = Gauge(limit=4, total=4)
    with ScriptedServer([four("stock"), text("ok")]) as server:
        chat = Conversation(server.client(), MODEL, registry=shop(gauge))
        chat.send("stock?")
    assert gauge.peak == 4  # the registry's 8: all four at once


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_max_concurrency_is_checked_when_the_conversation_is_built(bad: Any) -> None:
    with pytest.raises(UsageError, match="max_concurrency must be a whole number >= 1 or None"):
        ConversationOptions(max_concurrency=bad)
    with ScriptedServer([]) as server, pytest.raises(UsageError, match="max_concurrency"):
        Conversation(server.client(), MODEL, max_concurrency=bad)


def test_max_concurrency_is_saved_with_the_state() -> None:
    with ScriptedServer([]) as server:
        chat = Conversation(server.client(), MODEL, max_concurrency=3)
        state = chat.export_state()
        assert state["options"]["max_concurrency"] == 3
        assert Conversation.from_state(state, server.client()).options.max_concurrency == 3
        del state["options"]["max_concurrency"]  # a state from before the option
        assert Conversation.from_state(state, server.client()).options.max_concurrency is None


def test_a_round_of_one_call_waits_for_the_calls_started_early() -> None:
    """The bound is the turn's: the round's own call waits while early ones fill it."""
    gauge = Gauge(limit=1, total=3)
    turns = [
        tool_calls(call("stock", item="a"), call("stock", item="b"), call("astock", item="c")),
        text("ok"),
    ]
    with ScriptedServer(turns) as server:
        chat = Conversation(
            server.client(), MODEL, registry=shop(gauge), stream=True, max_concurrency=1
        )
        reply = chat.send("stock?")
    assert [r.ok for r in reply.tool_results] == [True] * 3
    assert gauge.peak == 1
    assert threading.active_count() < 50  # nothing piled up
