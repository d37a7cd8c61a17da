"""A tool that asks the user (`ctx.ask`) in a durable turn, on DBOS over SQLite: the turn
ends its workflow and the question waits in the store, durably (no workflow, thread or
connection held while the user answers); `resume` with the answer is another durable turn,
from any process. A turn replayed from its record pauses at the same question."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from test_durable_turns import engine, folder, new_id, replayed  # noqa: F401 (fixtures)

from toolreg import ToolContext, ToolRegistry
from toolreg.conversation import Conversation
from toolreg.stores import SQLiteStore
from toolreg.testing import ScriptedServer, text, tool_call

dbos = pytest.importorskip("dbos", reason="the durable extra (dbos) is not installed")

from toolreg.durable import DurableTurns  # noqa: E402
from toolreg.durable.dbos import DBOSEngine  # noqa: E402
from toolreg.durable.payloads import reply_json  # noqa: E402

NIGHT = {"type": "object", "properties": {"night": {"type": "string"}}, "required": ["night"]}


class Hotel:
    def __init__(self, where: Path) -> None:
        self.runs: list[tuple[str, str | None]] = []
        self.tools = ToolRegistry()
        self.store = SQLiteStore(where / "store.sqlite")

        @self.tools.register_tool
        def book(room: str, ctx: ToolContext[Any]) -> str:
            """Book a room; asks which night."""
            answer = ctx.ask(f"Which night for room {room}?", NIGHT)
            self.runs.append((answer.action, ctx.idempotency_key))
            return f"booked {room} for {(answer.data or {}).get('night')}"


@pytest.fixture
def hotel(tmp_path: Path) -> Hotel:
    return Hotel(tmp_path)


def turns_for(engine: DBOSEngine, hotel: Hotel, server: ScriptedServer) -> DurableTurns:  # noqa: F811
    def make(conversation_id: str) -> Conversation:
        return Conversation(
            server.client(),
            "scripted-model",
            registry=hotel.tools,
            state_store=hotel.store,
            conversation_id=conversation_id,
            context={},
        )

    return DurableTurns(engine, f"ask-{uuid.uuid4().hex[:10]}", make)


def test_a_question_waits_in_the_store_and_a_durable_resume_answers_it(
    engine: DBOSEngine,  # noqa: F811
    hotel: Hotel,
) -> None:
    script = [tool_call("book", {"room": "12"}, id="b1"), text("Booked.")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, hotel, server)
        cid = new_id("chat")
        paused = turns.send(cid, "Book room 12")
        assert paused.stop_reason == "input_required"
        (pending,) = paused.pending
        assert pending.question == "Which night for room 12?"
        assert pending.schema == NIGHT
        stored = hotel.store.load(cid)
        assert stored is not None
        assert stored.state["pending"][0]["question"] == "Which night for room 12?"
        done = turns.resume(cid, {"b1": {"night": "2026-12-24"}})
    assert done.text == "Booked."
    assert hotel.runs == [("accept", pending.idempotency_key)]


def test_a_turn_replayed_from_its_record_pauses_at_the_same_question(
    engine: DBOSEngine,  # noqa: F811
    hotel: Hotel,
) -> None:
    """From its save on: the tool's step is replayed from the record (the tool does not run
    again), and the recorded run still stops at its question."""
    script = [tool_call("book", {"room": "12"}, id="b1")]
    with ScriptedServer(script) as server:
        turns = turns_for(engine, hotel, server)
        cid, tid = new_id("chat"), new_id("turn")
        first = turns.send(cid, "Book room 12", turn_id=tid)
        again = turns.result(replayed(engine, tid, "store save"), timeout=30)
        same = turns.result(tid, timeout=30)  # the recorded reply, read back
    assert again.stop_reason == first.stop_reason == "input_required"
    assert again.pending[0].question == first.pending[0].question == "Which night for room 12?"
    assert reply_json(again) == reply_json(first) == reply_json(same)
    assert same.pending[0].schema == NIGHT
    assert hotel.runs == []  # stopped at the question, each time; never run to the end
