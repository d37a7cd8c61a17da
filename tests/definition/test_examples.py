"""`register_tool(examples=[...])`: example arguments, checked at registration, exported as
Anthropic's `input_examples` and appended to the description for every other provider."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.conversation.signing import tool_fingerprint


def weather_registry(**options: Any) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(**options)
    def get_weather(city: Annotated[str, "City name"], unit: Literal["c", "f"] = "c") -> str:
        """Current weather of a city."""
        return city

    return registry


EXAMPLES = [{"city": "Paris"}, {"city": "北京", "unit": "f"}]


def test_anthropic_gets_its_own_field_and_keeps_the_description() -> None:
    [definition] = weather_registry(examples=EXAMPLES).get_tools("anthropic")
    assert definition["input_examples"] == EXAMPLES
    assert definition["description"] == "Current weather of a city."


@pytest.mark.parametrize("fmt", ["openai", "responses", "gemini", "mcp", "chatglm3", "functions"])
def test_other_providers_read_them_in_the_description(fmt: str) -> None:
    [definition] = weather_registry(examples=EXAMPLES).get_tools(fmt)
    text = json.dumps(definition, ensure_ascii=False)
    assert "input_examples" not in text
    assert (
        'Current weather of a city.\\n\\nExample arguments: {\\"city\\": \\"Paris\\"}; '
        '{\\"city\\": \\"北京\\", \\"unit\\": \\"f\\"}'
    ) in text


def test_without_examples_nothing_changes() -> None:
    registry = weather_registry()
    assert "input_examples" not in registry.get_tools("anthropic")[0]
    assert registry.get_tools()[0]["function"]["description"] == "Current weather of a city."
    assert tool_fingerprint(registry["get_weather"]) == tool_fingerprint(
        weather_registry()["get_weather"]
    )
    assert tool_fingerprint(weather_registry(examples=EXAMPLES)["get_weather"]) != (
        tool_fingerprint(registry["get_weather"])
    )


def test_schema_tools_take_examples_too() -> None:
    registry = ToolRegistry()
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    registry.register_schema("find", schema, lambda q: q, examples=[{"q": "tea"}])
    assert registry.get_tools("anthropic")[0]["input_examples"] == [{"q": "tea"}]


@pytest.mark.parametrize(
    ("examples", "problem"),
    [
        ([{"town": "Paris"}], "example 1 does not fit the parameters"),
        ([{"city": "Paris"}, {"city": 5}], "example 2 does not fit the parameters"),
        ([{"city": "Paris", "unit": "k"}], "example 1 does not fit"),
        (["Paris"], "example 1 is not a JSON object of arguments"),
        ([{"city": float("nan")}], "not a JSON object"),
        ({"city": "Paris"}, "examples must be a list"),
        ("Paris", "examples must be a list"),
        ([{"city": "x"}] * 11, "11 examples; at most 10"),
        ([{"city": "x" * 3000}], "characters of JSON; at most 2000"),
    ],
)
def test_a_bad_example_fails_at_registration_naming_the_function(
    examples: Any, problem: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=problem) as raised:
        weather_registry(examples=examples)
    assert "get_weather" in str(raised.value)


def test_the_examples_are_a_copy_of_what_was_given() -> None:
    given = [{"city": "Paris"}]
    registry = weather_registry(examples=given)
    given[0]["city"] = "Rome"
    assert registry["get_weather"].examples == ({"city": "Paris"},)
    exported = registry.get_tools("anthropic")[0]["input_examples"]
    exported[0]["city"] = "Oslo"
    assert registry["get_weather"].examples == ({"city": "Paris"},)
