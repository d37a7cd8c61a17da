"""Checked with `mypy --strict` by test_export_types.py: each marked line MUST be an error.

If the exports were typed `Any` (or plain dicts), these lines would pass silently.
"""

from __future__ import annotations

from openai import OpenAI
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam

from toolreg import ToolRegistry, ToolResult
from toolreg.formats import anthropic, openai

registry = ToolRegistry()


def misuse(client: OpenAI, result: ToolResult) -> None:
    messages: list[ChatCompletionMessageParam] = []
    items: ResponseInputParam = []
    claude = registry.get_tools("anthropic")
    chat_tools = registry.get_tools()
    client.chat.completions.create(model="m", messages=messages, tools=claude)  # error: arg-type
    client.responses.create(model="m", input="hi", tools=chat_tools)  # error: arg-type
    messages.append(anthropic.observation(result))  # error: arg-type
    items.append(openai.observation(result))  # error: arg-type
    openai.echo(result)["tool_calls"] = "x"  # error: typeddict-item
    chat_tools[0]["function"]["paramters"]  # error: typeddict-item
    claude[0]["inputSchema"]  # error: typeddict-item
    registry.get_tools("mcp")[0]["annotations"]["readonlyHint"]  # error: typeddict-item
    registry.get_tools(strict="yes")  # error: call-overload
    registry.get_tools("openai", stirct=True)  # error: call-overload
    registry.get_tools(anthropic.FORMAT)[0]["inputSchema"]  # error: typeddict-item
