"""`register_tool(flatten=True)`: one record parameter, its fields advertised at the top."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel, Field

from toolreg import Param, ToolContext, ToolDefinitionError, ToolRegistry


@dataclasses.dataclass
class Expense:
    """An expense to record."""

    amount: Annotated[float, Param(gt=0, description="Amount spent")]
    currency: str = "EUR"
    note: str | None = None


class Contact(TypedDict):
    name: str
    email: str


class Order(BaseModel):
    item: str = Field(description="What to order")
    quantity: int = Field(default=1, ge=1)


def test_a_dataclass_record_is_flattened_and_built_from_the_arguments() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool(flatten=True)
    def record_expense(expense: Expense) -> str:
        """Record an expense. Use it when the user says they spent money."""
        seen.append(expense)
        return "recorded"

    assert reg["record_expense"].parameters == {
        "type": "object",
        "properties": {
            "amount": {"type": "number", "exclusiveMinimum": 0, "description": "Amount spent"},
            "currency": {"type": "string", "default": "EUR"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["amount"],
        "additionalProperties": False,
    }
    result = reg.dispatch_tool("record_expense", '{"amount": 12.5, "note": "lunch"}')
    assert result.ok, result.content
    assert seen == [Expense(12.5, "EUR", "lunch")]
    assert result.arguments == {"amount": 12.5, "note": "lunch"}
    bad = reg.dispatch_tool("record_expense", '{"amount": 0, "extra": 1}')
    assert bad.content == (
        "Invalid arguments for tool 'record_expense':\n"
        "- amount: must be > 0\n"
        "- unexpected property 'extra'"
    )


def test_typeddict_and_pydantic_records_and_an_injected_context() -> None:
    reg = ToolRegistry()

    @reg.register_tool(flatten=True)
    def add_contact(contact: Contact, ctx: ToolContext[str]) -> str:
        """Add a contact."""
        return f"{ctx.deps}: {contact['name']} <{contact['email']}>"

    @reg.register_tool(flatten=True, strict=True)
    def place_order(order: Order) -> str:
        """Place an order."""
        return f"{order.quantity} x {order.item}"

    assert set(reg["add_contact"].parameters["properties"]) == {"name", "email"}
    result = reg.dispatch_tool("add_contact", '{"name": "Ada", "email": "a@x"}', context="me")
    assert result.content == "me: Ada <a@x>"
    properties = reg["place_order"].parameters["properties"]
    assert properties["item"] == {"type": "string", "description": "What to order"}
    assert reg.dispatch_tool("place_order", '{"item": "tea"}').content == "1 x tea"
    # strict mode: the model sends null for the default
    assert reg.dispatch_tool("place_order", '{"item": "tea", "quantity": null}').content == (
        "1 x tea"
    )
    refused = reg.dispatch_tool("place_order", '{"item": "tea", "quantity": 0}')
    assert refused.error_kind == "invalid_arguments"


@pytest.mark.parametrize("shape", ["two", "plain", "kwargs"])
def test_flatten_needs_exactly_one_record_parameter(shape: str) -> None:
    reg = ToolRegistry()

    def two(a: Expense, b: Expense) -> str:
        """Two."""
        return ""

    def plain(a: int) -> str:
        """Plain."""
        return ""

    def kwargs(a: Expense, **rest: Any) -> str:
        """Kwargs."""
        return ""

    fn = {"two": two, "plain": plain, "kwargs": kwargs}[shape]
    with pytest.raises(ToolDefinitionError, match="flatten=True needs exactly one parameter"):
        reg.register_tool(fn, flatten=True)  # type: ignore[call-overload]
