"""The loop against any OpenAI-compatible endpoint: OPENAI_BASE_URL and TOOLREG_MODEL.

Without OPENAI_BASE_URL the same turn runs offline, against a scripted model on 127.0.0.1.
"""

import contextlib
import os

from openai import OpenAI

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

registry = ToolRegistry()


@registry.register_tool
def get_weather(city: str) -> dict:
    """Get the current weather of a city. Use it when the user asks about weather or rain."""
    return {"city": city, "temperature": 18}


with contextlib.ExitStack() as stack:
    if os.environ.get("OPENAI_BASE_URL"):  # vLLM, Ollama, llama.cpp, OpenAI, ...
        client = OpenAI(api_key=os.environ.get("OPENAI_API_KEY", "none"))
        model = os.environ.get("TOOLREG_MODEL", "gpt-4o-mini")
    else:
        script = [tool_call("get_weather", city="Beijing"), text("18 °C in Beijing.")]
        client = stack.enter_context(ScriptedServer(script)).client()
        model = "scripted-model"
    chat = Conversation(client, model, registry=registry, system="You are a weather assistant.")
    reply = chat.send("What's the weather in Beijing?")
    print(reply.text)  # the answer, after the tool ran
    print(reply.stop_reason)  # "answer"
    print(reply.usage.total_tokens, len(reply.tool_results), reply.rounds)
assert reply.stop_reason == "answer"
assert reply.tool_results
