"""MCP tasks shared by real processes: `toolreg serve --workers 4 --tasks redis://...` and a
second `toolreg serve` on another port, on one real `redis-server`; a worker killed with
SIGKILL while its task runs; every worker restarted. (The same behaviour with two servers
in one process, and the rest of it, is in test_mcp_tasks_shared.py.)"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from _mcp_support import HttpChild, serve_command
from _store_support import redis_url  # noqa: F401 - the session fixture
from test_mcp_tasks import Rpc, started, text
from test_mcp_tasks_shared import ASKS, lines, runs, status_message

from toolreg.mcp.tasks import LOST_MESSAGE, task_key

pytestmark = pytest.mark.slow

TOOLS = "tests/_task_tools.py:registry"


def serving(url: str, queue: str, *options: str) -> HttpChild:
    command = serve_command(TOOLS, "--transport", "http", "--port", "0", *options)
    return HttpChild(*command, "--tasks", url, "--tasks-queue", queue, "--tasks-reclaim", "1")


@pytest.fixture(scope="module")
def servers(redis_url: str) -> Iterator[tuple[HttpChild, HttpChild]]:  # noqa: F811
    """Four workers on one port, one more process on another, one queue."""
    queue = uuid.uuid4().hex
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # they start side by side
        starting = [
            pool.submit(serving, redis_url, queue, "--workers", "4"),
            pool.submit(serving, redis_url, queue),
        ]
    with starting[0].result() as four, starting[1].result() as one:
        ready(four, 4)
        ready(one, 1)
        yield four, one


def ready(child: HttpChild, workers: int) -> None:
    """Wait until `workers` worker processes answer (each imports everything first)."""
    answered: set[str] = set()
    deadline = time.monotonic() + 120
    while len(answered) < workers and time.monotonic() < deadline:
        with contextlib.suppress(httpx2.HTTPError):
            rpc = fresh(child)
            answer = rpc("tools/call", {"name": "double", "arguments": {"x": 0}}, capabilities={})
            answered.add(answer["result"]["content"][0]["text"])
    assert len(answered) == workers, answered


def fresh(child: HttpChild) -> Rpc:
    """A client on a new connection (so the kernel may hand it to any of the workers)."""
    return Rpc(child.url)


def gone(pid: int) -> bool:
    """Whether the process `pid` has died (a zombie not yet reaped counts)."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status", encoding="ascii") as status:
        return any(line.split() == ["State:", "Z", "(zombie)"] for line in status)
    return True


def test_any_worker_of_any_process_reads_answers_and_cancels_any_task(
    servers: tuple[HttpChild, HttpChild], tmp_path: Path
) -> None:
    four, one = servers
    created = {x: started(fresh(four), "double", {"x": x}) for x in range(8)}
    ran_in = set()
    for x, task_id in created.items():
        done = fresh(one).until(task_id, "completed")
        value, _, pid = text(done["result"]).partition(" by ")
        assert value == str(2 * x)
        ran_in.add(pid)
        assert fresh(four).get(task_id)["result"]["result"] == done["result"]
    assert len(ran_in) > 1  # the runs were spread over the workers

    asked = started(fresh(one), "wipe", {"disk": "sda"}, capabilities=ASKS)
    ((key, _),) = fresh(four).until(asked, "input_required")["inputRequests"].items()
    confirm = {key: {"action": "accept", "content": {"confirm": True}}}
    fresh(four)("tasks/update", {"taskId": asked, "inputResponses": confirm}, capabilities=ASKS)
    assert text(fresh(one).until(asked, "completed")["result"]).startswith("wiped sda by ")

    charging = started(fresh(one), "charge", {"folder": str(tmp_path)})
    status_message(fresh(four), charging, "1: pid ")
    fresh(four)("tasks/cancel", {"taskId": charging})
    assert fresh(one).get(charging)["result"]["status"] == "cancelled"
    for _ in range(2000):  # stopped where it ran
        if any("cancelled" in line for line in lines(tmp_path)):
            break
        time.sleep(0.005)
    assert ["cancelled" in line for line in lines(tmp_path)] == [False, True]


def test_a_worker_killed_while_its_task_runs(
    servers: tuple[HttpChild, HttpChild], tmp_path: Path
) -> None:
    """SIGKILL to the worker running each task: `charge` (on_worker_lost="rerun") is run
    again by another worker with the same idempotency key; `ship` ("fail") ends failed."""
    four, _ = servers
    folders = {name: tmp_path / name for name in ("charge", "ship")}
    tasks = {}
    for name, folder in folders.items():
        folder.mkdir()
        tasks[name] = started(fresh(four), name, {"folder": str(folder)})
    arguments = {"folder": str(folders["charge"])}
    victims = set()
    for task_id in tasks.values():
        victims.add(int(status_message(fresh(four), task_id, "1: pid ").split()[-1]))
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        if all(gone(pid) for pid in victims):
            break
        time.sleep(0.01)
    for folder in folders.values():
        (folder / "go").touch()

    done = fresh(four).until(tasks["charge"], "completed")
    first_run, second_run = runs(folders["charge"])
    assert first_run["pid"] in victims
    assert text(done["result"]) == f"charge by {second_run['pid']}"
    assert second_run["pid"] not in victims
    assert second_run["key"] == first_run["key"] == task_key(tasks["charge"], "charge", arguments)
    assert second_run["task"] == first_run["task"] == tasks["charge"]

    failed = fresh(four).until(tasks["ship"], "failed")
    assert failed["error"]["message"] == LOST_MESSAGE
    assert len(runs(folders["ship"])) == 1  # not run again


def test_results_and_running_tasks_survive_a_restart_of_every_worker(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    queue = uuid.uuid4().hex
    with serving(redis_url, queue) as before:
        finished = started(fresh(before), "double", {"x": 21})
        result = fresh(before).until(finished, "completed")["result"]
        running = started(fresh(before), "reindex", {"folder": str(tmp_path)})
        status_message(fresh(before), running, "1: pid ")
    (tmp_path / "go").touch()  # every worker has stopped
    with serving(redis_url, queue) as after:
        assert fresh(after).get(finished)["result"]["result"] == result
        done = fresh(after).until(running, "completed")
        assert text(done["result"]).startswith("reindex by ")
        assert len({(run["key"], run["task"]) for run in runs(tmp_path)}) == 1
        assert len(runs(tmp_path)) >= 2
