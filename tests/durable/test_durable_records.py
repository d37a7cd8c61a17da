"""What an engine hands back is data from storage: a recorded step's output, or a turn's,
whatever it holds, replays as the turn it was or stops with `DurableReplayError`; never a
crash of another kind, never a made-up result.

The engine here is a small one of the test's own, through the public protocol
(`toolreg.durable.DurableEngine`): it records each step's output by name, and replays a
turn from that record with one step's output changed the way hypothesis draws.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg import ToolContext, ToolRegistry
from toolreg.conversation import Conversation
from toolreg.durable import DurableEngine, DurableReplayError, DurableTurns, TurnBody
from toolreg.errors import ToolregError
from toolreg.stores import SQLiteStore
from toolreg.testing import ScriptedServer, text, tool_call

Json = Any


class _Step:
    def __init__(self, engine: RecordingEngine, name: str) -> None:
        self.engine, self.name = engine, name

    def run(self, inputs: Json, work: Callable[[], Json]) -> Json:
        if self.name in self.engine.replay:
            return copy.deepcopy(self.engine.replay[self.name])
        output = work()
        self.engine.record[self.name] = copy.deepcopy(output)
        return output

    async def arun(self, inputs: Json, work: Callable[[], Awaitable[Json]]) -> Json:
        if self.name in self.engine.replay:
            return copy.deepcopy(self.engine.replay[self.name])
        output = await work()
        self.engine.record[self.name] = copy.deepcopy(output)
        return output


class RecordingEngine:
    """Steps recorded by name in a dict; a turn replays from `replay` (a test's engine)."""

    name = "recording"

    def __init__(self) -> None:
        self.bodies: dict[str, TurnBody] = {}
        self.record: dict[str, Json] = {}
        self.replay: dict[str, Json] = {}
        self.outputs: dict[str, Json] = {}
        self.inputs: dict[str, Json] = {}

    def bind(self, name: str, body: TurnBody) -> None:
        self.bodies[name] = body

    def run_turn(self, name: str, turn_id: str, inputs: Json) -> Json:
        self.inputs[turn_id] = copy.deepcopy(inputs)
        self.outputs[turn_id] = out = self.bodies[name].run_turn(inputs)
        return out

    async def arun_turn(self, name: str, turn_id: str, inputs: Json) -> Json:
        self.inputs[turn_id] = copy.deepcopy(inputs)
        self.outputs[turn_id] = out = await self.bodies[name].arun_turn(inputs)
        return out

    def step(self, name: str) -> _Step:
        return _Step(self, name)

    def result(self, turn_id: str, *, timeout: float | None = None) -> Json:
        return copy.deepcopy(self.outputs[turn_id])

    def rerun(self, name: str, turn_id: str, replay: dict[str, Json]) -> None:
        """Run the turn again (as a recovered workflow does), its steps from `replay`."""
        self.replay = replay
        try:
            self.run_turn(name, turn_id, self.inputs[turn_id])
        finally:
            self.replay = {}


ran: list[str | None] = []
tools = ToolRegistry()


@tools.register_tool
def charge(order: str, amount: int, ctx: ToolContext) -> str:
    """Charge a customer for an order."""
    ran.append(ctx.idempotency_key)
    return f"charged {amount} for {order}"


SCRIPT = [tool_call("charge", {"order": "A1", "amount": 5}, id="c1"), text("Charged.")]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One turn, recorded: the engine, its turns, the server, the store's folder."""
    folder = tmp_path_factory.mktemp("records")
    store = SQLiteStore(folder / "store.sqlite")
    server = ScriptedServer(SCRIPT * 200)  # steps the mutations make run again ask too
    server.__enter__()
    engine = RecordingEngine()

    def make(conversation_id: str) -> Conversation:
        return Conversation(
            server.client(),
            "scripted-model",
            registry=tools,
            state_store=store,
            conversation_id=conversation_id,
            context="shop",
        )

    assert isinstance(engine, DurableEngine)
    turns = DurableTurns(engine, "records", make)
    first = turns.send("chat-0", "Charge A1", turn_id="turn-0")
    assert first.text == "Charged."
    yield engine, turns, dict(engine.record), first
    server.__exit__(None, None, None)


def test_a_turn_replayed_from_its_record_runs_nothing_and_gives_the_same_reply(
    recorded: Any,
) -> None:
    engine, turns, record, first = recorded
    assert sorted(record) == [
        "model 1",
        "model 2",
        "store load 1",
        "store save 2",
        "tool charge c1",
    ]
    before = len(ran)
    engine.rerun("records", "turn-0", record)
    again = turns.result("turn-0")
    assert len(ran) == before  # the tool did not run again
    assert again.text == first.text
    assert [r.content for r in again.tool_results] == [r.content for r in first.tool_results]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    step=st.sampled_from(["model 1", "model 2", "store load 1", "store save 2", "tool charge c1"]),
    field=st.sampled_from(
        ["answer", "deltas", "tools", "tool", "result", "raised", "found", "version", None]
    ),
    value=json_values,
)
def test_a_recorded_output_changed_in_any_way_replays_or_is_refused(
    recorded: Any, step: str, field: str | None, value: Json
) -> None:
    engine, turns, record, _ = recorded
    replay = copy.deepcopy(record)
    if field is None:
        replay[step] = value  # the whole output
    else:
        replay[step] = {**replay[step], field: value}  # one field, the digest kept
    refused: DurableReplayError | None = None
    try:
        engine.rerun("records", "turn-0", replay)
        turns.result("turn-0")
    except DurableReplayError as exc:
        refused = exc
    except ToolregError:
        pass  # a conversation error the replayed data leads to (a bad call, say): toolreg's
    if refused is not None:
        assert refused.turn_id == "turn-0"
        assert "Traceback" not in str(refused)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values)
def test_a_turns_recorded_reply_is_read_or_refused(recorded: Any, value: Json) -> None:
    engine, turns, _, _ = recorded
    engine.outputs["stored"] = value
    try:
        reply = turns.result("stored")
    except DurableReplayError as exc:
        refused: DurableReplayError | None = exc
    else:
        refused = None
        assert isinstance(reply.text, str)
    assert refused is None or refused.step == "reply"


def test_the_test_engine_is_a_durable_engine(tmp_path: Path) -> None:
    assert isinstance(RecordingEngine(), DurableEngine)
