"""Tutorial 1: a first tool, registered from a typed function and called by name."""

from typing import Annotated, Literal

from toolreg import ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> dict:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return {"city": city, "temperature": 18, "unit": unit}


tool = registry["get_weather"]
print(tool.description)  # Get the current weather of a city. Use it when ...
print(tool.parameters["required"])  # ['city']
result = registry.dispatch_tool("get_weather", '{"city": "北京"}')
print(result.content)  # {"city": "北京", "temperature": 18, "unit": "c"}
assert result.ok
assert result.value == {"city": "北京", "temperature": 18, "unit": "c"}
assert get_weather("Paris") == {"city": "Paris", "temperature": 18, "unit": "c"}  # unchanged
