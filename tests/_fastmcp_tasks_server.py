"""A FastMCP 4 server with task tools (`fastmcp[tasks]`, an in-memory Docket), run over
stdio by tests/mcp/test_mcp_mount_tasks.py. argv[1] is a directory: the `release` file there
lets `crunch` finish; `crunch` writes `cancelled` there when it is cancelled."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

place = Path(sys.argv[1])
mcp = FastMCP("fastmcp-tasks")
mcp.add_extension(TasksExtension())
SAFE = {"readOnlyHint": True}


@mcp.tool(task=True, annotations=SAFE)
async def crunch(n: int, ctx: Context) -> str:
    """Crunch n numbers, slowly."""
    await ctx.report_progress(1, n, "warming up")
    try:
        for _ in range(3000):
            if (place / "release").exists():
                return f"crunched {n}"
            await asyncio.sleep(0.01)
        return "never released"
    except asyncio.CancelledError:
        (place / "cancelled").write_text("cancelled")
        raise


@mcp.tool(task=TaskConfig(mode="required"), annotations=SAFE)
async def export_all() -> str:
    """Export everything (runs only as a task)."""
    return "exported"


@mcp.tool(task=True, annotations=SAFE)
async def refuse(reason: str) -> str:
    """Refuse, with a reason."""
    raise ToolError(f"Refused: {reason}")


@mcp.tool(annotations=SAFE)
def double(x: int) -> int:
    """Double x (never a task)."""
    return 2 * x


if __name__ == "__main__":
    mcp.run(transport="stdio", show_banner=False)
