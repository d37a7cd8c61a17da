"""Tutorial 3: dispatching what a model sends, the good calls and the bad ones."""

from typing import Annotated, Literal

from toolreg import ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> dict:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return {"city": city, "temperature": 18, "unit": unit}


good = registry.dispatch_tool("get_weather", '{"city": "Paris", "unit": "f"}')
assert good.ok
assert good.content == '{"city": "Paris", "temperature": 18, "unit": "f"}'

typo = registry.dispatch_tool("get_wether", '{"city": "Paris"}')
print(typo.content)
# Unknown tool 'get_wether'. Did you mean 'get_weather'? Available: get_weather.
assert typo.error_kind == "unknown_tool"

bad = registry.dispatch_tool("get_weather", '{"city": 42, "unit": "k"}')
print(bad.content)
# Invalid arguments for tool 'get_weather':
# - city: expected string, got integer
# - unit: 'k' is not one of 'c', 'f'
assert bad.error_kind == "invalid_arguments"

broken = registry.dispatch_tool("get_weather", '{"city": "北京"')  # cut-off JSON
assert broken.error_kind == "invalid_json"
assert not broken.ok
