"""Durable turns in one process, on DBOS over SQLite: what a turn records and replays.

A replay without a crash: `DBOS.fork_workflow(turn, step)` runs a turn again as a new
workflow whose steps before `step` are the recorded ones (the way a recovered turn replays
them); its steps from `step` on run again. The crash matrix (tests/durable/test_durable_crash.py)
kills real processes; here each behaviour is checked on its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolreg import ToolContext, ToolRegistry
from toolreg.conversation import (
    AsyncConversation,
    Conversation,
    TextDelta,
    ToolCallReady,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from toolreg.errors import ConversationError, StateConflictError, UsageError
from toolreg.idempotency import idempotency_key
from toolreg.stores import SQLiteStore
from toolreg.testing import ScriptedServer, call, error, text, tool_call, tool_calls

dbos = pytest.importorskip("dbos", reason="the durable extra (dbos) is not installed")

from toolreg.durable import DurableReplayError, DurableTurns  # noqa: E402
from toolreg.durable.dbos import DBOSEngine  # noqa: E402
from toolreg.durable.payloads import reply_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """In memory (/dev/shm) where there is one: SQLite's syncs on a loaded disk are slow."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path_factory.mktemp("durable")
        return
    made = shm / f"toolreg-durable-{uuid.uuid4().hex[:8]}"
    made.mkdir()
    try:
        yield made
    finally:
        for item in made.iterdir():
            item.unlink()
        made.rmdir()


@pytest.fixture(scope="module")
def engine(folder: Path) -> Iterator[DBOSEngine]:
    made = DBOSEngine(f"sqlite:///{folder}/dbos.sqlite", application_version="durable-tests")
    made.launch()
    try:
        yield made
    finally:
        made.shutdown()


class Shop:
    """Tools that count their runs, and a store."""

    def __init__(self, folder: Path) -> None:
        self.ran: list[tuple[str, str | None]] = []
        self.tools = ToolRegistry()
        self.store = SQLiteStore(folder / "store.sqlite")

        @self.tools.register_tool
        def charge(order: str, amount: int, ctx: ToolContext) -> str:
            """Charge a customer for an order."""
            self.ran.append(("charge", ctx.idempotency_key))
            return f"charged {amount} for {order}"

        @self.tools.register_tool(destructive=True)
        def refund(order: str, ctx: ToolContext) -> dict[str, Any]:
            """Refund an order."""
            self.ran.append(("refund", ctx.idempotency_key))
            return {"refunded": order}

        @self.tools.register_tool(read_only=True)
        def lookup(order: str) -> object:
            """Look an order up."""
            self.ran.append(("lookup", None))
            return {order}  # not JSON: replayed as None


@pytest.fixture
def shop(folder: Path) -> Shop:
    return Shop(folder)


def turns_for(
    engine: DBOSEngine,
    shop: Shop,
    server: ScriptedServer,
    *,
    asynchronous: bool = False,
    **options: Any,
) -> DurableTurns:
    """DurableTurns of a name of their own (DBOS is one per process, and so are names)."""

    def make(conversation_id: str) -> Any:
        cls = AsyncConversation if asynchronous else Conversation
        client = server.async_client() if asynchronous else server.client()
        return cls(
            client,
            "scripted-model",
            registry=shop.tools,
            state_store=shop.store,
            conversation_id=conversation_id,
            context="shop",
            **options,
        )

    return DurableTurns(engine, f"t-{uuid.uuid4().hex[:10]}", make)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def replayed(engine: DBOSEngine, turn_id: str, step: str) -> str:
    """Run the turn again from its first step named `step` (the ones before replayed): the
    new workflow's id."""
    steps = dbos.DBOS.list_workflow_steps(turn_id)
    start = next(s["function_id"] for s in steps if s["function_name"].startswith(step))
    return str(dbos.DBOS.fork_workflow(turn_id, start).workflow_id)


# -- a turn ---------------------------------------------------------------------------------


def test_a_durable_send_runs_each_call_once_with_the_turns_key(
    engine: DBOSEngine, shop: Shop
) -> None:
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        reply = turns.send(cid, "Charge A1", turn_id=tid)
    assert reply.text == "Charged."
    assert reply.stop_reason == "answer"
    key = idempotency_key(cid, tid, "c1", "charge", '{"order": "A1", "amount": 5}')
    assert shop.ran == [("charge", key)]  # the turn's id is the keys' turn id
    assert reply.tool_results[0].idempotency_key == key
    stored = shop.store.load(cid)
    assert stored is not None
    assert stored.state["messages"][-1]["content"] == "Charged."
    steps = [s["function_name"] for s in dbos.DBOS.list_workflow_steps(tid)]
    assert steps == ["store load 1", "model 1", "tool charge c1", "model 2", "store save 2"]


def test_the_same_turn_id_runs_nothing_again_and_gives_the_same_reply(
    engine: DBOSEngine, shop: Shop
) -> None:
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        first = turns.send(cid, "Charge A1", turn_id=tid)
        again = turns.send(cid, "Charge A1", turn_id=tid)  # a retried request
        later = turns.result(tid)
        assert len(server.requests) == 2
    assert len(shop.ran) == 1
    assert reply_json(again) == reply_json(first) == reply_json(later)


def test_a_replayed_turn_makes_no_model_call_and_runs_no_tool_again(
    engine: DBOSEngine, shop: Shop
) -> None:
    """Replayed from its save: every model call and tool call comes from the record; the
    save, made again, finds the state it wrote (the process died after the write, before
    DBOS recorded it) instead of failing on the version."""
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        first = turns.send(cid, "Charge A1", turn_id=tid)
        again = turns.result(replayed(engine, tid, "store save"), timeout=30)
        assert len(server.requests) == 2
    assert len(shop.ran) == 1
    assert reply_json(again) == reply_json(first)
    assert shop.store.load(cid).version == 1  # type: ignore[union-attr]


def test_a_replayed_call_runs_again_with_its_key(engine: DBOSEngine, shop: Shop) -> None:
    """From the tool's step on: the call was not recorded (it was running), so it runs once
    more, with the same idempotency key."""
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer([*script, text("Charged.")]) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        turns.send(cid, "Charge A1", turn_id=tid)
        shop.store.delete(cid)  # (the fork's save starts from the state it loaded)
        turns.result(replayed(engine, tid, "tool charge"), timeout=30)
    assert [name for name, _ in shop.ran] == ["charge", "charge"]
    assert shop.ran[0][1] == shop.ran[1][1]


def test_a_tool_changed_since_its_step_was_recorded_is_a_replay_error(
    engine: DBOSEngine, shop: Shop
) -> None:
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        turns.send(cid, "Charge A1", turn_id=tid)

        @shop.tools.register_tool(replace=True)  # type: ignore[call-overload]
        def charge(order: str, amount: int, ctx: ToolContext) -> str:
            """Charge a customer for an order, in cents."""
            return "not run"

        forked = replayed(engine, tid, "store save")
        with pytest.raises(
            DurableReplayError, match="the tool 'charge' has changed its definition"
        ):
            turns.result(forked, timeout=30)


def test_another_prompt_than_the_recorded_one_is_a_replay_error(
    engine: DBOSEngine, shop: Shop, folder: Path
) -> None:
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        turns.send(cid, "Charge A1", turn_id=tid)
        turns.factory = lambda c: Conversation(  # the application now says something else
            server.client(), "scripted-model", registry=shop.tools, state_store=shop.store,
            conversation_id=c, context="shop", system="Be terse.",
        )  # fmt: skip
        forked = replayed(engine, tid, "store save")
        with pytest.raises(
            DurableReplayError, match="step 'model 1' was recorded for other inputs"
        ):
            turns.result(forked, timeout=30)


def test_recorded_outputs_toolreg_did_not_write_are_refused(
    engine: DBOSEngine, shop: Shop, folder: Path
) -> None:
    """A step's row edited in the database (its inputs' digest kept) is data from storage,
    checked as it is read: a `DurableReplayError`, never a crash or a made-up result."""
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        cid, tid = new_id("chat"), new_id("turn")
        turns.send(cid, "Charge A1", turn_id=tid)
        with sqlite3.connect(folder / "dbos.sqlite") as db:
            where = "workflow_uuid = ? and function_name = 'tool charge c1'"
            (output,) = db.execute(
                f"select output from operation_outputs where {where}", (tid,)
            ).fetchone()
            payload = json.loads(output)
            payload["result"] = {"tool_name": 7, "ok": "yes"}
            db.execute(
                f"update operation_outputs set output = ? where {where}", (json.dumps(payload), tid)
            )
        forked = replayed(engine, tid, "store save")
        with pytest.raises(DurableReplayError, match="not one toolreg wrote: its result has no"):
            turns.result(forked, timeout=30)
    assert len(shop.ran) == 1


# -- approvals ------------------------------------------------------------------------------


def test_a_durable_turn_waits_for_approval_in_the_store_and_resumes_once(
    engine: DBOSEngine, shop: Shop
) -> None:
    script = [tool_call("refund", {"order": "A1"}, id="r1"), text("Refunded.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server, confirm="defer")
        cid = new_id("chat")
        paused = turns.send(cid, "Refund A1")
        assert paused.stop_reason == "approval_required"
        assert shop.ran == []
        assert [p.call_id for p in paused.pending] == ["r1"]
        # the pending call waits in the store: no workflow runs meanwhile
        assert shop.store.load(cid).state["status"] == "approval_required"  # type: ignore[union-attr]
        done = turns.resume(cid, {"r1": True})
        assert done.text == "Refunded."
        with pytest.raises(StateConflictError, match="no call waiting for approval"):
            turns.resume(cid, {"r1": True})  # resumed already (by any process)
    assert [name for name, _ in shop.ran] == ["refund"]
    assert shop.ran[0][1] == paused.pending[0].idempotency_key


def test_decisions_of_a_durable_resume_must_be_json(engine: DBOSEngine, shop: Shop) -> None:
    with ScriptedServer([]) as server:
        turns = turns_for(engine, shop, server, confirm="defer")
        with pytest.raises(UsageError, match="the decisions must be JSON"):
            turns.resume("chat-1", {"r1": object()})


# -- streams, async -------------------------------------------------------------------------


def test_a_durable_stream_gives_the_turns_events_as_they_come(
    engine: DBOSEngine, shop: Shop
) -> None:
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged in full.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server, stream=True)
        events = list(turns.stream(new_id("chat"), "Charge A1"))
    kinds = [type(e).__name__ for e in events]
    assert kinds[:3] == ["ToolCallReady", "ToolStarted", "ToolFinished"]
    assert kinds[-1] == "TurnFinished"
    assert "TextDelta" in kinds
    text_seen = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text_seen == "Charged in full." == events[-1].reply.text  # type: ignore[attr-defined]


def test_a_reader_that_stops_stops_its_events_not_the_turn(engine: DBOSEngine, shop: Shop) -> None:
    script = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        tid = new_id("turn")
        events = turns.stream(new_id("chat"), "Charge A1", turn_id=tid)
        assert isinstance(next(events), ToolCallReady)
        events.close()  # type: ignore[attr-defined]
        assert turns.result(tid, timeout=30).text == "Charged."
    assert len(shop.ran) == 1


def test_calls_do_not_start_while_a_durable_answer_streams(engine: DBOSEngine, shop: Shop) -> None:
    """Eager start is off in a durable turn: a call starts once its answer is recorded."""
    script = [tool_calls(call("lookup", {"order": "A1"}, id="l1")), text("Found.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server, stream=True, eager_tools=True)
        events = list(turns.stream(new_id("chat"), "Find A1"))
    ready = [e for e in events if isinstance(e, ToolCallReady)]
    assert [e.early for e in ready] == [False]


def test_a_value_that_is_not_json_comes_back_as_none_from_the_record(
    engine: DBOSEngine, shop: Shop
) -> None:
    script = [tool_calls(call("lookup", {"order": "A1"}, id="l1")), text("Found.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, shop, server)
        tid = new_id("turn")
        live = turns.send(new_id("chat"), "Find A1", turn_id=tid)
        recorded = turns.result(tid)
    assert live.tool_results[0].value == {"A1"}  # the live result, in this process
    assert recorded.tool_results[0].value is None
    assert recorded.tool_results[0].content == live.tool_results[0].content


def test_an_async_durable_turn_sends_streams_and_resumes(engine: DBOSEngine, shop: Shop) -> None:
    script = [
        tool_call("charge", {"order": "A1", "amount": 5}, id="c1"),
        text("Charged."),
        tool_call("refund", {"order": "A1"}, id="r1"),
        text("Refunded."),
    ]

    async def turn() -> None:
        with ScriptedServer(script) as server:
            turns = turns_for(engine, shop, server, asynchronous=True, confirm="defer", stream=True)
            cid = new_id("chat")
            events = [e async for e in turns.astream(cid, "Charge A1")]
            assert isinstance(events[-1], TurnFinished)
            assert events[-1].reply.text == "Charged."
            assert any(isinstance(e, ToolStarted) for e in events)
            paused = await turns.asend(cid, "Refund A1")
            assert paused.stop_reason == "approval_required"
            resumed = [e async for e in turns.astream_resume(cid, {"r1": True})]
            assert isinstance(resumed[-1], TurnFinished)
            assert resumed[-1].reply.text == "Refunded."
            assert any(isinstance(e, ToolFinished) for e in resumed)

    asyncio.run(turn())
    assert [name for name, _ in shop.ran] == ["charge", "refund"]


# -- failures and mistakes ------------------------------------------------------------------


def test_a_failed_model_call_fails_the_turn_and_its_record_says_so(
    engine: DBOSEngine, shop: Shop
) -> None:
    with ScriptedServer([error(500, "down")]) as server:
        turns = turns_for(engine, shop, server)
        tid = new_id("turn")
        with pytest.raises(ConversationError, match="down"):
            turns.send(new_id("chat"), "Charge A1", turn_id=tid)
        with pytest.raises(ConversationError, match="down"):  # read back from the record
            turns.result(tid)


def test_usage_mistakes_are_refused_naming_the_fix(engine: DBOSEngine, shop: Shop) -> None:
    with ScriptedServer([]) as server:
        with pytest.raises(UsageError, match="not a DurableEngine"):
            DurableTurns(object(), "x", lambda c: None)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="1 to 64 letters"):
            DurableTurns(engine, "no spaces", lambda c: None)
        with pytest.raises(UsageError, match="is not callable"):
            DurableTurns(engine, new_id("t"), "factory")  # type: ignore[arg-type]
        turns = turns_for(engine, shop, server)
        with pytest.raises(UsageError, match="bound in this process already"):
            DurableTurns(engine, turns.name, lambda c: None)
        with pytest.raises(UsageError, match="turn_id="):
            turns.send("chat-1", "hi", turn_id="no spaces")
        with pytest.raises(UsageError, match="takes the user's text as a str"):
            turns.send("chat-1", 5)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="output_types="):
            turns.send("chat-1", "hi", output_type=int)

        plain = DurableTurns(engine, new_id("t"), lambda c: Conversation(server.client(), "m"))
        with pytest.raises(UsageError, match="state_store= and conversation_id='chat-2'"):
            plain.send("chat-2", "hi")
        with pytest.raises(UsageError, match="must build an AsyncConversation"):
            asyncio.run(turns.asend("chat-3", "hi"))


def test_dbos_engine_needs_the_durable_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dbos", None)
    with pytest.raises(UsageError, match=r"pip install 'toolreg\[durable\]'"):
        DBOSEngine("sqlite:///unused.sqlite")


def test_importing_toolreg_durable_imports_no_engine() -> None:
    code = (
        "import sys, toolreg.durable; print(sorted(m for m in sys.modules if m.startswith('dbos')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
