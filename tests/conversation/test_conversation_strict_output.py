"""Structured output goes out strict when its schema can be (`output_strict=False` turns
that off), with no copy of the root type in its own `$defs`; checked on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pydantic
import pytest

from toolreg import Conversation, ConversationError, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, text

MODEL = "scripted-model"


@dataclass
class Forecast:
    city: str
    temperature: float
    rain: bool = False


@dataclass
class Place:
    name: str
    country: str = "FR"


@dataclass
class Trip:
    places: list[Place]
    note: str = ""


class Person(pydantic.BaseModel):
    name: str
    age: int = 30


@dataclass
class Loose:
    scores: dict[str, int] = field(default_factory=dict)


STRICT_FORECAST = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "temperature": {"type": "number"},
        "rain": {
            "description": "Default: false (send null for the default).",
            "anyOf": [{"type": "boolean"}, {"type": "null"}],
        },
    },
    "required": ["city", "temperature", "rain"],
    "additionalProperties": False,
}


def sent_format(body: dict[str, Any], dialect: str) -> dict[str, Any]:
    """The structured-output request entry, as one dict with name, schema (and strict)."""
    if dialect == "responses":
        assert "response_format" not in body
        fmt: dict[str, Any] = body["text"]["format"]
        assert fmt.pop("type") == "json_schema"
        return fmt
    assert body["response_format"]["type"] == "json_schema"
    return dict(body["response_format"]["json_schema"])


def send(
    answers: list[str], output_type: Any, dialect: str = "tools", **options: Any
) -> tuple[Any, list[dict[str, Any]]]:
    with ScriptedServer([text(a) for a in answers]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=ToolRegistry(), dialect=dialect, **options
        )
        reply = chat.send("As JSON.", output_type=output_type)
        server.assert_all_consumed()
        return reply, list(server.requests)


@pytest.mark.parametrize("dialect", ["tools", "responses"])
def test_a_schema_that_can_be_strict_goes_out_strict(dialect: str) -> None:
    answer = '{"city": "Paris", "temperature": 18, "rain": null}'  # null: the default
    reply, (body,) = send([answer], Forecast, dialect)
    fmt = sent_format(body, dialect)
    assert fmt == {"name": "Forecast", "schema": STRICT_FORECAST, "strict": True}
    assert reply.output == Forecast("Paris", 18.0, False)


@pytest.mark.parametrize("dialect", ["tools", "responses"])
def test_conversation_strict_true_also_sends_strict_output(dialect: str) -> None:
    answer = '{"city": "Oslo", "temperature": 1, "rain": true}'
    _, (body,) = send([answer], Forecast, dialect, strict=True)
    assert sent_format(body, dialect)["strict"] is True


@pytest.mark.parametrize("dialect", ["tools", "responses"])
def test_output_strict_false_sends_the_schema_as_it_is(dialect: str) -> None:
    reply, (body,) = send(
        ['{"city": "Oslo", "temperature": 1}'], Forecast, dialect, output_strict=False
    )
    fmt = sent_format(body, dialect)
    assert "strict" not in fmt
    schema = fmt["schema"]
    assert schema["required"] == ["city", "temperature"]
    assert schema["properties"]["rain"] == {"type": "boolean", "default": False}
    assert "$defs" not in schema
    assert reply.output == Forecast("Oslo", 1.0)


@pytest.mark.parametrize("output_type", [Forecast, Person])
@pytest.mark.parametrize("strict", [True, False])
def test_the_root_type_is_not_copied_into_its_own_defs(output_type: Any, strict: bool) -> None:
    answer = (
        '{"city": "Rome", "temperature": 20, "rain": false}'
        if output_type is Forecast
        else '{"name": "Ann", "age": 31}'
    )
    _, (body,) = send([answer], output_type, output_strict=strict)
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "object"
    assert "$defs" not in schema


def test_a_nested_type_keeps_only_its_nested_defs_all_strict() -> None:
    answer = '{"places": [{"name": "Lyon", "country": null}], "note": null}'
    reply, (body,) = send([answer], Trip)
    fmt = body["response_format"]["json_schema"]
    assert fmt["strict"] is True
    schema = fmt["schema"]
    assert set(schema["$defs"]) == {"Place"}  # not Trip itself
    place = schema["$defs"]["Place"]
    assert place["required"] == ["name", "country"]
    assert place["additionalProperties"] is False
    assert schema["required"] == ["places", "note"]
    assert reply.output == Trip([Place("Lyon", "FR")], "")  # both nulls: the defaults


def test_a_schema_that_cannot_be_strict_goes_out_without_strict() -> None:
    reply, (body,) = send(['{"scores": {"a": 1}}'], Loose)
    fmt = body["response_format"]["json_schema"]
    assert "strict" not in fmt
    assert fmt["schema"]["properties"]["scores"]["additionalProperties"] == {"type": "integer"}
    assert reply.output == Loose({"a": 1})


def test_a_null_for_a_required_property_is_still_an_error_to_correct() -> None:
    answers = [
        '{"city": null, "temperature": 18, "rain": null}',
        '{"city": "Nice", "temperature": 18, "rain": null}',
    ]
    reply, (_, retry) = send(answers, Forecast)
    correction = retry["messages"][-1]["content"]
    assert "city" in correction
    assert reply.output == Forecast("Nice", 18.0)


def test_nulls_everywhere_are_not_taken_for_defaults() -> None:
    answers = ['{"city": "Nice", "temperature": null, "rain": null}'] * 3
    with pytest.raises(ConversationError, match="temperature"):
        send(answers, Forecast)


def test_a_json_schema_output_type_that_is_strict_already_is_sent_unchanged() -> None:
    schema = {
        "title": "Point",
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
        "additionalProperties": False,
    }
    reply, (body,) = send(['{"x": 1, "y": 2}'], schema)
    assert body["response_format"]["json_schema"] == {
        "name": "Point",
        "schema": schema,
        "strict": True,
    }
    assert reply.output == {"x": 1, "y": 2}


def test_output_strict_must_be_a_bool() -> None:
    with pytest.raises(UsageError, match="output_strict must be True or False"):
        Conversation(object(), MODEL, registry=ToolRegistry(), output_strict="yes")  # type: ignore[arg-type]


def test_output_strict_survives_an_exported_state() -> None:
    chat = Conversation(object(), MODEL, registry=ToolRegistry(), output_strict=False)
    state = chat.export_state()
    assert state["options"]["output_strict"] is False
    again = Conversation.from_state(state, object(), registry=ToolRegistry())
    assert again.options.output_strict is False
