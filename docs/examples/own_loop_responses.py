"""A hand-written loop over the Responses API, typed for the openai SDK."""

from toolreg import ToolRegistry
from toolreg.formats import responses
from toolreg.testing import ScriptedServer, text, tool_call

calculator = ToolRegistry()


@calculator.register_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers. Use it for any multiplication."""
    return a * b


with ScriptedServer([tool_call("multiply", a=6, b=7), text("6 x 7 = 42")]) as server:
    client = server.client()
    calculator_tools = calculator.get_tools("responses")
    response = client.responses.create(model="any-model", input="6 x 7?", tools=calculator_tools)
    while calls := responses.parse_calls(response):
        response = client.responses.create(
            model="any-model",
            previous_response_id=response.id,
            input=[responses.observation(r) for r in calculator.dispatch_many(calls)],
            tools=calculator_tools,
        )
assert response.output_text == "6 x 7 = 42"
