"""Tutorial 4: the conversation loop, against a scripted model on 127.0.0.1."""

from typing import Annotated, Literal

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

registry = ToolRegistry()


@registry.register_tool
def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> dict:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return {"city": city, "temperature": 18, "unit": unit}


script = [tool_call("get_weather", city="Beijing"), text("It is 18 °C in Beijing.")]
with ScriptedServer(script) as model:  # a real OpenAI-compatible HTTP server
    chat = Conversation(
        model.client(), "scripted-model", registry=registry, system="You are a weather assistant."
    )
    reply = chat.send("What's the weather in Beijing?")
print(reply.text)  # It is 18 °C in Beijing.
print(reply.stop_reason, reply.rounds)  # answer 2
assert reply.text == "It is 18 °C in Beijing."
assert reply.stop_reason == "answer"
assert reply.tool_results[0].content == '{"city": "Beijing", "temperature": 18, "unit": "c"}'
assert reply.rounds == 2
