"""Streaming: text deltas to on_text as they arrive; the reply is the same as without."""

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

registry = ToolRegistry()


@registry.register_tool
def get_weather(city: str) -> str:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return f"18 °C in {city}"


pieces: list[str] = []
with ScriptedServer([tool_call("get_weather", city="Paris"), text("18 °C in Paris.")]) as server:
    chat = Conversation(
        server.client(), "any-model", registry=registry, stream=True, on_text=pieces.append
    )
    reply = chat.send("Weather in Paris?")
    assert all(request.get("stream") for request in server.requests)
assert "".join(pieces) == reply.text == "18 °C in Paris."
