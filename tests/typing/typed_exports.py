"""Checked with `mypy --strict`, following the openai SDK, by test_export_types.py.

A user's own loop on the openai SDK with toolreg's exports passed straight in: no line here
may be an error. The `reveal_type` lines pin what each `get_tools(format)` overload returns.
"""

from __future__ import annotations

from typing import Any, Literal

from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam
from typing_extensions import assert_type, reveal_type

import toolreg
from toolreg import ToolRegistry
from toolreg.formats import anthropic, chatglm3, functions, gemini, mcp, openai, responses

registry = ToolRegistry()


@registry.register_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def chat(client: OpenAI) -> str | None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "2 + 3?"}]
    completion = client.chat.completions.create(
        model="any-model", messages=messages, tools=registry.get_tools()
    )
    messages.append(openai.echo(completion))
    for result in registry.dispatch_many(openai.parse_calls(completion)):
        messages.append(openai.observation(result))
    again = client.chat.completions.create(
        model="any-model", messages=messages, tools=toolreg.get_tools(strict=True)
    )
    return again.choices[0].message.content


def respond(client: OpenAI) -> str:
    items: ResponseInputParam = [{"role": "user", "content": "2 + 3?"}]
    response = client.responses.create(
        model="any-model", input=items, tools=registry.get_tools("responses")
    )
    for result in registry.dispatch_many(responses.parse_calls(response)):
        items.append(responses.observation(result))
    return response.output_text


def readme_loop(client: OpenAI, calculator: ToolRegistry) -> str:
    """The guide's loop on the Responses API (docs/examples/own_loop_responses.py)."""
    calculator_tools = calculator.get_tools("responses")
    response = client.responses.create(model="any-model", input="6 x 7?", tools=calculator_tools)
    while calls := responses.parse_calls(response):
        response = client.responses.create(
            model="any-model",
            previous_response_id=response.id,
            input=[responses.observation(r) for r in calculator.dispatch_many(calls)],
            tools=calculator_tools,
        )
    return response.output_text


def readme_chat_loop(client: OpenAI, calculator: ToolRegistry) -> str | None:
    """The guide's loop on chat completions (docs/examples/own_loop_chat.py)."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "6 x 7?"}]
    completion = client.chat.completions.create(
        model="any-model", messages=messages, tools=calculator.get_tools()
    )
    while calls := openai.parse_calls(completion):
        messages.append(openai.echo(completion))
        messages.extend(openai.observation(r) for r in calculator.dispatch_many(calls))
        completion = client.chat.completions.create(
            model="any-model", messages=messages, tools=calculator.get_tools()
        )
    return completion.choices[0].message.content


def legacy(client: OpenAI) -> None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "2 + 3?"}]
    completion = client.chat.completions.create(
        model="any-model", messages=messages, functions=registry.get_tools("functions")
    )
    for result in registry.dispatch_many(functions.parse_calls(completion)):
        messages.append(functions.observation(result))


def other_providers(result: toolreg.ToolResult) -> None:
    schema: dict[str, Any] = registry.get_tools("anthropic")[0]["input_schema"]
    assert_type(anthropic.observation(result)["tool_use_id"], str)
    assert_type(mcp.observation(result)["isError"], bool)
    assert_type(gemini.observation(result)["functionResponse"]["response"], dict[str, str])
    assert_type(chatglm3.observation(result)["role"], Literal["observation"])
    assert_type(registry.get_tools("mcp")[0]["annotations"]["readOnlyHint"], bool)
    assert schema


def runtime_format(name: str) -> None:
    assert_type(registry.get_tools(name), list[dict[str, Any]])


def format_objects() -> None:
    # A `Format` object is typed by what it writes, the options keep their types.
    assert_type(registry.get_tools(anthropic.FORMAT), list[anthropic.ToolDefinition])
    assert_type(registry.get_tools(mcp.FORMAT, strict=True, tags=["x"]), list[mcp.ToolDefinition])


reveal_type(registry.get_tools())
reveal_type(registry.get_tools("openai"))
reveal_type(registry.get_tools("responses"))
reveal_type(registry.get_tools("anthropic"))
reveal_type(registry.get_tools("gemini"))
reveal_type(registry.get_tools("mcp"))
reveal_type(registry.get_tools("chatglm3"))
reveal_type(registry.get_tools("functions"))
reveal_type(toolreg.get_tools(names=["add"]))
reveal_type(openai.observation)
reveal_type(responses.observation)
reveal_type(anthropic.observation)
