"""Every dialect end to end: "tools", legacy "functions", and "chatglm3"."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, call, function_call, raw, text, tool_call, tool_calls

MODEL = "scripted-model"
WEATHER = '{"city": "Paris", "temp": 18}'


def converse(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=registry, **options)


DEFINITION = {
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


# -- "tools" (the default) -------------------------------------------------------------------


def test_tools_dialect_sends_tools_and_role_tool(registry: ToolRegistry) -> None:
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        reply = converse(server, registry, dialect="tools").send("go")
        first, second = server.requests
    assert first["tools"] == [{"type": "function", "function": DEFINITION}]
    assert first["tool_choice"] == "auto"
    assert "functions" not in first
    assert second["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": WEATHER}
    assert reply.text == "Sunny."


# -- legacy "functions" ------------------------------------------------------------------------


def test_functions_dialect_round_trip(registry: ToolRegistry) -> None:
    script = [function_call("get_weather", city="Paris"), text("Sunny in Paris.")]
    with ScriptedServer(script) as server:
        reply = converse(server, registry, dialect="functions").send("Weather in Paris?")
        server.assert_all_consumed()
        first = server.assert_request(0, tool_names=["get_weather"])
        second = server.assert_request(1, contains_tool_result="get_weather")
    assert first["functions"] == [DEFINITION]
    assert first["function_call"] == "auto"
    assert "tools" not in first
    assert "tool_choice" not in first
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": "",
            "function_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {"role": "function", "name": "get_weather", "content": WEATHER},
    ]
    assert reply.text == "Sunny in Paris."
    # the dialect's calls carry no id: the loop gives each its own (never sent)
    assert reply.tool_results[0].call_id == "toolreg_1_0"


def test_functions_dialect_named_choice_and_final_call(registry: ToolRegistry) -> None:
    script = [function_call("get_weather", city="Paris"), text("Done.")]
    with ScriptedServer(script) as server:
        reply = converse(
            server, registry, dialect="functions", tool_choice="get_weather", max_rounds=1
        ).send("go")
        server.assert_request(0, tool_choice=None)
        first, final = server.requests
    assert first["function_call"] == {"name": "get_weather"}
    assert final["function_call"] == "none"
    assert final["functions"] == [DEFINITION]
    assert reply.stop_reason == "max_rounds"


def test_functions_dialect_tool_calls_are_not_its_calls(registry: ToolRegistry) -> None:
    # A server that answers `tool_calls` to a `functions` request: nothing runs, the text
    # is the answer and no unanswered call is left in the history.
    turn = tool_calls(call("get_weather", city="Paris"), content="Checking.")
    with ScriptedServer([turn]) as server:
        reply = converse(server, registry, dialect="functions").send("go")
    assert reply.tool_results == []
    assert reply.messages[-1] == {"role": "assistant", "content": "Checking."}


# -- "chatglm3" --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "turn",
    [
        pytest.param(function_call("get_weather", city="Paris"), id="function_call"),
        pytest.param(
            raw(
                {
                    "role": "assistant",
                    "content": '{"name": "get_weather", "parameters": {"city": "Paris"}}',
                }
            ),
            id="json-content-parameters",
        ),
        pytest.param(
            raw(
                {
                    "role": "assistant",
                    "content": '{"name": "get_weather", "arguments": {"city": "Paris"}}',
                }
            ),
            id="json-content-arguments",
        ),
        pytest.param(tool_call("get_weather", city="Paris"), id="tool_calls"),
    ],
)
def test_chatglm3_dialect_round_trip(registry: ToolRegistry, turn: Any) -> None:
    with ScriptedServer([turn, text("晴，18 度。")]) as server:
        reply = converse(server, registry, dialect="chatglm3").send("巴黎天气？")
        server.assert_all_consumed()
        first, second = server.requests
    assert first["tools"] == [DEFINITION]
    assert first["tool_choice"] == "auto"
    assert second["messages"][-1] == {"role": "observation", "content": WEATHER}
    assert second["messages"][-2]["role"] == "assistant"
    assert reply.tool_results[0].value == {"city": "Paris", "temp": 18}
    assert reply.text == "晴，18 度。"


def test_chatglm3_json_content_is_echoed_as_received(registry: ToolRegistry) -> None:
    content = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    with ScriptedServer([raw({"role": "assistant", "content": content}), text("ok")]) as server:
        converse(server, registry, dialect="chatglm3").send("go")
        echoed = server.requests[1]["messages"][1]
    assert echoed == {"role": "assistant", "content": content}


def test_chatglm3_plain_json_that_is_no_call_is_an_answer(registry: ToolRegistry) -> None:
    answer = json.dumps({"temp": 18})
    with ScriptedServer([text(answer)]) as server:
        reply = converse(server, registry, dialect="chatglm3").send("go")
    assert reply.text == answer
    assert reply.tool_results == []


def test_chatglm3_json_with_a_name_but_no_arguments_is_an_answer(registry: ToolRegistry) -> None:
    answer = '{"name": "Ann", "age": 31}'
    with ScriptedServer([text(answer)]) as server:
        reply = converse(server, registry, dialect="chatglm3").send("Who?")
    assert reply.text == answer
    assert reply.tool_results == []


def test_chatglm3_named_choice_uses_the_openai_shape(registry: ToolRegistry) -> None:
    with ScriptedServer([text("ok")]) as server:
        converse(server, registry, dialect="chatglm3", tool_choice="get_weather").send("go")
        server.assert_request(
            0, tool_choice={"type": "function", "function": {"name": "get_weather"}}
        )


def test_chatglm3_final_call(registry: ToolRegistry) -> None:
    script = [function_call("get_weather", city="Paris"), text("Done.")]
    with ScriptedServer(script) as server:
        reply = converse(server, registry, dialect="chatglm3", max_rounds=1).send("go")
        server.assert_request(1, tool_choice="none", has_tools=True)
    assert reply.stop_reason == "max_rounds"


def test_a_deep_json_answer_in_the_chatglm3_dialect_is_just_text(adder: ToolRegistry) -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    with ScriptedServer([text(deep)]) as server:
        reply = Conversation(server.client(), "m", registry=adder, dialect="chatglm3").send("go")
    assert reply.text == deep
