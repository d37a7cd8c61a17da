"""Structured output that the model gets wrong first: the problems go back, and it retries."""

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text

schema = {  # output_type= also takes a JSON Schema: reply.output is the validated JSON
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
    "required": ["city", "temperature"],
}
script = [text('{"city": "Beijing"}'), text('{"city": "Beijing", "temperature": 18}')]
with ScriptedServer(script) as server:
    chat = Conversation(server.client(), "any-model", registry=ToolRegistry(), output_retries=1)
    reply = chat.send("The forecast as JSON, please.", output_type=schema)
    told = server.requests[1]["messages"][-1]["content"]  # what the model was told
print(told)
print(reply.output, reply.rounds)  # {'city': 'Beijing', 'temperature': 18} 2
assert reply.output == {"city": "Beijing", "temperature": 18}
assert "temperature" in told
