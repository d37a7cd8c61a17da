"""MCP tasks: in the serving process against the shared backend (pydocket on Redis).

    python benchmarks/tasks.py                   # markdown table (starts a redis-server)
    python benchmarks/tasks.py --json            # the same as JSON
    python benchmarks/tasks.py --quick           # a smoke run: few tasks
    python benchmarks/tasks.py --redis URL       # a Redis of your own instead
    python benchmarks/tasks.py --engines --postgres postgresql://postgres@127.0.0.1:5432/postgres
                                                 # also pydocket and the DBOS queue alone

Over real HTTP on 127.0.0.1 (toolreg's server in a thread, raw JSON-RPC on the 2026-07-28
protocol), one tool that returns at once, run as a task:

- **create -> complete**: `tools/call` answered with a task, then `tasks/get` every 2 ms
  until it is `completed` (median and 90th percentile over sequential tasks);
- **tasks/get**: one read of a finished task;
- **burst**: `--burst` tasks created back to back, then polled until all are done (tasks/s).

Rows: the in-process store; the shared store with one server; two servers sharing it (each
task created through one and read through the other). `--engines` measures the engines
without toolreg, as chosen between for the shared backend: pydocket (a no-op task added and
awaited, a status read) and, when `dbos` is installed and `--postgres` given, the DBOS
queue on PostgreSQL (a no-op workflow enqueued and awaited, `get_workflow_status`).
Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's toolreg

EXTENSION = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"


def _registry() -> Any:
    from toolreg import ToolRegistry

    registry = ToolRegistry()

    @registry.register_tool(task="optional")
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    return registry


class _Rpc:
    """Raw JSON-RPC of the tasks extension over one keep-alive HTTP connection."""

    def __init__(self, url: str) -> None:
        import httpx2

        self.url = url
        self.http = httpx2.Client(timeout=30)
        self.ids = itertools.count(1)

    def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": MODERN,
            "mcp-method": method,
            "mcp-name": params.get("name") or params.get("taskId", ""),
        }
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method}
        body["params"] = {**params, "_meta": meta}
        answer = self.http.post(self.url, json=body, headers=headers)
        if answer.headers["content-type"].startswith("text/event-stream"):
            data = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
            message: dict[str, Any] = json.loads(data[-1])
        else:
            message = answer.json()
        if "result" not in message:
            raise RuntimeError(f"{method}: {message}")
        result: dict[str, Any] = message["result"]
        return result

    def start(self) -> str:
        created = self("tools/call", {"name": "double", "arguments": {"x": 2}})
        task_id: str = created["taskId"]
        return task_id

    def wait(self, task_id: str) -> None:
        for _ in range(20_000):
            if self("tasks/get", {"taskId": task_id})["status"] == "completed":
                return
            time.sleep(0.002)
        raise RuntimeError(f"task {task_id} did not complete")


def _stats(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": statistics.median(ordered) * 1000,
        "p90_ms": ordered[int(len(ordered) * 0.9)] * 1000,
    }


def _measure(creator: _Rpc, reader: _Rpc, count: int, burst: int) -> dict[str, Any]:
    for _ in range(3):  # warm up: connections, scripts, the worker's first read
        reader.wait(creator.start())
    latency = []
    for _ in range(count):
        began = time.perf_counter()
        reader.wait(creator.start())
        latency.append(time.perf_counter() - began)
    done = creator.start()
    reader.wait(done)
    reads = []
    for _ in range(count):
        began = time.perf_counter()
        reader("tasks/get", {"taskId": done})
        reads.append(time.perf_counter() - began)
    began = time.perf_counter()
    ids = [creator.start() for _ in range(burst)]
    for task_id in ids:
        reader.wait(task_id)
    elapsed = time.perf_counter() - began
    return {
        "create_complete": _stats(latency),
        "get": _stats(reads),
        "burst_per_s": burst / elapsed,
    }


def measure_toolreg(redis_url: str, count: int, burst: int) -> list[dict[str, Any]]:
    from toolreg.mcp import HttpServer, TaskOptions, asgi_app

    registry = _registry()
    rows = []
    bound = max(32, burst)
    local = TaskOptions(max_running=bound, max_per_caller=bound, max_kept=4 * bound)
    with HttpServer(asgi_app(registry, tasks=local)) as server:
        rpc = _Rpc(server.url)
        rows.append({"store": "in-process", **_measure(rpc, rpc, count, burst)})
    shared = TaskOptions(
        backend=redis_url, queue=uuid.uuid4().hex, max_running=bound, max_per_caller=bound
    )
    with HttpServer(asgi_app(registry, tasks=shared)) as server:
        rpc = _Rpc(server.url)
        rows.append({"store": "shared (Redis), one server", **_measure(rpc, rpc, count, burst)})
    with (
        HttpServer(asgi_app(registry, tasks=shared)) as first,
        HttpServer(asgi_app(registry, tasks=shared)) as second,
    ):
        measured = _measure(_Rpc(first.url), _Rpc(second.url), count, burst)
        rows.append({"store": "shared (Redis), created on one, read on another", **measured})
    return rows


async def _noop(x: int) -> int:
    return x


def measure_docket(redis_url: str, count: int) -> dict[str, Any]:
    from datetime import timedelta

    from docket import Docket, Worker

    async def run() -> dict[str, Any]:
        async with Docket(name=f"bench-{uuid.uuid4().hex}", url=redis_url) as docket:
            docket.register(_noop)
            interval = timedelta(milliseconds=50)
            async with Worker(docket, minimum_check_interval=interval) as worker:
                running = asyncio.ensure_future(worker.run_forever())
                latency, reads = [], []
                for i in range(count + 3):
                    began = time.perf_counter()
                    execution = await docket.add(_noop, key=f"k{i}")(i)
                    await execution.get_result()
                    if i >= 3:
                        latency.append(time.perf_counter() - began)
                for i in range(count):
                    began = time.perf_counter()
                    await docket.get_execution(f"k{i}")
                    reads.append(time.perf_counter() - began)
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
        return {"engine": "pydocket (Redis)", "run": _stats(latency), "status": _stats(reads)}

    return asyncio.run(run())


def measure_dbos(postgres_url: str, count: int) -> dict[str, Any]:
    """The DBOS queue on PostgreSQL, in a child process (DBOS is one per process)."""
    code = f"""
import json, statistics, time, sys
from dbos import DBOS
DBOS(config={{"name": "bench", "system_database_url": {postgres_url!r}, "run_admin_server": False}})
@DBOS.workflow()
def noop(x: int) -> int:
    return x
DBOS.launch()
queue = DBOS.register_queue("bench", polling_interval_sec=0.05)
latency, reads, ids = [], [], []
for i in range({count} + 3):
    began = time.perf_counter()
    handle = queue.enqueue(noop, i)
    handle.get_result(polling_interval_sec=0.005)
    if i >= 3:
        latency.append(time.perf_counter() - began)
        ids.append(handle.get_workflow_id())
for workflow in ids:
    began = time.perf_counter()
    DBOS.get_workflow_status(workflow)
    reads.append(time.perf_counter() - began)
DBOS.destroy()
print(json.dumps([latency, reads]))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    )
    latency, reads = json.loads(done.stdout.strip().splitlines()[-1])
    return {"engine": "DBOS queue (PostgreSQL)", "run": _stats(latency), "status": _stats(reads)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _redis(url: str | None) -> Iterator[str]:
    """`url`, or a redis-server of this run's own on a free loopback port."""
    if url is not None:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed: pass --redis URL")
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        server = subprocess.Popen(
            [*command, "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL
        )
        try:
            for _ in range(500):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port)):
                    break
                time.sleep(0.01)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.kill()
            server.wait()


def _table(report: dict[str, Any]) -> str:
    lines = [
        "| store | create -> complete p50 / p90 (ms) | tasks/get p50 / p90 (ms) "
        "| burst (tasks/s) |",
        "|---|---|---|---|",
    ]
    for row in report["toolreg"]:
        run, get = row["create_complete"], row["get"]
        lines.append(
            f"| {row['store']} | {run['p50_ms']:.1f} / {run['p90_ms']:.1f} | "
            f"{get['p50_ms']:.2f} / {get['p90_ms']:.2f} | {row['burst_per_s']:.0f} |"
        )
    if report.get("engines"):
        lines += [
            "",
            "| engine alone | run a no-op p50 / p90 (ms) | status read p50 / p90 (ms) |",
            "|---|---|---|",
        ]
        for row in report["engines"]:
            run, status = row["run"], row["status"]
            lines.append(
                f"| {row['engine']} | {run['p50_ms']:.1f} / {run['p90_ms']:.1f} | "
                f"{status['p50_ms']:.2f} / {status['p90_ms']:.2f} |"
            )
    for name, why in report.get("skipped", {}).items():
        lines.append(f"\n{name}: skipped ({why})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--redis", help="a Redis URL (default: start a redis-server)")
    parser.add_argument("--postgres", help="a PostgreSQL URL for --engines' DBOS row")
    parser.add_argument("--engines", action="store_true", help="also the engines alone")
    parser.add_argument("--count", type=int, default=200, help="sequential tasks per row")
    parser.add_argument("--burst", type=int, default=200, help="tasks of the burst")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 tasks")
    parser.add_argument("--json", action="store_true", help="JSON instead of markdown")
    args = parser.parse_args(argv)
    count, burst = (10, 10) if args.quick else (args.count, args.burst)
    report: dict[str, Any] = {"skipped": {}}
    with _redis(args.redis) as url:
        report["toolreg"] = measure_toolreg(url, count, burst)
        if args.engines:
            report["engines"] = [measure_docket(url, count)]
            if args.postgres is None:
                report["skipped"]["DBOS queue"] = "no --postgres URL"
            else:
                try:
                    report["engines"].append(measure_dbos(args.postgres, count))
                except (subprocess.CalledProcessError, OSError) as exc:
                    report["skipped"]["DBOS queue"] = f"failed: {type(exc).__name__}"
    print(json.dumps(report, indent=2) if args.json else _table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
