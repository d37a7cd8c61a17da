"""Structured output: the reply's JSON validated and converted to a dataclass."""

from dataclasses import dataclass

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text


@dataclass
class Forecast:
    city: str
    temperature: float


script = [text('{"city": "Beijing", "temperature": 18}')]
with ScriptedServer(script) as server:
    chat = Conversation(server.client(), "any-model", registry=ToolRegistry())
    reply = chat.send("Give me the forecast as JSON.", output_type=Forecast)
    sent = server.requests[0]["response_format"]["json_schema"]
print(reply.output)  # Forecast(city='Beijing', temperature=18.0)
assert reply.output == Forecast(city="Beijing", temperature=18.0)
assert sent["strict"] is True
