"""Real processes racing to resume the same stored pending approval: the refund runs once.

Each worker is a separate Python process (tests/_store_worker.py) with its own store
connection, as app servers behind a load balancer are; they wait at a gate and resume
together. The refund writes a line to a file each time it runs: exactly one line, one
winner, and every other worker told why (`StateConflictError`).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from _store_support import redis_url  # noqa: F401 - the session fixture

from toolreg import Conversation, StateConflictError, ToolRegistry
from toolreg.stores import RedisStore, SQLiteStore
from toolreg.testing import ScriptedServer, text, tool_call

WORKER = Path(__file__).parents[1] / "_store_worker.py"
KEY = b"p" * 32  # the worker's
WORKERS = 3
pytestmark = pytest.mark.slow  # a few Python processes per test


def pause(server: ScriptedServer, store: Any) -> None:
    """Request 1: the model asks for a refund, the turn stops for approval and is stored."""
    registry = ToolRegistry()

    @registry.register_tool(destructive=True)
    def refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        raise AssertionError("not here: the workers run it")

    chat = Conversation(
        server.client(),
        "scripted-model",
        registry=registry,
        confirm="defer",
        state_store=store,
        conversation_id="c1",
        key=KEY,
    )
    assert chat.send("Refund A1").stop_reason == "approval_required"


def race(
    where: str, server: ScriptedServer, ran: Path, *extra: str, count: int = WORKERS
) -> list[str]:
    """Start `count` workers, let them all resume at once; what each one printed."""
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), where, server.base_url, str(ran), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            line = worker.stdout.readline()
            assert line == "ready\n", worker.communicate()[1][-2000:]
        for worker in workers:  # the gate opens for all
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        return [worker.communicate(timeout=60)[0].strip() for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def refunds(ran: Path) -> list[str]:
    return ran.read_text(encoding="utf-8").splitlines() if ran.exists() else []


def check_once(outcomes: list[str], ran: Path) -> None:
    won = [o for o in outcomes if o.startswith("won: ")]
    lost = [o for o in outcomes if o.startswith("lost: ")]
    assert won == ["won: Done."], outcomes
    assert len(lost) == len(outcomes) - 1, outcomes
    assert all(o.startswith("lost: StateConflictError: conversation 'c1'") for o in lost), lost
    assert [line.split()[1:] for line in refunds(ran)] == [["A1", "20"]]


def test_processes_resuming_one_approval_over_sqlite_run_it_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "states.db")
    ran = tmp_path / "refunds.txt"
    with ScriptedServer([tool_call("refund", order_id="A1", amount=20), text("Done.")]) as server:
        pause(server, store)
        outcomes = race(f"sqlite|{store.path}", server, ran)
        server.assert_all_consumed()
    check_once(outcomes, ran)
    assert store.load("c1").state["status"] == "ready"


def test_processes_resuming_one_approval_over_redis_run_it_once(
    tmp_path: Path,
    redis_url: str,  # noqa: F811
) -> None:
    prefix = f"p{uuid.uuid4().hex}:"
    store = RedisStore(redis_url, prefix=prefix)
    ran = tmp_path / "refunds.txt"
    with ScriptedServer([tool_call("refund", order_id="A1", amount=20), text("Done.")]) as server:
        pause(server, store)
        outcomes = race(f"redis|{redis_url}|{prefix}", server, ran)
        server.assert_all_consumed()
    check_once(outcomes, ran)
    assert store.load("c1").state["status"] == "ready"
    store.close()


def test_a_process_that_dies_mid_resume_leaves_the_approval_used(tmp_path: Path) -> None:
    """The worker is killed inside the refund: the refund ran (once); no later resume runs
    it again, and the error says what happened."""
    store = SQLiteStore(tmp_path / "states.db")
    ran = tmp_path / "refunds.txt"
    with ScriptedServer([tool_call("refund", order_id="A1", amount=20)]) as server:
        pause(server, store)
        assert race(f"sqlite|{store.path}", server, ran, "crash", count=1) == [""]
        assert len(refunds(ran)) == 1
        later = race(f"sqlite|{store.path}", server, ran, count=2)
        chat = Conversation(server.client(), "m", state_store=store, conversation_id="c1", key=KEY)
        with pytest.raises(StateConflictError, match="did not finish"):
            chat.send("hello?")
        server.assert_all_consumed()
    assert all("a resume of it did not finish" in o for o in later), later
    assert all(o.startswith("lost: StateConflictError") for o in later), later
    assert len(refunds(ran)) == 1
