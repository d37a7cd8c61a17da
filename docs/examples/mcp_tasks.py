"""A tool served as an MCP task, mounted: polled to its end, its status as progress."""

import asyncio

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import HttpServer, Mount, asgi_app

reports = ToolRegistry()
stopped: list[str] = []


@reports.register_tool(task="optional", read_only=True)
async def build_report(year: int, ctx: ToolContext[None]) -> str:
    """Build the yearly report (slow). Use it when the user asks for a year's report."""
    ctx.report_progress(1, 2, "collecting")  # the task's statusMessage while it runs
    await asyncio.sleep(0.2)
    return f"report {year}: 1,204 orders"


@reports.register_tool(task="required", read_only=True)
async def rebuild_index() -> str:
    """Rebuild the search index (very slow: runs only as a task)."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        stopped.append("rebuild_index was cancelled")  # the mount's tasks/cancel arrived
        raise
    return "rebuilt"


def show(progress: float, total: float | None = None, message: str | None = None) -> None:
    print("progress:", progress, message)  # progress: 1.0 1/2: collecting


with HttpServer(asgi_app(reports)) as server:
    with Mount(server.url, trust_annotations=True, timeout=1) as remote:
        assert remote.tasks  # the server offers the tasks extension
        done = remote.dispatcher.dispatch_tool(
            "build_report", {"year": 2025}, context=ToolContext(None, report_progress=show)
        )
        print(done.content)  # report 2025: 1,204 orders
        late = remote.dispatcher.dispatch_tool("rebuild_index", {})
        print(late.content)  # Tool 'rebuild_index' timed out after 1 s: interrupted while ...
    print(stopped)  # ['rebuild_index was cancelled']: cancelled there, not left running
