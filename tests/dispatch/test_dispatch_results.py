"""Dispatch step 8: the tool's return value -> the text the model reads, and `ToolResult`."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import enum
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import pydantic
import pytest

from toolreg import ToolRegistry, ToolResult


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 2


@dataclasses.dataclass
class City:
    name: str
    population: int
    founded: dt.date


class Weather(TypedDict):
    city: str
    temp: float


class Point(NamedTuple):
    x: int
    y: int


class Person(pydantic.BaseModel):
    name: str
    born: dt.date


def registry_returning(value: Any, **options: Any) -> ToolRegistry:
    reg = ToolRegistry(**options.pop("settings", {}))

    @reg.register_tool(name="give", **options)
    def give() -> Any:
        """Returns the value under test."""
        return value

    return reg


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("plain text", "plain text"),
        ("", ""),
        ('{"already": "json"}', '{"already": "json"}'),
        ("北京 晴 18°C", "北京 晴 18°C"),
        (None, "null"),
        (42, "42"),
        (2.5, "2.5"),
        (True, "true"),
        ([1, "二", None], '[1, "二", null]'),
        ({"city": "北京", "temp": 18}, '{"city": "北京", "temp": 18}'),
        (
            City("上海", 24_870_000, dt.date(1291, 1, 1)),
            '{"name": "上海", "population": 24870000, "founded": "1291-01-01"}',
        ),
        (Weather(city="北京", temp=18.5), '{"city": "北京", "temp": 18.5}'),
        (Person(name="李白", born=dt.date(701, 2, 28)), '{"name": "李白", "born": "0701-02-28"}'),
        (Color.RED, '"red"'),
        (Level.HIGH, "2"),
        (dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.timezone.utc), '"2024-05-01T09:30:00+00:00"'),
        (dt.date(2024, 5, 1), '"2024-05-01"'),
        (dt.time(9, 30), '"09:30:00"'),
        (dt.timedelta(hours=1, seconds=1), '"P0DT3601S"'),
        (Decimal("19.90"), '"19.90"'),
        (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (Path("/tmp/报告.txt"), '"/tmp/报告.txt"'),
        ({3, 1, 2}, "[1, 2, 3]"),
        (Point(1, 2), '{"x": 1, "y": 2}'),  # an object, as in its schema
        (
            {"nested": [City("x", 1, dt.date(2000, 1, 1))]},
            '{"nested": [{"name": "x", "population": 1, "founded": "2000-01-01"}]}',
        ),
    ],
    ids=lambda v: type(v).__name__,
)
def test_result_rendering(value: Any, content: str) -> None:
    result = registry_returning(value).dispatch_tool("give")
    assert result.ok
    assert result.content == content
    assert result.value is value


def test_json_results_keep_chinese_readable() -> None:
    result = registry_returning({"城市": "北京", "天气": "晴"}).dispatch_tool("give")
    assert result.content == '{"城市": "北京", "天气": "晴"}'
    assert "\\u" not in result.content
    assert json.loads(result.content) == {"城市": "北京", "天气": "晴"}


class Markdown(str):
    def __str__(self) -> str:
        return "overridden"


class Mood(str, enum.Enum):
    HAPPY = "happy"


def test_str_subclass_results_are_sent_as_text_but_str_enums_as_json() -> None:
    result = registry_returning(Markdown("# Title")).dispatch_tool("give")
    assert result.content == "# Title"
    assert type(result.content) is str
    assert registry_returning(Mood.HAPPY).dispatch_tool("give").content == '"happy"'


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (object(), "object"),
        ({"a": object()}, "dict"),
        (float("nan"), "float"),
        ({"x": float("inf")}, "dict"),
        (b"bytes", "bytes"),
        ({(1, 2): "tuple key"}, "dict"),
        pytest.param(10**5000, "int", id="huge-int"),
    ],
)
def test_results_that_cannot_be_json_are_an_execution_error(value: Any, kind: str) -> None:
    result = registry_returning(value).dispatch_tool("give")
    assert not result.ok
    assert result.error_kind == "execution_error"
    assert result.content == (
        f"Tool 'give' failed: its result (of type {kind}) cannot be written as JSON."
    )
    assert result.exception is not None


def test_self_referencing_result_is_an_error_not_a_crash() -> None:
    loop: list[Any] = []
    loop.append(loop)
    result = registry_returning(loop).dispatch_tool("give")
    assert (
        result.content == "Tool 'give' failed: its result (of type list) cannot be written as JSON."
    )


def test_a_result_that_cannot_be_encoded_is_an_error_result() -> None:
    reg = ToolRegistry()

    @dataclasses.dataclass
    class Half:
        a: int
        b: int = dataclasses.field(init=False)  # never set: reading it raises AttributeError

    @reg.register_tool
    def give() -> Half:
        """Give a half-built value."""
        return Half(1)

    result = reg.dispatch_tool("give")
    assert result.error_kind == "execution_error"
    assert (
        result.content == "Tool 'give' failed: its result (of type Half) cannot be written as JSON."
    )


# -- result_filter ------------------------------------------------------------------------


def mask_phone(value: dict[str, Any]) -> dict[str, Any]:
    phone = value["phone"]
    return {**value, "phone": phone[:3] + "*" * (len(phone) - 7) + phone[-4:]}


def test_result_filter_masks_a_phone_number() -> None:
    reg = ToolRegistry()

    @reg.register_tool(result_filter=mask_phone)
    def lookup_customer(name: str) -> dict[str, Any]:
        """Find a customer."""
        return {"name": name, "phone": "13812345678", "city": "杭州"}

    result = reg.dispatch_tool("lookup_customer", {"name": "王芳"})
    assert result.ok
    assert result.content == '{"name": "王芳", "phone": "138****5678", "city": "杭州"}'
    assert "13812345678" not in result.content
    assert result.value == {"name": "王芳", "phone": "13812345678", "city": "杭州"}


def test_result_filter_can_drop_fields_and_return_text() -> None:
    reg = ToolRegistry()

    @reg.register_tool(result_filter=lambda user: {k: v for k, v in user.items() if k != "ssn"})
    def user() -> dict[str, str]:
        return {"name": "Ann", "ssn": "123-45-6789"}

    @reg.register_tool(result_filter=lambda v: f"{len(v)} rows")
    def rows() -> list[int]:
        return [1, 2, 3]

    assert reg.dispatch_tool("user").content == '{"name": "Ann"}'
    assert reg.dispatch_tool("rows").content == "3 rows"


def test_failing_result_filter_is_an_execution_error() -> None:
    reg = ToolRegistry()

    @reg.register_tool(result_filter=lambda v: v["missing"])
    def data() -> dict[str, int]:
        return {"a": 1}

    result = reg.dispatch_tool("data")
    assert result.error_kind == "execution_error"
    assert result.content == "Tool 'data' failed: its result could not be filtered."
    assert isinstance(result.exception, KeyError)


def test_result_filter_in_async_dispatch() -> None:
    reg = ToolRegistry()

    @reg.register_tool(result_filter=mask_phone)
    async def lookup(name: str) -> dict[str, str]:
        return {"name": name, "phone": "13812345678"}

    result = asyncio.run(reg.adispatch_tool("lookup", {"name": "x"}))
    assert result.content == '{"name": "x", "phone": "138****5678"}'


# -- max_result_chars ---------------------------------------------------------------------


def test_long_result_is_cut_with_a_visible_marker() -> None:
    result = registry_returning("a" * 100, max_result_chars=10).dispatch_tool("give")
    assert result.ok
    assert result.content == "a" * 10 + "\n[truncated: 90 of 100 characters cut]"
    assert result.value == "a" * 100


def test_result_at_the_limit_is_not_cut() -> None:
    assert registry_returning("a" * 10, max_result_chars=10).dispatch_tool("give").content == (
        "a" * 10
    )


def test_registry_limit_applies_to_tools_without_their_own() -> None:
    reg = registry_returning("汉" * 50, settings={"max_result_chars": 20})
    assert reg.dispatch_tool("give").content == "汉" * 20 + "\n[truncated: 30 of 50 characters cut]"


def test_tool_limit_wins_over_the_registry_limit() -> None:
    reg = registry_returning("b" * 50, max_result_chars=5, settings={"max_result_chars": 20})
    assert reg.dispatch_tool("give").content == "bbbbb\n[truncated: 45 of 50 characters cut]"
    reg = registry_returning("b" * 50, max_result_chars=40, settings={"max_result_chars": 20})
    assert reg.dispatch_tool("give").content == "b" * 40 + "\n[truncated: 10 of 50 characters cut]"


def test_json_results_are_cut_too() -> None:
    reg = registry_returning(list(range(100)), max_result_chars=12)
    text = json.dumps(list(range(100)))
    assert reg.dispatch_tool("give").content == (
        text[:12] + f"\n[truncated: {len(text) - 12} of {len(text)} characters cut]"
    )


def test_no_limit_by_default() -> None:
    assert registry_returning("c" * 200_000).dispatch_tool("give").content == "c" * 200_000


# -- ToolResult fields --------------------------------------------------------------------


def test_result_fields_on_success() -> None:
    reg = ToolRegistry()

    @reg.register_tool(return_direct=True)
    def final_answer(text: str) -> str:
        """Answer the user directly."""
        return text

    result = reg.dispatch_tool("final_answer", '{"text": "42"}', call_id="call_abc")
    assert isinstance(result, ToolResult)
    assert result.tool_name == "final_answer"
    assert result.call_id == "call_abc"
    assert result.ok is True
    assert result.content == "42"
    assert result.value == "42"
    assert result.error is None
    assert result.error_kind is None
    assert result.exception is None
    assert result.return_direct is True
    assert result.elapsed > 0
    assert result.arguments == {"text": "42"}


def test_return_direct_defaults_to_false_and_is_not_set_on_failure() -> None:
    reg = ToolRegistry()

    @reg.register_tool(return_direct=True)
    def final_answer(text: str) -> str:
        return text

    assert registry_returning("x").dispatch_tool("give").return_direct is False
    failed = reg.dispatch_tool("final_answer", "{}")
    assert not failed.ok
    assert failed.return_direct is False


def test_elapsed_measures_the_call() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    async def nap() -> None:
        await asyncio.sleep(0.05)

    result = reg.dispatch_tool("nap")
    assert result.content == "null"
    assert 0.04 < result.elapsed < 2


def test_call_id_is_echoed_on_every_outcome() -> None:
    reg = registry_returning("x")
    assert reg.dispatch_tool("give", call_id="1").call_id == "1"
    assert reg.dispatch_tool("give", "[", call_id="2").call_id == "2"
    assert reg.dispatch_tool("nope", call_id="3").call_id == "3"
    assert reg.dispatch_tool("give", {"x": 1}, call_id="4").call_id == "4"
    assert asyncio.run(reg.adispatch_tool("give", call_id="5")).call_id == "5"
    assert reg.dispatch_tool("give").call_id is None


def test_failure_result_fields() -> None:
    result = registry_returning("x").dispatch_tool("give", {"bad": 1}, call_id="c9")
    assert result.ok is False
    assert result.tool_name == "give"
    assert result.call_id == "c9"
    assert result.value is None
    assert result.error is not None
    assert result.error.message == result.content
    assert result.error.tool_name == "give"
    assert result.error_kind == "invalid_arguments"
    assert result.elapsed >= 0
    assert result.arguments is None


def test_result_is_a_slotted_record_with_fields_in_order() -> None:
    # not frozen (building a frozen dataclass costs ~1 µs per call on the hot path), but
    # slotted: no stray attributes; the dispatcher builds it positionally in this order
    result = registry_returning("x").dispatch_tool("give", call_id="c1")
    assert [f.name for f in dataclasses.fields(result)] == [
        "tool_name",
        "call_id",
        "ok",
        "content",
        "value",
        "error",
        "exception",
        "return_direct",
        "elapsed",
        "arguments",
        "outcome",
        "idempotency_key",
        "parts",
    ]
    assert (result.tool_name, result.call_id, result.ok, result.content) == (
        "give",
        "c1",
        True,
        "x",
    )
    with pytest.raises(AttributeError):
        result.extra = 1  # type: ignore[attr-defined]
