"""A turn killed (SIGKILL) in a child process, then finished by a new one: what ran, how often.

Run with pytest (`pytest test_durable_crashes.py`); the kit imports this file by its name
in the child processes, so the turn is written once, as the application writes it.
"""

from pathlib import Path

import openai

from toolreg import Conversation, ToolContext, ToolRegistry
from toolreg.durable import DurableTurns
from toolreg.durable.dbos import DBOSEngine
from toolreg.stores import SQLiteStore
from toolreg.testing import call, text, tool_calls
from toolreg.testing.crash import (
    CrashKit,
    CrashPoint,
    CrashReport,
    CrashRun,
    after_model_call,
    while_tool_runs,
)

MODEL = [  # the model's answers, by round: a request made again gets the same answer
    tool_calls(call("charge", {"order": "A1", "amount": 5}, id="c1")),
    text("Charged 5 for A1."),
]


def refund_turn(run: CrashRun) -> object:
    """The application, in a child process: its tools, store and engine, then one turn (or,
    after the crash, its start-up: DBOS recovers the unfinished turn; wait for its reply)."""
    tools = ToolRegistry()

    @tools.register_tool
    def charge(order: str, amount: int, ctx: ToolContext) -> str:
        """Charge a customer for an order."""
        return f"charged {amount} for {order}"

    tools = run.tools(tools)  # counted, and held where the kit kills
    store = run.store(SQLiteStore(run.settings["store"]))

    def support(conversation_id: str) -> Conversation:
        client = openai.OpenAI(base_url=run.model_url, api_key="test", max_retries=0)
        return Conversation(
            client,
            "any-model",
            registry=tools,
            state_store=store,
            conversation_id=conversation_id,
            context="support desk",
        )

    engine = DBOSEngine(run.settings["db"])
    turns = DurableTurns(engine, "support", support)
    engine.launch()
    if run.restarted:
        return turns.result("turn-1", timeout=30)
    return turns.send("chat-1", "Charge order A1", turn_id="turn-1")


def crash_at(point: CrashPoint, tmp_path: Path) -> CrashReport:
    settings = {"db": f"sqlite:///{tmp_path}/dbos.sqlite", "store": str(tmp_path / "s.sqlite")}
    kit = CrashKit(
        "test_durable_crashes:refund_turn", workdir=tmp_path, model=MODEL, settings=settings
    )
    report = kit.run(point)
    assert report.crashed
    assert report.error is None
    assert report.reply["text"] == "Charged 5 for A1."
    assert len(set(report.keys["charge"])) == 1  # one idempotency key, however many runs
    assert report.model_requests == 2  # each answer asked for once
    return report


def test_a_recorded_answer_is_not_asked_for_again(tmp_path: Path) -> None:
    report = crash_at(after_model_call(1), tmp_path)
    assert report.runs == {"charge": 1}


def test_the_call_that_was_running_runs_once_more_with_its_key(tmp_path: Path) -> None:
    report = crash_at(while_tool_runs("charge"), tmp_path)
    assert report.runs == {"charge": 2}
