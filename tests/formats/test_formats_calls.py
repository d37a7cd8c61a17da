"""Tool calls in, for every provider: parse the provider's call, dispatch it, answer it."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import ToolCall, ToolRegistry
from toolreg.formats import anthropic, gemini, mcp, responses


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return {"city": city, "temp": 18}

    return reg


def test_responses_function_calls(registry: ToolRegistry) -> None:
    response = {
        "output": [
            {"type": "reasoning", "id": "rs_1"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "message", "content": []},
        ]
    }
    calls = responses.parse_calls(response)
    assert calls == [ToolCall("get_weather", '{"city": "Paris"}', "c1")]
    assert responses.parse_calls(response["output"]) == calls
    (result,) = registry.dispatch_many(calls)
    assert responses.observation(result) == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": '{"city": "Paris", "temp": 18}',
    }


def test_anthropic_tool_use_blocks(registry: ToolRegistry) -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "北京"}},
        ],
    }
    calls = anthropic.parse_calls(message)
    assert calls == [ToolCall("get_weather", {"city": "北京"}, "toolu_1")]
    (result,) = registry.dispatch_many(calls)
    assert anthropic.observation(result) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": '{"city": "北京", "temp": 18}',
        "is_error": False,
    }


def test_gemini_function_call_parts(registry: ToolRegistry) -> None:
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "get_weather", "args": {"city": "Tokyo"}}},
                    ],
                }
            }
        ]
    }
    calls = gemini.parse_calls(response)
    assert calls == [ToolCall("get_weather", {"city": "Tokyo"}, None)]
    assert gemini.parse_calls(response["candidates"][0]["content"]["parts"]) == calls
    result = registry.dispatch_tool(calls[0].name, calls[0].arguments)
    assert gemini.observation(result) == {
        "functionResponse": {
            "name": "get_weather",
            "response": {"result": '{"city": "Tokyo", "temp": 18}'},
        }
    }


def test_mcp_tools_call_params(registry: ToolRegistry) -> None:
    (call,) = mcp.parse_calls({"name": "get_weather", "arguments": {"city": "Oslo"}})
    assert call == ToolCall("get_weather", {"city": "Oslo"}, None)
    result = registry.dispatch_tool(call.name, call.arguments)
    assert mcp.observation(result) == {
        "content": [{"type": "text", "text": '{"city": "Oslo", "temp": 18}'}],
        "isError": False,
    }
    (missing,) = mcp.parse_calls({"name": "nope"})
    unknown = registry.dispatch_tool(missing.name, missing.arguments)
    assert mcp.observation(unknown)["isError"] is True


@pytest.mark.parametrize(
    "junk", [None, 42, "text", [None, 3, "x"], {"output": None}, {"content": [1, 2]}]
)
def test_parsers_ignore_what_is_not_a_call(junk: Any) -> None:
    assert responses.parse_calls(junk if isinstance(junk, (dict, list)) else []) == []
    assert anthropic.parse_calls(junk if isinstance(junk, (dict, list)) else []) == []
    assert gemini.parse_calls(junk if isinstance(junk, (dict, list)) else []) == []
    assert mcp.parse_calls(junk) == [ToolCall("", None, None)]


def test_sdk_objects_are_read_through_model_dump(registry: ToolRegistry) -> None:
    class Block:
        def model_dump(self) -> dict[str, Any]:
            return {
                "type": "tool_use",
                "id": "t9",
                "name": "get_weather",
                "input": {"city": "Rome"},
            }

    assert anthropic.parse_calls([Block()]) == [ToolCall("get_weather", {"city": "Rome"}, "t9")]


# -- the SDK's own objects ---------------------------------------------------------------------


def _completion() -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": '{"city": "Oslo"}',
                                },
                            }
                        ],
                    },
                }
            ],
        }
    )


def test_openai_parse_calls_takes_the_sdks_message_and_completion(registry: ToolRegistry) -> None:
    from toolreg.formats import openai as openai_format

    completion = _completion()
    expected = [ToolCall("get_weather", '{"city": "Oslo"}', "call_1")]
    assert openai_format.parse_calls(completion.choices[0].message) == expected
    assert openai_format.parse_calls(completion) == expected
    assert openai_format.parse_calls(completion.model_dump()) == expected
    results = registry.dispatch_many(openai_format.parse_calls(completion))
    assert results[0].content == '{"city": "Oslo", "temp": 18}'
    assert openai_format.observation(results[0])["tool_call_id"] == "call_1"


def test_openai_parse_calls_takes_a_streamed_chunk() -> None:
    from openai.types.chat import ChatCompletionChunk

    from toolreg.formats import openai as openai_format

    chunk = ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_9",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": "{}"},
                            }
                        ]
                    },
                }
            ],
        }
    )
    assert openai_format.parse_calls(chunk) == [ToolCall("get_weather", "{}", "call_9")]


def test_responses_parse_calls_takes_the_sdks_response() -> None:
    from openai.types.responses import Response

    response = Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "m",
            "output": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": '{"city": "Oslo"}',
                    "status": "completed",
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )
    assert responses.parse_calls(response) == [
        ToolCall("get_weather", '{"city": "Oslo"}', "call_1")
    ]
    assert responses.parse_calls(response.output) == responses.parse_calls(response)


def test_chatglm3_and_functions_take_sdk_objects_too() -> None:
    from openai.types.chat import ChatCompletionMessage

    from toolreg.formats import chatglm3, functions

    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    )
    expected = [ToolCall("get_weather", '{"city": "Oslo"}', None)]
    assert functions.parse_calls(message) == expected
    assert chatglm3.parse_calls(message) == expected


# -- the assistant message, sent back -----------------------------------------------------------


def test_openai_echo_takes_messages_completions_and_dicts() -> None:
    from toolreg.errors import ConversationError
    from toolreg.formats import openai as openai_format

    completion = _completion()
    expected = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert openai_format.echo(completion) == expected
    assert openai_format.echo(completion.choices[0].message) == expected
    assert openai_format.echo(completion.model_dump()) == expected
    # a server that sends the arguments decoded; a text answer with no content at all
    decoded = {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}]}
    assert openai_format.echo(decoded)["tool_calls"] == [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    ]
    assert openai_format.echo({"role": "assistant", "content": None}) == {
        "role": "assistant",
        "content": "",
    }
    assert openai_format.echo({"content": "no", "refusal": "I can't."})["refusal"] == "I can't."
    with pytest.raises(ConversationError, match="not a list"):
        openai_format.echo({"tool_calls": "x"})
