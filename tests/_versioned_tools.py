"""Tools with versions, for `toolreg serve tests/_versioned_tools.py:registry` and the
versioning tests (tests/test_mcp_serve_versions.py)."""

from __future__ import annotations

from toolreg import ToolRegistry

registry = ToolRegistry()
RUNS: list[str] = []


@registry.register_tool(name="search", version="1", read_only=True)
def search_v1(q: str) -> str:
    """Search the catalog. Use it when the user asks for a product."""
    RUNS.append("1")
    return f"v1:{q}"


@registry.register_tool(name="search", version="2", read_only=True)
def search_v2(q: str, limit: int = 5) -> str:
    """Search the catalog, `limit` hits at most. Use it when the user asks for a product."""
    RUNS.append("2")
    return f"v2:{q}:{limit}"


@registry.register_tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two numbers. Use it for sums."""
    return a + b
