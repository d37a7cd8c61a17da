"""A tool's options are one record, `ToolOptions`: checked when made, kept as `tool.options`."""

from toolreg import ToolDefinitionError, ToolOptions, ToolRegistry

options = ToolOptions(read_only=True, timeout=5, tags=["weather"])
assert options.tags == frozenset({"weather"})  # each value held in one form

registry = ToolRegistry()


@registry.register_tool(**options.given())
def get_weather(city: str) -> str:
    """Get the current weather of a city."""
    return f"18 C in {city}"


tool = registry["get_weather"]
assert tool.options == options  # the record it was registered with
assert tool.timeout == 5  # and each option

try:
    ToolOptions(timeout=0)
except ToolDefinitionError as exc:
    refused = str(exc)
assert "timeout=0 must be a positive number of seconds" in refused
