"""Structured output: `send(text, output_type=T)` validates, retries, converts."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

import pydantic
import pytest

from toolreg import Conversation, ConversationError, ToolRegistry
from toolreg.conversation.output import OutputSpec
from toolreg.testing import ScriptedServer, text, tool_call

MODEL = "scripted-model"


@dataclass
class Forecast:
    city: str
    temp: int
    rain: bool = False


@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


class Person(pydantic.BaseModel):
    name: str
    age: int


def converse(server: ScriptedServer, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=ToolRegistry(), **options)


def test_invalid_answer_is_corrected_and_converted() -> None:
    script = [text('{"city": "Paris", "temp": "warm"}'), text('{"city": "Paris", "temp": 18}')]
    with ScriptedServer(script) as server:
        conv = converse(server)
        reply = conv.send("Forecast for Paris as JSON", output_type=Forecast)
        server.assert_all_consumed()
        first = server.requests[0]
        retry = server.assert_request(1, message_count=3)
    assert reply.output == Forecast("Paris", 18)
    assert reply.text == '{"city": "Paris", "temp": 18}'
    assert reply.stop_reason == "answer"
    assert reply.rounds == 2

    response_format = first["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Forecast"
    schema = response_format["json_schema"]["schema"]
    assert set(schema["properties"]) == {"city", "temp", "rain"}
    assert retry["response_format"] == response_format

    invalid, correction = retry["messages"][1:]
    assert invalid == {"role": "assistant", "content": '{"city": "Paris", "temp": "warm"}'}
    assert correction["role"] == "user"
    assert "temp" in correction["content"]
    assert "does not match" in correction["content"]
    assert conv.messages == reply.messages


@pytest.mark.parametrize(
    ("output_type", "answer", "expected"),
    [
        (int, '{"result": 42}', 42),
        (list[int], '{"result": [1, 2]}', [1, 2]),
        (Mood, '{"result": "sad"}', Mood.SAD),
        (Person, '{"name": "Ann", "age": 31}', Person(name="Ann", age=31)),
        (
            Forecast,
            '```json\n{"city": "Oslo", "temp": -3, "rain": true}\n```',
            Forecast("Oslo", -3, True),
        ),
    ],
)
def test_output_types(output_type: Any, answer: str, expected: Any) -> None:
    with ScriptedServer([text(answer)]) as server:
        reply = converse(server).send("answer", output_type=output_type)
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert reply.output == expected
    assert schema["type"] == "object"


def test_a_recursive_type_has_an_object_at_the_root_and_its_defs() -> None:
    answer = '{"name": "a", "children": [{"name": "b"}]}'
    with ScriptedServer([text(answer)]) as server:
        reply = converse(server).send("tree", output_type=Node)
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert reply.output == Node("a", [Node("b")])
    assert schema["type"] == "object"
    assert "$ref" not in schema
    children = schema["properties"]["children"]  # optional: nullable in the strict schema
    assert children["anyOf"] == [
        {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        {"type": "null"},
    ]
    assert "Node" in schema["$defs"]  # kept: the type refers to itself


def test_not_json_is_retried() -> None:
    with ScriptedServer([text("It is 42."), text('{"result": 42}')]) as server:
        reply = converse(server).send("answer", output_type=int)
        correction = server.requests[1]["messages"][-1]["content"]
    assert correction == (
        "Your answer does not match the required JSON schema: The answer is not valid JSON: "
        "Expecting value at line 1, column 1. Answer again with only the corrected JSON."
    )  # one full stop, not "column 1.."
    assert reply.output == 42


def test_output_after_tool_calls() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def get_temp(city: str) -> int:
        return 18

    script = [tool_call("get_temp", city="Paris"), text('{"city": "Paris", "temp": 18}')]
    with ScriptedServer(script) as server:
        conv = Conversation(server.client(), MODEL, registry=registry)
        reply = conv.send("Forecast", output_type=Forecast)
        server.assert_request(0, has_tools=True)
    assert reply.output == Forecast("Paris", 18)
    assert len(reply.tool_results) == 1


def test_retries_exhausted_raise_and_keep_the_history() -> None:
    script = [text("{}"), text('{"city": 1}'), text("nope")]
    with ScriptedServer(script) as server:
        conv = converse(server, system="Answer in JSON.")
        before = list(conv.messages)
        with pytest.raises(ConversationError, match="after 2 retries") as caught:
            conv.send("Forecast", output_type=Forecast)
        server.assert_all_consumed()
    assert "not valid JSON" in str(caught.value)
    assert conv.messages == before
    assert caught.value.status_code is None


def test_output_retries_zero_fails_on_the_first_invalid_answer() -> None:
    with ScriptedServer([text('{"result": "x"}')]) as server:
        conv = converse(server, output_retries=0)
        with pytest.raises(ConversationError, match="result"):
            conv.send("n", output_type=int)
        assert len(server.requests) == 1


def test_without_output_type_no_response_format_is_sent() -> None:
    with ScriptedServer([text(json.dumps({"a": 1}))]) as server:
        reply = converse(server).send("hi")
        body = server.requests[0]
    assert "response_format" not in body
    assert reply.output is None


def test_structured_output_fences_are_removed_without_a_regex() -> None:
    spec = OutputSpec.for_type(dict[str, int])
    assert spec.parse('```json\n{"a": 1}\n```') == ({"a": 1}, [])
    value, problems = spec.parse("```" + " " * 50_000 + "x")  # no catastrophic backtracking
    assert value is None
    assert problems[0].startswith("The answer is not valid JSON: ")


def test_a_deep_structured_answer_is_a_problem_not_a_crash() -> None:
    spec = OutputSpec.for_type(dict[str, list[int]])
    value, problems = spec.parse('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert value is None
    assert problems == ["The answer is nested too deeply: the limit is 64 levels."]
