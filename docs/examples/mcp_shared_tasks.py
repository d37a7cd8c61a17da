"""MCP tasks shared by two servers (think two workers, or two machines) through Redis."""

import asyncio
import itertools
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx2

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import HttpServer, TaskOptions, asgi_app

tools = ToolRegistry()
runs: list[tuple[str, str]] = []  # each run of `report`: (task id, idempotency key)
release = threading.Event()


@tools.register_tool(task="optional", on_worker_lost="rerun")
async def report(month: str, ctx: ToolContext[None]) -> str:
    """Build the monthly report (slow; safe to build again)."""
    runs.append((str(ctx.call_id), str(ctx.idempotency_key)))
    ctx.report_progress(1, 2, "collecting")
    while not release.is_set():  # the real work; here, until the example says
        await asyncio.sleep(0.01)
    return f"report for {month}"


# A throwaway redis-server on a free loopback port (in production: your Redis's URL).
if shutil.which("redis-server") is None:
    print("redis-server is not installed: nothing to show")
    sys.exit(0)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tempfile.mkdtemp()]
redis = subprocess.Popen(["redis-server", "--port", str(port), *options], stdout=subprocess.DEVNULL)
SHARED = TaskOptions(backend=f"redis://127.0.0.1:{port}/0", reclaim_after=2)
ids = itertools.count(1)


def rpc(url: str, method: str, params: dict) -> dict:
    """One JSON-RPC request of the tasks extension (2026-07-28 protocol)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
        "Mcp-Name": params.get("name") or params.get("taskId", ""),
    }
    body = {"jsonrpc": "2.0", "id": next(ids), "method": method}
    body["params"] = {**params, "_meta": meta}
    return httpx2.post(url, json=body, headers=headers, timeout=10).json()["result"]


def until(url: str, task_id: str, status: str) -> dict:
    for _ in range(1000):
        task = rpc(url, "tasks/get", {"taskId": task_id})
        if task["status"] == status:
            return task
        time.sleep(0.01)
    raise AssertionError(task)


try:
    for _ in range(500):  # until redis-server listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.02)
    one = HttpServer(asgi_app(tools, tasks=SHARED)).start()
    call = {"name": "report", "arguments": {"month": "2026-11"}}
    task_id = rpc(one.url, "tools/call", call)["taskId"]
    until(one.url, task_id, "working")
    while not runs:  # it runs in the first server (the only one yet)
        time.sleep(0.01)
    with HttpServer(asgi_app(tools, tasks=SHARED)) as two:
        # created through one server, read through the other
        assert until(two.url, task_id, "working")["statusMessage"] == "1/2: collecting"
        # the first server stops while the task runs (a restart, a deploy): it hands the
        # task over, and the second, as the tool allows, runs it again (same task, same
        # idempotency key); with on_worker_lost="fail" it would end failed instead
        one.close()
        for _ in range(1000):
            if len(runs) == 2:
                break
            time.sleep(0.01)
        assert runs[0] == runs[1]  # the same task, the same idempotency key
        assert runs[0][0] == task_id
        release.set()
        done = until(two.url, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "report for 2026-11"
        print(f"completed after {len(runs)} runs; read through the second server")
finally:
    redis.kill()
    redis.wait()
