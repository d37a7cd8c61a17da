"""Tutorial 5: tests for your tools, run with pytest (`pytest test_weather_tools.py`)."""

from typing import Annotated, Literal

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, assert_schema, call_tool, text, tool_call

tools = ToolRegistry()


@tools.register_tool
def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> dict:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return {"city": city, "temperature": 18, "unit": unit}


def test_a_call_as_the_model_would_make_it() -> None:
    result = call_tool("get_weather", {"city": "Paris", "unit": "f"}, registry=tools)
    assert result.content == '{"city": "Paris", "temperature": 18, "unit": "f"}'


def test_what_the_model_is_told() -> None:
    assert_schema(
        "get_weather",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Beijing"},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        registry=tools,
    )


def test_a_whole_turn() -> None:
    script = [tool_call("get_weather", city="Oslo"), text("18 °C in Oslo.")]
    with ScriptedServer(script) as server:
        reply = Conversation(server.client(), "any-model", registry=tools).send("Oslo weather?")
        assert reply.text == "18 °C in Oslo."
        server.assert_request(1, contains_tool_result="call_1")
        server.assert_all_consumed()
