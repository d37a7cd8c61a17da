"""Tools for the tests of MCP tasks on a shared backend: a TARGET for `toolreg serve`
(`tests/_task_tools.py:registry`) and a registry the in-process tests import.

Each long tool writes one JSON line per run to `<folder>/runs.jsonl` (the process that ran
it, the call's idempotency key and task id), puts `pid <pid>` in its status message, and
waits until `<folder>/go` exists (at most a minute), so a test decides when it ends, or
kills the process running it first.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from toolreg import ToolContext, ToolRegistry

registry = ToolRegistry()

_WAIT = 60.0  # seconds a tool waits for its go file at most


async def _run(folder: str, ctx: ToolContext[None], label: str) -> str:
    where = Path(folder)
    line = {
        "tool": label,
        "pid": os.getpid(),
        "key": ctx.idempotency_key,
        "task": ctx.call_id,
    }
    with (where / "runs.jsonl").open("a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")
    ctx.report_progress(1, None, f"pid {os.getpid()}")
    try:
        for _ in range(int(_WAIT / 0.02)):
            if (where / "go").exists():
                return f"{label} by {os.getpid()}"
            await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        with (where / "runs.jsonl").open("a", encoding="utf-8") as log:
            log.write(json.dumps({"tool": label, "cancelled": os.getpid()}) + "\n")
        raise
    return "the go file never came"


@registry.register_tool(task="optional", on_worker_lost="rerun")
async def charge(folder: str, ctx: ToolContext[None]) -> str:
    """Charge a card once (the payment API deduplicates on the idempotency key)."""
    return await _run(folder, ctx, "charge")


@registry.register_tool(task="optional", on_worker_lost="fail")
async def ship(folder: str, ctx: ToolContext[None]) -> str:
    """Ship a parcel (not safe to repeat: a second run ships a second parcel)."""
    return await _run(folder, ctx, "ship")


@registry.register_tool(task="optional", idempotent=True)
async def reindex(folder: str, ctx: ToolContext[None]) -> str:
    """Rebuild the search index (idempotent: runs again when its worker is lost)."""
    return await _run(folder, ctx, "reindex")


@registry.register_tool(task="optional")
async def export(folder: str, ctx: ToolContext[None]) -> str:
    """Export the data (no choice made: fails when its worker is lost)."""
    return await _run(folder, ctx, "export")


@registry.register_tool(task="optional", destructive=True)
def wipe(disk: str) -> str:
    """Wipe a disk (asks for confirmation first)."""
    return f"wiped {disk} by {os.getpid()}"


@registry.register_tool(task="optional")
def double(x: int) -> str:
    """Double x, saying which process did."""
    return f"{2 * x} by {os.getpid()}"
