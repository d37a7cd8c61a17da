"""Tools with versions, for `toolreg serve tests/_versioned_tools.py:registry` and the
versioning tests (tests/mcp/test_mcp_serve_versions.py); `shaped`, a reshaped view of them."""

from __future__ import annotations

from toolreg import Arg, Reshape, ToolRegistry, reshaped

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


shaped = reshaped(
    registry,
    {
        "add": Reshape(
            name="plus",
            description="Add a number to the user's own base. Use it for sums.",
            args={"a": Arg(name="x"), "b": Arg(from_context=lambda deps: deps["base"])},
        )
    },
)
"""`toolreg serve tests/_versioned_tools.py:shaped --context '{"base": 100}'`."""
