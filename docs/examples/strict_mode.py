"""Strict mode: OpenAI structured-outputs schemas; null from the model means the default."""

from toolreg import ToolRegistry

registry = ToolRegistry()


@registry.register_tool(strict=True)
def convert(amount: float, currency: str = "USD") -> str:
    """Convert an amount to euros. Use it when the user asks for a price in EUR."""
    return f"{amount * 0.9:.2f} EUR"


function = registry.get_tools()[0]["function"]
assert function["strict"] is True
assert function["parameters"]["required"] == ["amount", "currency"]
assert registry.dispatch_tool("convert", '{"amount": 10, "currency": null}').content == "9.00 EUR"
