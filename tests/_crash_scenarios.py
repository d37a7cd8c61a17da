"""The crash kit's scenarios for toolreg's own tests (tests/durable/test_durable_crash.py): a refund
turn whose model asks for `charge` then `notify`, then answers.

Settings: `db` (DBOS's database URL), `store` (the SQLite store's file), `cid` (the
conversation id), `tid` (the turn id), `driver` ("sync" or "async"), `stream` (True: the
turn is read as a stream of events), `parallel`, `events` (a file each process's event
names go to: `<events>.0`, `<events>.1`), `executor` (DBOS's executor id of the first
process), `version` (the application version: a process takes only the recovered turns of
its own), `beside` (the executor id of a process that runs beside it and recovers its
turns when it dies: `CrashKit.run(..., standby=True)`).
"""

from __future__ import annotations

import json
import os
from typing import Any

import openai

from toolreg import ToolContext, ToolRegistry
from toolreg.conversation import AsyncConversation, Conversation
from toolreg.stores import SQLiteStore
from toolreg.testing.crash import CrashRun


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool
    def charge(order: str, amount: int, ctx: ToolContext) -> str:
        """Charge a customer for an order."""
        return f"charged {amount} for {order} (key {ctx.idempotency_key})"

    @tools.register_tool
    async def notify(order: str) -> str:
        """Tell the customer about an order."""
        return f"notified about {order}"

    @tools.register_tool(destructive=True)
    def refund(order: str, ctx: ToolContext) -> str:
        """Refund an order (a person approves it first)."""
        return f"refunded {order} (key {ctx.idempotency_key})"

    return tools


def _events(run: CrashRun) -> Any:
    """Each process's events, in a file of its own (`<events>.<0 or 1>`)."""
    given = run.settings.get("events")
    if not given:
        return None
    path = f"{given}.{int(run.restarted)}"

    def on_event(event: Any) -> None:
        call = getattr(event, "call", None)
        name = type(event).__name__
        line = json.dumps([name, getattr(call, "call_id", None)])
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    return on_event


def _conversation(run: CrashRun, asynchronous: bool) -> Any:
    tools = run.tools(registry())
    store = run.store(SQLiteStore(run.settings["store"]))
    cls = AsyncConversation if asynchronous else Conversation
    client_cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    on_event = _events(run)

    def make(conversation_id: str) -> Any:
        client = client_cls(base_url=run.model_url, api_key="test", max_retries=0, timeout=20)
        return cls(
            client,
            "scripted-model",
            registry=tools,
            state_store=store,
            conversation_id=conversation_id,
            context="shop",
            parallel=bool(run.settings.get("parallel", False)),
            stream=bool(run.settings.get("stream", False)),
            on_event=on_event,
            confirm="defer",  # `refund` waits for a person's decision in the store
        )

    return make


def durable(run: CrashRun) -> Any:
    """The turn as a durable turn on DBOS; after a crash, DBOS recovers it at launch and
    the process waits for its reply."""
    from toolreg.durable import DurableTurns
    from toolreg.durable.dbos import DBOSEngine

    settings = run.settings
    asynchronous = settings.get("driver") == "async"
    beside = settings.get("beside")  # the executor id of a process that runs beside
    executor = beside if beside and run.restarted else settings.get("executor", "local")
    version = settings.get("version", "crash-tests")  # processes take only their version's
    engine = DBOSEngine(settings["db"], executor_id=executor, application_version=version)
    turns = DurableTurns(engine, "refunds", _conversation(run, asynchronous))
    engine.launch()
    cid, tid = settings["cid"], settings["tid"]
    if settings.get("approval"):  # a refund asked for, approved, and resumed
        return _approved(turns, cid, tid, run.restarted, asynchronous)
    if run.restarted:
        run.wait_for_crash()
        if beside:  # the other process died: its turns run here
            engine.recover([settings.get("executor", "local")])
        return turns.result(tid, timeout=30)
    if asynchronous:
        if settings.get("stream"):

            async def streamed() -> Any:
                async for event in turns.astream(cid, "Refund order A1", turn_id=tid):
                    last = event
                return last.reply

            return streamed()
        return turns.asend(cid, "Refund order A1", turn_id=tid)
    if settings.get("stream"):
        events = list(turns.stream(cid, "Refund order A1", turn_id=tid))
        return events[-1].reply
    return turns.send(cid, "Refund order A1", turn_id=tid)


def _approved(turns: Any, cid: str, tid: str, restarted: bool, asynchronous: bool) -> Any:
    """The turn that asks for `refund` pauses; the durable resume `tid` runs it. After a
    crash, the recovered resume's reply."""
    if restarted:
        return turns.result(tid, timeout=30)
    if asynchronous:

        async def both() -> Any:
            paused = await turns.asend(cid, "Refund order A1", turn_id=f"{tid}-ask")
            assert [p.call_id for p in paused.pending] == ["r1"], paused
            return await turns.aresume(cid, {"r1": True}, turn_id=tid)

        return both()
    paused = turns.send(cid, "Refund order A1", turn_id=f"{tid}-ask")
    assert [p.call_id for p in paused.pending] == ["r1"], paused
    return turns.resume(cid, {"r1": True}, turn_id=tid)


def plain(run: CrashRun) -> Any:
    """The turn on a plain stored conversation; after a crash the application sends the
    same message again (what a retried request does today)."""
    asynchronous = run.settings.get("driver") == "async"
    chat = _conversation(run, asynchronous)(run.settings["cid"])
    return chat.send("Refund order A1")


def pid(run: CrashRun) -> Any:
    return os.getpid()
