"""Section `mcp`: `tools/call` over streamable HTTP, toolreg's server against the SDK's.

Each server (`mcp_servers.py`) runs in a process of its own on 127.0.0.1 and serves the
same tools, stateless. The load comes from this process: 1, 8 and 64 concurrent clients,
each the SDK's own `Client` (protocol 2026-07-28, as it negotiates by default) on a
connection of its own, each calling `get_weather` one call after the other for a fixed
time. Reported per cell: calls per second, p50/p99 latency, the server's CPU time per call
(its processes' user + system time from /proc, over the calls), this process's CPU per
call (the client's share of the 2 cores), and errors.

Then the scale-out rows: `toolreg serve --workers 2` (the socket made with TCP_NODELAY),
and, for contrast, stock `uvicorn mcp_servers:app --workers 2 --loop asyncio` (its socket
without TCP_NODELAY: each response waits for the client's delayed ACK).

Skipped with a note when `mcp` or `uvicorn` is not installed. Loopback only; every cell is
bounded in time and in calls.
"""

import asyncio
import contextlib
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

__all__ = ["LEVELS", "run"]

LEVELS = (1, 8, 64)
CALL = ("get_weather", {"city": "Paris"})
EXPECTED = {"city": "Paris", "temperature": 18, "unit": "c", "condition": "sunny"}
_MAX_CALLS = 20_000  # per cell, whatever the time


def _servers() -> list[tuple[str, list[str], str]]:
    script = os.path.join(HERE, "mcp_servers.py")
    py = sys.executable
    toolreg_serve = [py, "-m", "toolreg", "serve", f"{script}:registry", "--transport", "http"]
    return [
        ("toolreg", [py, script, "toolreg"], "toolreg.mcp.serve(registry, 'http')"),
        ("mcp MCPServer", [py, script, "mcpserver"], "the SDK's high-level server (FastMCP)"),
        ("mcp low-level Server", [py, script, "lowlevel"], "the SDK's Server, handlers by hand"),
        ("toolreg, 2 workers", [*toolreg_serve, "--workers", "2", "--port"],
         "toolreg serve --workers 2"),
        (
            "stock uvicorn, 2 workers",
            [py, "-m", "uvicorn", "mcp_servers:app", "--workers", "2", "--loop", "asyncio",
             "--log-level", "warning", "--port"],
            "uvicorn mcp_servers:app --workers 2 --loop asyncio",
        ),
    ]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with (
            contextlib.suppress(OSError),
            open(f"/proc/{current}/task/{current}/children") as f,
        ):
            todo.extend(int(child) for child in f.read().split())
    return found


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process tree, or None where /proc cannot tell."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    try:
        for member in _tree(pid):
            with open(f"/proc/{member}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        return None
    return total


class _Server:
    """One server process, started and waited for; its log kept in a temporary file."""

    def __init__(self, command: list[str], port: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, ROOT])}
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        args = [*command, str(port)]
        self.process = subprocess.Popen(
            args, cwd=HERE, env=env, stdout=self.log, stderr=self.log, start_new_session=True
        )
        self.url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    time.sleep(0.3 if "--workers" in command else 0)  # workers still importing
                    return
            time.sleep(0.05)
        self.close()
        raise RuntimeError(f"the server did not start: {self._tail()}")

    def _tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-500:]

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, 15)  # the server and its workers
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        self.log.close()


async def _load(url: str, pid: int, clients: int, seconds: float) -> dict[str, Any]:
    from mcp import Client

    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        first = await sessions[0].call_tool(*CALL)
        text = first.content[0].text if first.content else ""  # type: ignore[union-attr]
        if first.is_error or json.loads(text) != EXPECTED:  # (whitespace may differ)
            raise RuntimeError(f"unexpected answer: {text[:80]!r}")
        await asyncio.gather(*(s.call_tool(*CALL) for s in sessions))  # warm every connection
        latencies: list[float] = []
        errors = 0
        cpu_before, client_before = _cpu_seconds(pid), time.process_time()
        started = time.perf_counter()
        deadline = started + seconds

        async def worker(session: Any) -> None:
            nonlocal errors
            while time.perf_counter() < deadline and len(latencies) < _MAX_CALLS:
                begun = time.perf_counter()
                try:
                    result = await session.call_tool(*CALL)
                    errors += bool(result.is_error)
                except Exception:
                    errors += 1
                latencies.append(time.perf_counter() - begun)

        await asyncio.gather(*(worker(s) for s in sessions))
        elapsed = time.perf_counter() - started
        cpu_after, client_after = _cpu_seconds(pid), time.process_time()
    calls = len(latencies)
    ordered = sorted(latencies)
    server_cpu = None
    if cpu_before is not None and cpu_after is not None and calls:
        server_cpu = (cpu_after - cpu_before) / calls * 1e3
    return {
        "clients": clients,
        "calls": calls,
        "seconds": round(elapsed, 3),
        "calls_per_s": calls / elapsed if elapsed else 0.0,
        "p50_ms": statistics.median(ordered) * 1e3 if ordered else None,
        "p99_ms": _percentile(ordered, 0.99) * 1e3 if ordered else None,
        "server_cpu_ms": server_cpu,
        "client_cpu_ms": (client_after - client_before) / calls * 1e3 if calls else None,
        "errors": errors,
    }  # fmt: skip


def _percentile(ordered: list[float], share: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    missing = [m for m in ("mcp", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"{', '.join(missing)} not installed (pip install -e '.[mcp]')"}
    seconds = 0.5 if cfg["quick"] else 3.0
    rows: list[dict[str, Any]] = []
    for label, command, note in _servers():
        levels = LEVELS
        if label.startswith("stock"):  # every call waits ~40 ms: a few suffice to show it
            levels = (1, 8)
        try:
            server = _Server(command, _free_port())
        except RuntimeError as exc:
            rows.append({"server": label, "note": note, "error": str(exc)[:200]})
            continue
        try:
            for clients in levels:
                cell = asyncio.run(_load(server.url, server.process.pid, clients, seconds))
                rows.append({"server": label, "note": note, **cell})
        except Exception as exc:
            rows.append({"server": label, "note": note, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            server.close()
    return {"rows": rows, "seconds_per_cell": seconds, "call": list(CALL)}
