"""Tutorial 2: the same tool exported for each provider."""

from typing import Annotated, Literal

from toolreg import ToolRegistry

registry = ToolRegistry()


@registry.register_tool
def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> dict:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return {"city": city, "temperature": 18, "unit": unit}


openai_tools = registry.get_tools()  # chat completions: tools=[...]
assert openai_tools[0] == {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather of a city. Use it when the user asks about "
        "weather or rain.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Beijing"},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
anthropic_tools = registry.get_tools("anthropic")  # Messages API: input_schema
assert anthropic_tools[0]["input_schema"]["required"] == ["city"]
responses_tools = registry.get_tools("responses")  # Responses API: flat entries
assert responses_tools[0]["name"] == "get_weather"
strict = registry.get_tools(strict=True)[0]["function"]  # OpenAI structured outputs
assert strict["strict"] is True
assert strict["parameters"]["required"] == ["city", "unit"]
for name in ("openai", "responses", "anthropic", "gemini", "mcp", "chatglm3", "functions"):
    print(name, sorted(registry.get_tools(name)[0]))
