"""`functools.partial` tools: named and described by the function they wrap, with a schema of
the parameters the partial leaves to the call (what it binds is the application's)."""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated, Any

import pytest

from toolreg import ToolDefinitionError, ToolRegistry


def get_weather(
    city: Annotated[str, "City name"], unit: str = "c", *, api_key: str, days: int = 1
) -> str:
    """Get the weather of a city. Use it when the user asks about the weather.

    Args:
        unit: "c" or "f".
        days: How many days ahead.
    """
    return f"{city}/{unit}/{api_key}/{days}"


def function_of(reg: ToolRegistry) -> dict[str, Any]:
    (tool,) = reg.get_tools()
    function: dict[str, Any] = tool["function"]
    return function


def test_a_partial_is_the_function_without_what_it_binds() -> None:
    reg = ToolRegistry()
    reg.register_tool(functools.partial(get_weather, api_key="secret"))
    function = function_of(reg)
    assert function["name"] == "get_weather"
    assert function["description"] == (
        "Get the weather of a city. Use it when the user asks about the weather."
    )
    parameters = function["parameters"]
    assert list(parameters["properties"]) == ["city", "unit", "days"]
    assert parameters["properties"]["city"]["description"] == "City name"
    assert parameters["properties"]["days"] == {
        "type": "integer",
        "description": "How many days ahead.",
        "default": 1,
    }
    assert parameters["required"] == ["city"]
    assert reg.dispatch_tool("get_weather", {"city": "Paris"}).content == "Paris/c/secret/1"


def test_the_model_cannot_set_what_the_partial_binds() -> None:
    reg = ToolRegistry()
    reg.register_tool(functools.partial(get_weather, api_key="secret"))
    result = reg.dispatch_tool("get_weather", {"city": "Paris", "api_key": "mine"})
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert "unexpected property 'api_key'" in result.content


def test_bound_positional_arguments_take_the_first_parameters_away() -> None:
    reg = ToolRegistry()
    reg.register_tool(functools.partial(get_weather, "Rome", "f", api_key="k"))
    parameters = function_of(reg)["parameters"]
    assert list(parameters["properties"]) == ["days"]
    assert "required" not in parameters or parameters["required"] == []
    assert reg.dispatch_tool("get_weather", {"days": 3}).content == "Rome/f/k/3"


def test_a_partial_of_a_partial() -> None:
    inner = functools.partial(get_weather, api_key="k")
    inner.note = "kept"  # type: ignore[attr-defined]  # (an attribute: Python does not flatten)
    outer = functools.partial(inner, "Oslo", days=2)
    assert isinstance(outer.func, functools.partial)  # truly nested
    reg = ToolRegistry()
    reg.register_tool(outer)
    function = function_of(reg)
    assert function["name"] == "get_weather"
    assert list(function["parameters"]["properties"]) == ["unit"]
    assert reg.dispatch_tool("get_weather", {"unit": "f"}).content == "Oslo/f/k/2"


def test_a_partial_of_an_async_function_and_of_a_bound_method() -> None:
    class Ledger:
        def __init__(self) -> None:
            self.rate = 2

        def convert(self, amount: int, *, currency: str) -> str:
            """Convert an amount. Use it when the user asks for another currency."""
            return f"{amount * self.rate} {currency}"

    async def add(x: int, y: int) -> int:
        """Add two numbers. Use it when the user asks for a sum."""
        return x + y

    reg = ToolRegistry()
    reg.register_tool(functools.partial(add, y=10))
    reg.register_tool(functools.partial(Ledger().convert, currency="EUR"))
    assert reg.get("add").is_async
    assert asyncio.run(reg.adispatch_tool("add", {"x": 1})).content == "11"
    assert reg.dispatch_tool("convert", {"amount": 4}).content == "8 EUR"
    assert list(reg.get("convert").parameters["properties"]) == ["amount"]


def test_name_and_description_can_still_be_given() -> None:
    reg = ToolRegistry()
    reg.register_tool(
        functools.partial(get_weather, api_key="k"), name="weather", description="The weather."
    )
    function = function_of(reg)
    assert (function["name"], function["description"]) == ("weather", "The weather.")


class _Callable:
    def __call__(self, x: int) -> int:
        return x


@pytest.mark.parametrize(
    ("target", "kind", "owner"),
    [
        (dict, "the class dict", "dict"),
        (len, "the builtin len", "len"),
        (_Callable(), "a _Callable object", "test_definition_partials._Callable"),
    ],
    ids=["class", "builtin", "callable-object"],
)
def test_a_partial_of_a_non_function_is_a_clear_definition_error(
    target: Any, kind: str, owner: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        ToolRegistry().register_tool(functools.partial(target, x=1))
    error = caught.value
    assert error.function == owner
    assert error.problem.startswith(f"a functools.partial of {kind}, not of a Python function")
    assert error.fix is not None
    assert "wrap the call in a def" in error.fix
    assert "functools.functools" not in str(error)


def test_a_partial_that_binds_too_much_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        ToolRegistry().register_tool(functools.partial(get_weather, "a", "b", "c"))
    assert caught.value.function == f"{__name__}.get_weather"
    assert "the partial's arguments do not fit the function" in caught.value.problem


def test_errors_about_the_wrapped_function_name_it_once() -> None:
    def untyped(city, *, api_key: str) -> str:  # type: ignore[no-untyped-def]
        return str(city)

    with pytest.raises(ToolDefinitionError) as caught:
        ToolRegistry().register_tool(functools.partial(untyped, api_key="k"))
    error = caught.value
    assert error.function is not None
    assert error.function.endswith(".untyped")
    assert not error.function.startswith("functools.")
    assert error.parameter == "city"
    assert error.fix == "annotate it, e.g. city: str"
