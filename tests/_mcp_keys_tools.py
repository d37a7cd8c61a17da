"""Tools `toolreg serve` runs in the MCP idempotency tests: each answers with the key its
`ToolContext` got (so the caller, across the hop, can compare)."""

from __future__ import annotations

from typing import Any

from toolreg import ToolContext, ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def charge(amount: int, ctx: ToolContext[Any]) -> str:
    """Charge an amount (a sync tool: it runs in a thread of the server)."""
    return f"key={ctx.idempotency_key}"


@registry.register_tool
async def acharge(amount: int, ctx: ToolContext[Any]) -> str:
    """Charge an amount (an async tool)."""
    return f"key={ctx.idempotency_key}"
