"""A module whose `tools` is a toolset, not a registry: `toolreg serve
tests/_mcp_toolset_target.py:tools` serves it (tests/mcp/test_mcp_serve_toolsets.py)."""

from __future__ import annotations

from toolreg import ToolRegistry, combined, prefixed

maths = ToolRegistry()
words = ToolRegistry()


@maths.register_tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@words.register_tool(read_only=True)
def shout(text: str) -> str:
    """Shout a text."""
    return text.upper()


@words.register_tool(read_only=True)
def whisper(text: str) -> str:
    """Whisper a text."""
    return text.lower()


tools = combined(maths, prefixed(words, "w"))
