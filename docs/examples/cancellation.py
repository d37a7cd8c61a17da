"""A tool that is asked to stop, and says what it did."""

from typing import Any

from toolreg import ToolCancelled, ToolContext, ToolRegistry

registry = ToolRegistry()


@registry.register_tool(timeout=0.1)
def migrate(tables: list[str], ctx: ToolContext[Any]) -> str:
    """Copy tables to the new database, one at a time."""
    done = []
    for table in tables:
        if ctx.cancelled.wait(0.5 if table == "orders" else 0):  # set at the time limit
            raise ToolCancelled(f"Stopped: copied {', '.join(done) or 'nothing'}; not {table}.")
        done.append(table)
    return f"copied {len(done)} tables"


result = registry.dispatch_tool("migrate", {"tables": ["users", "orders", "items"]})
print(result.outcome, "-", result.content)
# interrupted - Stopped: copied users; not orders.
assert (result.outcome, result.error_kind) == ("interrupted", "interrupted")
assert result.content == "Stopped: copied users; not orders."
assert registry.dispatch_tool("migrate", {"tables": ["a"]}).outcome == "completed"
assert registry.dispatch_tool("migrate", {"tables": "a"}).outcome == "not_started"
