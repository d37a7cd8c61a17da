"""Several calls at once, read from an Anthropic message and answered in its format."""

from toolreg import ToolRegistry
from toolreg.formats import anthropic

registry = ToolRegistry()


@registry.register_tool
def get_weather(city: str) -> str:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return f"18 °C in {city}"


message = {  # an Anthropic assistant message (an SDK object works too)
    "role": "assistant",
    "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Oslo"}},
    ],
}
results = registry.dispatch_many(anthropic.parse_calls(message))
answer = {"role": "user", "content": [anthropic.observation(r) for r in results]}
assert [part["tool_use_id"] for part in answer["content"]] == ["toolu_1", "toolu_2"]
assert [r.content for r in results] == ["18 °C in Paris", "18 °C in Oslo"]
