"""Programmatic tool calling (Responses API): who may call a tool, and its output schema."""

from typing import TypedDict

from toolreg import ToolRegistry


class Weather(TypedDict):
    city: str
    temperature: float


tools = ToolRegistry()


@tools.register_tool(allowed_callers=["programmatic"], output_schema=True)
def get_weather(city: str) -> Weather:
    """Current weather of a city."""
    return {"city": city, "temperature": 18.5}


(definition,) = tools.get_tools("responses")
assert definition["allowed_callers"] == ["programmatic"]
assert definition["output_schema"] == {  # from the return annotation, strict
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
    "required": ["city", "temperature"],
    "additionalProperties": False,
}
