"""Constraints, required parameters and defaults, nested records in $defs."""

from typing import Annotated, TypedDict

from typing_extensions import NotRequired

from toolreg import Param, ToolRegistry

registry = ToolRegistry()


class Address(TypedDict):
    city: Annotated[str, "City name"]
    postcode: NotRequired[Annotated[str, Param(pattern=r"^\d{6}$")]]


@registry.register_tool
def ship(
    quantity: Annotated[int, Param(ge=1, le=99)],
    tags: Annotated[list[Annotated[str, "A label"]], Param(max_length=5)] = [],  # noqa: B006
    address: Address | None = None,
) -> str:
    """Ship an order. Use it when the user confirms the purchase."""
    return "shipped"


schema = registry["ship"].parameters
assert schema["required"] == ["quantity"]  # no default => required
assert schema["properties"]["quantity"] == {"type": "integer", "minimum": 1, "maximum": 99}
assert schema["properties"]["tags"]["default"] == []  # defaults are shown
assert schema["$defs"]["Address"]["required"] == ["city"]
too_many = registry.dispatch_tool("ship", {"quantity": 100})
assert too_many.error_kind == "invalid_arguments"
print(too_many.content)
