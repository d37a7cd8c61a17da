"""Dispatch step 3: validation against the tool's schema, every problem with its path."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import json
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from toolreg import InvalidArgumentsError, Param, ToolRegistry


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Item:
    name: str
    qty: Annotated[int, Param(ge=1)]


class Address(TypedDict):
    street: str
    zip: Annotated[str, Param(pattern=r"^\d{5}$")]


calls: list[dict[str, Any]] = []


def make_registry(**settings: Any) -> ToolRegistry:
    reg = ToolRegistry(**settings)

    @reg.register_tool
    def order(
        city: Annotated[str, Param(min_length=2, max_length=5, pattern="^[a-z]+$")],
        n: Annotated[int, Param(ge=1, le=10)],
        ratio: Annotated[float, Param(gt=0, lt=1, multiple_of=0.25)] = 0.5,
        color: Color = Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        items: Optional[list[Item]] = None,
        address: Optional[Address] = None,
        tags: Annotated[Optional[list[str]], Param(max_length=2)] = None,
    ) -> str:
        """Place an order."""
        calls.append(dict(locals()))
        return "ok"

    @reg.register_tool
    def flexible(key: str, **extra: int) -> str:
        """Takes any extra integer keys."""
        calls.append({"key": key, **extra})
        return "ok"

    return reg


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    calls.clear()


def problem_text(result: Any) -> str:
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert isinstance(result.error, InvalidArgumentsError)
    assert result.error.message == result.content
    return str(result.content)


def test_valid_arguments_reach_the_function() -> None:
    result = make_registry().dispatch_tool("order", {"city": "oslo", "n": 3})
    assert result.ok
    assert calls[0]["city"] == "oslo"
    assert calls[0]["n"] == 3


def test_missing_required() -> None:
    result = make_registry().dispatch_tool("order", '{"n": 1}')
    assert problem_text(result) == (
        "Invalid arguments for tool 'order': missing required property 'city'."
    )
    assert result.error.problems == (("(root)", "missing required property 'city'"),)


def test_every_missing_required_is_listed() -> None:
    result = make_registry().dispatch_tool("order", "{}")
    assert problem_text(result) == (
        "Invalid arguments for tool 'order':\n"
        "- missing required property 'city'\n"
        "- missing required property 'n'"
    )


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({"city": 5, "n": 1}, "city: expected string, got integer"),
        ({"city": "ab", "n": 1.5}, "n: expected integer, got number"),
        ({"city": "ab", "n": True}, "n: expected integer, got boolean"),
        ({"city": "ab", "n": None}, "n: expected integer, got null"),
        ({"city": "ab", "n": [1]}, "n: expected integer, got array"),
        ({"city": "ab", "n": {}}, "n: expected integer, got object"),
        ({"city": "ab", "n": 1, "ratio": "half"}, "ratio: expected number, got string"),
        (
            {"city": "ab", "n": 1, "items": {"name": "x"}},
            "items: does not match any allowed type (expected array or null)",
        ),
    ],
)
def test_wrong_types(arguments: dict[str, Any], line: str) -> None:
    result = make_registry().dispatch_tool("order", arguments)
    assert problem_text(result) == f"Invalid arguments for tool 'order': {line}."
    assert calls == []


def test_enum_and_literal() -> None:
    result = make_registry().dispatch_tool(
        "order", {"city": "ab", "n": 1, "color": "green", "mode": "medium"}
    )
    assert problem_text(result) == (
        "Invalid arguments for tool 'order':\n"
        "- color: 'green' is not one of 'red', 'blue'\n"
        "- mode: 'medium' is not one of 'fast', 'slow'"
    )


def test_enum_by_member_name_is_not_accepted() -> None:
    result = make_registry().dispatch_tool("order", {"city": "ab", "n": 1, "color": "RED"})
    assert problem_text(result) == (
        "Invalid arguments for tool 'order': color: 'RED' is not one of 'red', 'blue'."
    )


def test_constraints() -> None:
    reg = make_registry()
    low = reg.dispatch_tool("order", {"city": "X", "n": 0, "ratio": 1})
    assert problem_text(low) == (
        "Invalid arguments for tool 'order':\n"
        "- city: must have at least 2 characters\n"
        "- city: must match pattern '^[a-z]+$'\n"
        "- n: must be >= 1\n"
        "- ratio: must be < 1"
    )
    high = reg.dispatch_tool(
        "order", {"city": "toolong", "n": 11, "ratio": 0.3, "tags": ["a", "b", "c"]}
    )
    assert problem_text(high) == (
        "Invalid arguments for tool 'order':\n"
        "- city: must have at most 5 characters\n"
        "- n: must be <= 10\n"
        "- ratio: must be a multiple of 0.25\n"
        "- tags: must have at most 2 items"
    )
    zero = reg.dispatch_tool("order", {"city": "ab", "n": 1, "ratio": 0})
    assert problem_text(zero) == "Invalid arguments for tool 'order': ratio: must be > 0."
    assert calls == []


def test_unexpected_keys_are_named() -> None:
    result = make_registry().dispatch_tool(
        "order", {"city": "ab", "n": 1, "colour": "red", "a b": 1, "": 2}
    )
    assert problem_text(result) == (
        "Invalid arguments for tool 'order':\n"
        "- unexpected property 'colour'\n"
        "- unexpected property 'a b'\n"
        "- unexpected property ''"
    )
    assert result.error.problems == (
        ("(root)", "unexpected property 'colour'"),
        ("(root)", "unexpected property 'a b'"),
        ("(root)", "unexpected property ''"),
    )


def test_long_unexpected_key_is_shortened() -> None:
    result = make_registry().dispatch_tool("order", {"city": "ab", "n": 1, "k" * 500: 1})
    assert problem_text(result) == (
        f"Invalid arguments for tool 'order': unexpected property '{'k' * 60}...'."
    )


def test_kwargs_accept_extra_keys_but_validate_their_values() -> None:
    reg = make_registry()
    assert reg.dispatch_tool("flexible", {"key": "k", "a": 1, "b": 2}).ok
    assert calls == [{"key": "k", "a": 1, "b": 2}]
    result = reg.dispatch_tool("flexible", {"key": "k", "a": "x", "b b": [1]})
    assert problem_text(result) == (
        "Invalid arguments for tool 'flexible':\n"
        "- a: expected integer, got string\n"
        "- ['b b']: expected integer, got array"
    )


def test_nested_paths_in_lists_and_objects() -> None:
    result = make_registry().dispatch_tool(
        "order",
        {
            "city": "ab",
            "n": 1,
            "items": [{"name": "x", "qty": 1}, {"name": 1, "qty": 0}, {"qty": 2, "extra": 1}],
            "address": {"street": "Main", "zip": "1234"},
        },
    )
    assert problem_text(result) == (
        "Invalid arguments for tool 'order':\n"
        "- items[1].name: expected string, got integer\n"
        "- items[1].qty: must be >= 1\n"
        "- items[2]: missing required property 'name'\n"
        "- items[2]: unexpected property 'extra'\n"
        "- address.zip: must match pattern '^\\\\d{5}$'"
    )
    assert result.error.problems[0] == ("items[1].name", "expected string, got integer")
    assert calls == []


def test_every_problem_is_reported_at_once() -> None:
    result = make_registry().dispatch_tool(
        "order", {"city": 1, "n": "many", "color": 3, "mode": None, "zzz": 0}
    )
    # mode: null is not a problem: null for a parameter with a default means the default
    assert problem_text(result) == (
        "Invalid arguments for tool 'order':\n"
        "- city: expected string, got integer\n"
        "- n: expected integer, got string\n"
        "- color: 3 is not one of 'red', 'blue'\n"
        "- unexpected property 'zzz'"
    )
    assert len(result.error.problems) == 4


def test_register_schema_tools_are_validated_too() -> None:
    reg = ToolRegistry()
    seen: list[dict[str, Any]] = []

    def handler(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "ok"

    reg.register_schema(
        "raw",
        {
            "type": "object",
            "properties": {"q": {"type": "string", "minLength": 1}},
            "required": ["q"],
            "additionalProperties": False,
        },
        handler,
    )
    assert reg.dispatch_tool("raw", {"q": "hi"}).ok
    result = reg.dispatch_tool("raw", {"q": "", "x": 1})
    assert problem_text(result) == (
        "Invalid arguments for tool 'raw':\n"
        "- q: must have at least 1 character\n"
        "- unexpected property 'x'"
    )
    assert seen == [{"q": "hi"}]


def test_the_message_for_many_problems_is_short() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def total(xs: list[int]) -> int:
        """Sum integers."""
        return sum(xs)

    result = reg.dispatch_tool("total", json.dumps({"xs": ["a"] * 20_000}))
    lines = result.content.splitlines()
    assert lines[0] == "Invalid arguments for tool 'total':"
    assert lines[1] == "- xs[0]: expected integer, got string"
    assert lines[-1] == "- ... and 81 more problems"
    assert len(lines) == 22


def test_boolean_subschemas_in_an_explicit_schema() -> None:
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"x": True, "y": False}}
    reg.register_schema("echo", schema, lambda **kw: json.dumps(kw))
    assert reg.dispatch_tool("echo", '{"x": [1]}').content == '{"x": [1]}'
    assert reg.dispatch_tool("echo", '{"y": 1}').content == (
        "Invalid arguments for tool 'echo': y: no value is allowed here."
    )


def test_explicit_schema_rejects_keys_its_function_cannot_take() -> None:
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}
    reg.register_schema("get_time", schema, lambda tz: f"12:00 in {tz}")
    result = reg.dispatch_tool("get_time", '{"tz": "UTC", "verbose": true}')
    assert result.content == "Invalid arguments for tool 'get_time': unexpected property 'verbose'."
    reg.register_schema("echo", schema, lambda **kw: json.dumps(kw, sort_keys=True))
    assert reg.dispatch_tool("echo", '{"tz": "UTC", "v": 1}').content == '{"tz": "UTC", "v": 1}'


def test_validation_in_async_dispatch() -> None:
    reg = make_registry()
    result = asyncio.run(reg.adispatch_tool("order", {"city": "ab"}))
    assert problem_text(result) == (
        "Invalid arguments for tool 'order': missing required property 'n'."
    )
    assert calls == []


def test_invalid_arguments_never_call_the_function_even_with_coercion_off() -> None:
    reg = make_registry(coerce=False)
    for bad in ({"city": "ab", "n": "3"}, {"city": "ab"}, {"city": "ab", "n": 1, "x": 1}):
        assert reg.dispatch_tool("order", bad).error_kind == "invalid_arguments"
    assert calls == []


def test_chatglm3_not_required_parameter_without_default_gets_none() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool
    def weather(
        city: Annotated[str, "The city", True],
        unit: Annotated[str, "c or f", False],
    ) -> str:
        seen.append((city, unit))
        return "ok"

    assert reg["weather"].parameters["required"] == ["city"]
    assert reg.dispatch_tool("weather", {"city": "x"}).ok
    assert reg.dispatch_tool("weather", {"city": "x", "unit": "f"}).ok
    assert seen == [("x", None), ("x", "f")]
    assert reg.dispatch_tool("weather", {"unit": "f"}).content == (
        "Invalid arguments for tool 'weather': missing required property 'city'."
    )


# -- every problem at once --------------------------------------------------------------------


@dataclasses.dataclass
class Window:
    start: str
    end: str

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError("start is after end")


def every_problem_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def book(day: datetime.date, window: Window, room: str, seats: int = 1) -> str:
        """Book a room."""
        return "booked"

    return reg


def test_conversion_problems_are_all_reported_when_the_schema_passes() -> None:
    result = every_problem_registry().dispatch_tool(
        "book", '{"day": "2024-02-30", "window": {"start": "18:00", "end": "09:00"}, "room": "A"}'
    )
    assert result.error_kind == "invalid_arguments"
    assert result.content == (
        "Invalid arguments for tool 'book':\n"
        "- day: expected an ISO 8601 date, e.g. 2024-05-01\n"
        "- window: ValueError: start is after end"
    )
    assert isinstance(result.exception, ValueError)  # the application's own, kept


def test_schema_and_conversion_problems_come_together() -> None:
    result = every_problem_registry().dispatch_tool(
        "book", '{"day": "2024-02-30", "window": {"start": "18:00", "end": "09:00"}, "seats": "x"}'
    )
    assert result.content == (
        "Invalid arguments for tool 'book':\n"
        "- missing required property 'room'\n"
        "- seats: expected integer, got string\n"
        "- day: expected an ISO 8601 date, e.g. 2024-05-01\n"
        "- window: ValueError: start is after end"
    )
