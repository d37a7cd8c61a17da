"""Bounds on a Decimal: keywords for a number, words for a numeric string, checked exactly."""

from decimal import Decimal
from typing import Annotated

from toolreg import Param, ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def refund(amount: Annotated[Decimal, Param(gt=0, le=500, multiple_of=Decimal("0.01"))]) -> str:
    """Refund an amount to the customer's card. Use it when the user asks for money back."""
    return f"refunded {amount}"


number, text = registry["refund"].parameters["properties"]["amount"]["anyOf"]
assert number == {
    "type": "number",
    "exclusiveMinimum": 0,
    "maximum": 500,
    "description": "a multiple of 0.01",  # words: multipleOf in binary floats refuses 0.07
}
assert text["description"] == "a decimal number > 0 and <= 500 and a multiple of 0.01"
assert registry.dispatch_tool("refund", {"amount": "19.99"}).content == "refunded 19.99"
assert registry.dispatch_tool("refund", {"amount": 0.07}).content == "refunded 0.07"
too_much = registry.dispatch_tool("refund", {"amount": "500.001"})  # compared exactly
assert too_much.content == (
    "Invalid arguments for tool 'refund':\n"
    "- amount: must be <= 500\n"
    "- amount: must be a multiple of 0.01"
)
not_a_number = registry.dispatch_tool("refund", {"amount": "twelve"})
assert not_a_number.content == (
    "Invalid arguments for tool 'refund': amount: 'twelve' is not a decimal number."
)
