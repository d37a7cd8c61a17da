"""The crash matrix: a refund turn (the model asks for `charge`, then `notify`, then answers)
killed with SIGKILL at every point (toolreg.testing.crash), on DBOS over SQLite and over a
real PostgreSQL, with the sync and the async driver; then run on in a new process.

A durable turn: every model call and tool call that completed is replayed, never made
again; the call that was running when the process died runs once more, with the same
idempotency key; the reply and the events are those of a turn that never crashed. Also: a
process running beside the one that dies (another DBOS executor on the same database)
finishes its turn; calls that run at once take their steps in the answer's order; an
approved call killed while it runs in a durable resume runs again, once, in the recovered
resume.

A plain stored conversation (what happens today without a durable engine): the turn is
lost with its process; the application's retry is a new turn, which runs every tool again,
with new keys.

Each matrix runs its cases at once (each case is two child processes that mostly wait:
DBOS polls its queue once a second), every case with its own DBOS executor id (a process
that launches recovers only its own executor's turns), its own application version (a
recovered turn is taken by any process of its version sharing the database) and, on
SQLite, its own database.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from _services import postgres  # noqa: F401 - the session fixture

from toolreg.testing import call, text, tool_calls
from toolreg.testing.crash import (
    NO_CRASH,
    CrashKit,
    CrashPoint,
    CrashReport,
    after_model_call,
    after_tool_returns,
    before_save,
    during_model_call,
    while_tool_runs,
)

pytest.importorskip("dbos", reason="the durable extra (dbos) is not installed")
pytestmark = pytest.mark.slow  # child processes: a matrix takes about 10 s

MODEL = [
    tool_calls(call("charge", {"order": "A1", "amount": 5}, id="c1")),
    tool_calls(call("notify", {"order": "A1"}, id="c2")),
    text("Refunded."),
]
PARALLEL = [
    tool_calls(
        call("charge", {"order": "A1", "amount": 5}, id="c1"),
        call("notify", {"order": "A1"}, id="c2"),
    ),
    text("Refunded."),
]
APPROVAL = [tool_calls(call("refund", {"order": "A1"}, id="r1")), text("Refunded.")]
DRIVERS = ("sync", "async")

# point -> (runs of each tool over both processes, model requests) for a durable turn
DURABLE: dict[str, tuple[CrashPoint, dict[str, int], int]] = {
    "after-model-call": (after_model_call(1), {"charge": 1, "notify": 1}, 3),
    "during-model-call": (during_model_call(1), {"charge": 1, "notify": 1}, 4),
    "while-tool-runs": (while_tool_runs("charge"), {"charge": 2, "notify": 1}, 3),
    "after-tool-returns": (after_tool_returns("charge"), {"charge": 2, "notify": 1}, 3),
    "before-save": (before_save(1), {"charge": 1, "notify": 1}, 3),
}
# ... and for a plain stored conversation whose request is retried
PLAIN: dict[str, tuple[CrashPoint, dict[str, int], int]] = {
    "after-model-call": (after_model_call(1), {"charge": 1, "notify": 1}, 4),
    "during-model-call": (during_model_call(1), {"charge": 1, "notify": 1}, 4),
    "while-tool-runs": (while_tool_runs("charge"), {"charge": 2, "notify": 1}, 4),
    "after-tool-returns": (after_tool_returns("charge"), {"charge": 2, "notify": 1}, 4),
    "before-save": (before_save(1), {"charge": 2, "notify": 2}, 6),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory for the databases: in memory (/dev/shm) where there is one (SQLite's
    syncs on a loaded disk cost a second a turn), else a temporary one."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path_factory.mktemp("crash")
        return
    folder = shm / f"toolreg-crash-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        yield folder
    finally:
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


class Case:
    """One run of the kit, with ids of its own: conversation, turn, DBOS executor, and its
    own DBOS database on SQLite."""

    def __init__(self, workdir: Path, database: str | None, scenario: str, **settings: Any):
        made = uuid.uuid4().hex[:10]
        self.events = workdir / f"events-{made}"
        if database == "sqlite":
            database = f"sqlite:///{workdir}/dbos-{made}.sqlite"
        self.settings = {
            "cid": f"chat-{made}",
            "tid": f"turn-{made}",
            "executor": f"web-{made}",
            "version": f"crash-{made}",  # a process takes recovered turns of its version only
            "events": str(self.events),
            "store": str(workdir / "store.sqlite"),
            **({} if database is None else {"db": database}),
            **settings,
        }
        self.scenario = f"_crash_scenarios:{scenario}"

    def run(
        self, workdir: Path, point: CrashPoint, model: list[Any], **options: Any
    ) -> CrashReport:
        kit = CrashKit(self.scenario, workdir=workdir, model=model, settings=self.settings)
        return kit.run(point, **options)

    def events_of(self, process: int) -> list[list[Any]]:
        path = Path(f"{self.events}.{process}")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


def all_at_once(runs: dict[str, Callable[[], CrashReport]]) -> dict[str, CrashReport]:
    """Every run, at once (threads: each waits on its child processes)."""
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(run) for name, run in runs.items()}
        return {name: future.result() for name, future in futures.items()}


def shown(reply: Any) -> Any:
    """A reply as the tests compare it: without its keys (each turn has its own)."""
    results = [
        {
            **{k: v for k, v in r.items() if k != "key"},
            "content": r["content"].replace(r["key"], "K"),
        }
        for r in reply["tool_results"]
    ]
    return {**reply, "tool_results": results}


def check(failures: dict[str, str], name: str, report: CrashReport, ok: bool, why: str) -> None:
    if not ok:
        failures[name] = f"{why}: {report!r}\n  {report.journal}"


@pytest.mark.parametrize("where", ["sqlite", "postgres"])
def test_a_durable_turn_survives_every_crash_point_running_nothing_twice(
    where: str, workdir: Path, request: pytest.FixtureRequest
) -> None:
    database = where if where == "sqlite" else request.getfixturevalue("postgres").database()
    cases: dict[str, Case] = {}
    runs: dict[str, Callable[[], CrashReport]] = {}

    def add(name: str, point: CrashPoint, model: list[Any] = MODEL, **settings: Any) -> None:
        standby = bool(settings.pop("standby", False))
        case = cases[name] = Case(workdir, database, "durable", **settings)
        runs[name] = lambda: case.run(workdir, point, model, standby=standby)

    for driver in DRIVERS:
        add(f"undisturbed/{driver}", NO_CRASH, driver=driver)
        for label, (point, _, _) in DURABLE.items():
            add(f"{label}/{driver}", point, driver=driver)
        # two processes share the database: web-2, beside, recovers web-1's turn
        add(f"beside/{driver}", while_tool_runs("notify"), driver=driver, standby=True,
            beside=f"beside-{uuid.uuid4().hex[:8]}", stream=True)  # fmt: skip
        # two calls of one answer at once: they take their steps in the answer's order
        add(f"parallel/{driver}", after_tool_returns("notify"), PARALLEL, driver=driver,
            parallel=True)  # fmt: skip
        # an approved call, killed while it runs in the durable resume: the resume recovered
        add(f"approval/{driver}", while_tool_runs("refund"), APPROVAL, driver=driver,
            approval=True)  # fmt: skip
    reports = all_at_once(runs)

    failures: dict[str, str] = {}
    for driver in DRIVERS:
        base = reports[f"undisturbed/{driver}"]
        base_events = cases[f"undisturbed/{driver}"].events_of(0)
        check(failures, f"undisturbed/{driver}", base, base.error is None and not base.crashed
              and base.runs == {"charge": 1, "notify": 1}, "ran once, to its end")  # fmt: skip
        for label, (_, runs_wanted, requests) in DURABLE.items():
            name = f"{label}/{driver}"
            report = reports[name]
            if not report.crashed or report.error is not None:
                check(failures, name, report, False, "crashed, then finished")
                continue
            # completed calls replayed, never made again; the interrupted one once more
            check(failures, name, report, report.runs == runs_wanted, f"runs {runs_wanted}")
            check(failures, name, report, report.model_requests == requests, f"{requests} requests")
            # ... with the same idempotency key
            one_key = all(len(set(keys)) == 1 for keys in report.keys.values())
            check(failures, name, report, one_key, "one key per call")
            # the same reply, and the same events, as the turn that never crashed
            same = shown(report.reply) == shown(base.reply)
            check(failures, name, report, same, "the undisturbed turn's reply")
            events = cases[name].events_of(1) == base_events
            check(failures, name, report, events, f"the undisturbed turn's events {base_events}")
        beside = reports[f"beside/{driver}"]
        pids = {e["pid"] for e in beside.journal if e["ev"] == "start" and e["tool"] == "notify"}
        check(failures, f"beside/{driver}", beside, beside.crashed and beside.error is None
              and beside.runs == {"charge": 1, "notify": 2} and len(pids) == 2
              and len(set(beside.keys["notify"])) == 1 and beside.reply["text"] == "Refunded.",
              "notify again in the process beside, with its key")  # fmt: skip
        parallel = reports[f"parallel/{driver}"]
        contents = [
            r["content"].split(" (")[0] for r in (parallel.reply or {}).get("tool_results", [])
        ]
        check(failures, f"parallel/{driver}", parallel, parallel.crashed and parallel.error is None
              and parallel.runs.get("notify") == 2 and parallel.runs.get("charge") in (1, 2)
              and all(len(set(k)) == 1 for k in parallel.keys.values())
              and contents == ["charged 5 for A1", "notified about A1"]
              and parallel.model_requests == 2, "the answer's calls, each at its step")  # fmt: skip
        approval = reports[f"approval/{driver}"]
        check(failures, f"approval/{driver}", approval, approval.crashed
              and approval.error is None and approval.runs == {"refund": 2}
              and len(set(approval.keys["refund"])) == 1 and approval.model_requests == 2
              and (approval.reply or {}).get("text") == "Refunded.",
              "the approved call again in the recovered resume, with its key")  # fmt: skip
    assert not failures, "\n".join(f"{name}: {why}" for name, why in failures.items())


def test_a_plain_stored_conversation_loses_the_turn_and_its_retry_runs_the_tools_again(
    workdir: Path,
) -> None:
    """What happens today without a durable engine: the state store keeps the history from
    before the turn; the application's retry is a new turn, whose keys are new."""
    cases = {
        f"{label}/{driver}": (Case(workdir, None, "plain", driver=driver), point)
        for label, (point, _, _) in PLAIN.items()
        for driver in DRIVERS
    }
    reports = all_at_once(
        {
            name: (lambda c=case, p=point: c.run(workdir, p, MODEL))
            for name, (case, point) in cases.items()
        }
    )
    failures: dict[str, str] = {}
    for name, report in reports.items():
        _, runs_wanted, requests = PLAIN[name.split("/")[0]]
        check(
            failures, name, report, report.crashed and report.error is None, "crashed, then retried"
        )
        check(failures, name, report, report.runs == runs_wanted, f"runs {runs_wanted}")
        check(failures, name, report, report.model_requests == requests, f"{requests} requests")
        new_keys = all(len(set(keys)) == len(keys) for keys in report.keys.values())
        check(failures, name, report, new_keys, "a run again has a new key (a new turn)")
        check(failures, name, report, (report.reply or {}).get("text") == "Refunded.", "the answer")
    assert not failures, "\n".join(f"{name}: {why}" for name, why in failures.items())
