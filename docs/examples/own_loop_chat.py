"""A hand-written loop over chat completions, typed for the openai SDK."""

from openai.types.chat import ChatCompletionMessageParam

from toolreg import ToolRegistry
from toolreg.formats import openai as openai_format
from toolreg.testing import ScriptedServer, text, tool_call

calculator = ToolRegistry()


@calculator.register_tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers. Use it for any multiplication."""
    return a * b


with ScriptedServer([tool_call("multiply", a=6, b=7), text("6 x 7 = 42")]) as server:
    client = server.client()
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "6 x 7?"}]
    completion = client.chat.completions.create(
        model="any-model", messages=messages, tools=calculator.get_tools()
    )
    while calls := openai_format.parse_calls(completion):
        messages.append(openai_format.echo(completion))
        messages.extend(openai_format.observation(r) for r in calculator.dispatch_many(calls))
        completion = client.chat.completions.create(
            model="any-model", messages=messages, tools=calculator.get_tools()
        )
assert completion.choices[0].message.content == "6 x 7 = 42"
