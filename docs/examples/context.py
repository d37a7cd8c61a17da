"""Context injection: parameters the application fills and the model can never set."""

from toolreg import ToolContext, ToolRegistry

registry = ToolRegistry()


@registry.register_tool(read_only=True)
def my_orders(ctx: ToolContext[dict]) -> list[str]:
    """List the current user's orders. Use it when the user asks what they ordered."""
    return [f"order of {ctx.deps['user_id']}"]


assert "ctx" not in registry["my_orders"].parameters["properties"]
print(registry.dispatch_tool("my_orders", "{}", context={"user_id": "u1"}).content)
# ["order of u1"]
smuggled = registry.dispatch_tool(
    "my_orders", '{"ctx": {"user_id": "u2"}}', context={"user_id": "u1"}
)
assert smuggled.error_kind == "invalid_arguments"
