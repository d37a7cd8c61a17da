"""The tools the MCP tests serve: a TARGET for `toolreg serve` and a registry to import.

Every kind of outcome a model can meet is here: plain results, objects with an output
schema, validation failures, coercion, a ToolError, a crash, a timeout, a tool that needs
confirmation, one that reports progress and logs, one that reads its context, one that
kills its own server (those about the process are in `process`).
"""

from __future__ import annotations

import asyncio
import os
import time
from enum import Enum
from typing import Annotated, Any, Literal, TypedDict

from toolreg import Param, ToolContext, ToolError, ToolRegistry

registry = ToolRegistry()


class Forecast(TypedDict):
    city: str
    temperature: int
    unit: str


class Priority(Enum):
    LOW = "low"
    HIGH = "high"


@registry.register_tool(read_only=True)
def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> Forecast:
    """Get the current weather of a city. Use it when the user asks about the weather."""
    return {"city": city, "temperature": 18 if unit == "c" else 64, "unit": unit}


@registry.register_tool
def add(a: int, b: int) -> int:
    """Add two integers. Use it for any addition."""
    return a + b


@registry.register_tool
def create_task(
    title: Annotated[str, Param(min_length=1, max_length=40)],
    priority: Priority = Priority.LOW,
    tags: list[str] | None = None,
) -> dict[str, Any]:
    """Create a task. Use it when the user wants to remember something."""
    return {"title": title, "priority": priority.value, "tags": tags or []}


@registry.register_tool(destructive=True)
def delete_file(path: str) -> str:
    """Delete a file. Use it only when the user asks to delete one."""
    return f"deleted {path}"


@registry.register_tool
def fail(message: str, chosen: bool = True) -> str:
    """Fail on purpose: a ToolError when chosen, else a crash."""
    if chosen:
        raise ToolError(message)
    raise ValueError(message)


@registry.register_tool(timeout=0.2)
def slow(seconds: float) -> str:
    """Sleep, past the time limit when asked to."""
    time.sleep(seconds)
    return "done"


@registry.register_tool
async def count_down(steps: int, ctx: ToolContext[Any]) -> str:
    """Count down, reporting progress and logging each step."""
    for step in range(steps):
        ctx.report_progress(step + 1, steps, f"step {step + 1}")
        ctx.log(f"counted {steps - step}", level="info")
        await asyncio.sleep(0)
    return "liftoff"


@registry.register_tool
def sync_count(steps: int, ctx: ToolContext[Any]) -> str:
    """The same from a sync tool, which runs in a thread of its own."""
    for step in range(steps):
        ctx.report_progress(step + 1, steps)
        ctx.log(f"tick {step}", level="debug")
    return "done"


@registry.register_tool
def whoami(ctx: ToolContext[Any]) -> str:
    """Say who the caller is, from the request's context."""
    deps = ctx.deps
    return "nobody" if deps is None else str(deps["user"])


process = ToolRegistry()
"""Tools about the serving process itself (`tests/_mcp_tools.py:process`)."""


@process.register_tool(read_only=True)
def pid() -> int:
    """The server process's id."""
    return os.getpid()


@process.register_tool
def die() -> str:
    """End the server process in the middle of the call."""
    time.sleep(0.1)
    os._exit(3)


@process.register_tool(requires_confirmation=True)
def reset() -> str:
    """Needs a confirmation, but says nothing about it in MCP's annotations (not destructive)."""
    return "reset"


@process.register_tool
def hang() -> str:
    """Never answer (until the process ends)."""
    time.sleep(3600)
    return "woke up"
