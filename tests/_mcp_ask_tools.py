"""Tools that ask the person behind the MCP client (`ctx.ask` / `ctx.aask`), served by
`toolreg serve` in tests/mcp/test_mcp_serve_ask.py."""

from __future__ import annotations

from typing import Any, TypedDict

from toolreg import InvalidAnswerError, ToolContext, ToolRegistry

registry = ToolRegistry()

NIGHT = {
    "type": "object",
    "properties": {
        "night": {"type": "string", "description": "The night, YYYY-MM-DD"},
        "guests": {"type": "integer", "minimum": 1, "maximum": 8, "default": 2},
    },
    "required": ["night"],
}


class Contact(TypedDict):
    name: str
    vip: bool


def _said(answer: Any) -> str:
    return f"{answer.action} {answer.data}"


@registry.register_tool
def book(room: str, ctx: ToolContext[Any]) -> str:
    """Book a room: asks which night (a sync tool: ctx.ask blocks its thread)."""
    try:
        answer = ctx.ask(f"Which night for room {room}?", NIGHT)
    except InvalidAnswerError as exc:
        return f"refused a bad answer: {exc.message}"
    return _said(answer)


@registry.register_tool
async def abook(room: str, ctx: ToolContext[Any]) -> str:
    """Book a room: asks which night, then who (an async tool)."""
    night = await ctx.aask(f"Which night for room {room}?", NIGHT)
    if not night.accepted:
        return _said(night)
    who = await ctx.aask("Who is it for?", Contact)
    return f"{_said(night)}; {_said(who)}"


@registry.register_tool
def book_unchecked(ctx: ToolContext[Any]) -> str:
    """Asks, and lets a bad answer's error through to the model."""
    return _said(ctx.ask("Which night?", NIGHT))


@registry.register_tool(requires_confirmation=True)
def pay(amount: int, ctx: ToolContext[Any]) -> str:
    """Pay: confirmed first, then asks which card."""
    card = ctx.ask(
        f"Which card pays {amount}?",
        {"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]},
    )
    return _said(card)
