"""Results: a result filter, and a ToolError whose message the model reads as written."""

from toolreg import ToolError, ToolRegistry

registry = ToolRegistry()


@registry.register_tool(result_filter=lambda user: {**user, "phone": user["phone"][:3] + "****"})
def find_user(name: str) -> dict:
    """Find a user by name. Use it when the user asks for someone's contact details."""
    if name != "Li Wei":
        raise ToolError(f"No user called {name}.")
    return {"name": name, "phone": "13812345678"}


found = registry.dispatch_tool("find_user", '{"name": "Li Wei"}')
assert found.content == '{"name": "Li Wei", "phone": "138****"}'
missing = registry.dispatch_tool("find_user", '{"name": "Bob"}')
assert missing.content == "No user called Bob."
assert missing.error_kind == "execution_error"


@registry.register_tool
def divide(a: float, b: float) -> float:
    """Divide a by b. Use it for any division."""
    return a / b


crashed = registry.dispatch_tool("divide", {"a": 1, "b": 0})
print(crashed.content)  # Tool 'divide' failed: ZeroDivisionError: float division by zero
assert isinstance(crashed.exception, ZeroDivisionError)  # for your logs, never the model's
