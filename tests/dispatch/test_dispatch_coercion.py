"""Dispatch step 4: safe coercion, null -> default, and conversion into annotated types."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import enum
import uuid
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, NamedTuple, Optional, TypedDict

import pydantic
import pytest
from typing_extensions import NotRequired

from toolreg import Param, ToolRegistry

# -- coercion -----------------------------------------------------------------------------


def scalar_registry(**settings: Any) -> tuple[ToolRegistry, list[dict[str, Any]]]:
    reg = ToolRegistry(**settings)
    seen: list[dict[str, Any]] = []

    @reg.register_tool
    def kinds(
        i: int = 0,
        f: float = 0.0,
        b: bool = False,
        xs: Optional[list[int]] = None,
        d: Optional[dict[str, int]] = None,
        s: str = "",
    ) -> str:
        """Types of every kind."""
        seen.append({"i": i, "f": f, "b": b, "xs": xs, "d": d, "s": s})
        return "ok"

    @reg.register_tool(coerce=False)
    def exact(i: int = 0) -> str:
        """Never coerced."""
        seen.append({"i": i})
        return "ok"

    @reg.register_tool(coerce=True)
    def lenient(i: int = 0) -> str:
        """Always coerced."""
        seen.append({"i": i})
        return "ok"

    return reg, seen


@pytest.mark.parametrize(
    ("arguments", "key", "expected"),
    [
        ({"i": "42"}, "i", 42),
        ({"i": " -7 "}, "i", -7),
        ({"i": "007"}, "i", 7),
        ({"f": "3.5"}, "f", 3.5),
        ({"f": "-0.25"}, "f", -0.25),
        ({"f": "1e3"}, "f", 1000.0),
        ({"f": "2"}, "f", 2.0),
        ({"b": "true"}, "b", True),
        ({"b": "false"}, "b", False),
        ({"b": " TRUE "}, "b", True),
        ({"xs": "[1, 2, 3]"}, "xs", [1, 2, 3]),
        ({"xs": '["1", 2]'}, "xs", [1, 2]),
        ({"xs": [1, "2"]}, "xs", [1, 2]),
        ({"d": '{"a": 1}'}, "d", {"a": 1}),
        ({"d": {"a": "5"}}, "d", {"a": 5}),
    ],
)
def test_safe_coercions(arguments: dict[str, Any], key: str, expected: Any) -> None:
    reg, seen = scalar_registry()
    result = reg.dispatch_tool("kinds", arguments)
    assert result.ok, result.content
    assert seen[0][key] == expected
    assert type(seen[0][key]) is type(expected)
    assert result.arguments is not None
    assert result.arguments[key] == expected


def test_coercion_of_json_text_arguments() -> None:
    reg, seen = scalar_registry()
    result = reg.dispatch_tool("kinds", '{"i": "3", "f": "1.5", "b": "false", "xs": "[4]"}')
    assert result.ok
    assert seen[0] == {"i": 3, "f": 1.5, "b": False, "xs": [4], "d": None, "s": ""}


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({"i": "4.5"}, "i: expected integer, got string"),
        ({"i": "+3"}, "i: expected integer, got string"),
        ({"i": "1e3"}, "i: expected integer, got string"),
        ({"i": "0x10"}, "i: expected integer, got string"),
        ({"i": "٣"}, "i: expected integer, got string"),
        ({"i": ""}, "i: expected integer, got string"),
        ({"f": "nan"}, "f: expected number, got string"),
        ({"f": "inf"}, "f: expected number, got string"),
        ({"f": "1e999"}, "f: expected number, got string"),
        ({"b": "yes"}, "b: expected boolean, got string"),
        ({"b": "1"}, "b: expected boolean, got string"),
        ({"b": 1}, "b: expected boolean, got integer"),
        ({"i": True}, "i: expected integer, got boolean"),
        ({"s": 5}, "s: expected string, got integer"),
        ({"xs": "[1, 2"}, "xs: does not match any allowed type (expected array or null)"),
        ({"xs": "[NaN]"}, "xs: does not match any allowed type (expected array or null)"),
        ({"d": "[1]"}, "d: does not match any allowed type (expected object or null)"),
        ({"xs": '["a"]'}, "xs: does not match any allowed type (expected array or null)"),
    ],
)
def test_unsafe_values_are_not_coerced(arguments: dict[str, Any], line: str) -> None:
    reg, seen = scalar_registry()
    result = reg.dispatch_tool("kinds", arguments)
    assert result.error_kind == "invalid_arguments"
    assert result.content == f"Invalid arguments for tool 'kinds': {line}."
    assert seen == []


def test_int_for_a_float_parameter_becomes_a_float() -> None:
    for settings in ({}, {"coerce": False}):
        reg, seen = scalar_registry(**settings)
        assert reg.dispatch_tool("kinds", '{"f": 3}').ok
        assert seen[0]["f"] == 3.0
        assert type(seen[0]["f"]) is float


def test_integral_float_for_an_int_parameter_becomes_an_int() -> None:
    reg, seen = scalar_registry(coerce=False)
    assert reg.dispatch_tool("kinds", '{"i": 3.0, "xs": [1.0, 2]}').ok
    assert seen[0]["i"] == 3
    assert type(seen[0]["i"]) is int
    assert [type(x) for x in seen[0]["xs"]] == [int, int]


def test_huge_int_for_a_float_parameter_is_an_error_not_a_crash() -> None:
    reg, seen = scalar_registry()
    result = reg.dispatch_tool("kinds", '{"f": ' + "9" * 400 + "}")
    assert result.content == (
        "Invalid arguments for tool 'kinds': f: the number is too large for a float."
    )
    assert seen == []


def test_registry_coerce_false_switches_coercion_off() -> None:
    reg, seen = scalar_registry(coerce=False)
    result = reg.dispatch_tool("kinds", {"i": "42", "b": "true", "xs": "[1]"})
    assert result.content == (
        "Invalid arguments for tool 'kinds':\n"
        "- i: expected integer, got string\n"
        "- b: expected boolean, got string\n"
        "- xs: does not match any allowed type (expected array or null)"
    )
    assert seen == []


def test_per_tool_coerce_overrides_the_registry() -> None:
    reg, seen = scalar_registry()
    assert reg.dispatch_tool("exact", {"i": "42"}).content == (
        "Invalid arguments for tool 'exact': i: expected integer, got string."
    )
    assert reg.dispatch_tool("lenient", {"i": "42"}).ok

    strict_reg, strict_seen = scalar_registry(coerce=False)
    assert strict_reg.dispatch_tool("lenient", {"i": "42"}).ok
    assert strict_reg.dispatch_tool("exact", {"i": "42"}).error_kind == "invalid_arguments"
    assert seen == strict_seen == [{"i": 42}]


def test_coercion_in_async_dispatch() -> None:
    reg, seen = scalar_registry()
    assert asyncio.run(reg.adispatch_tool("kinds", {"i": "9"})).ok
    assert seen[0]["i"] == 9


def test_coerced_json_strings_obey_the_depth_limit() -> None:
    reg = ToolRegistry(max_depth=4)
    seen: list[Any] = []

    @reg.register_tool
    def take(data: Optional[dict[str, Any]] = None) -> str:
        seen.append(data)
        return "ok"

    assert reg.dispatch_tool("take", {"data": '{"a": [[1]]}'}).ok
    result = reg.dispatch_tool("take", {"data": '{"a": [[[[1]]]]}'})
    assert result.content == "Arguments are nested too deeply: the limit is 4 levels."
    deep = reg.dispatch_tool("take", {"data": '{"a": ' + "[" * 5000 + "]" * 5000 + "}"})
    assert deep.error_kind == "invalid_arguments"
    assert seen == [{"a": [[1]]}]


def test_coerced_json_strings_cannot_smuggle_infinity() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool
    def take(xs: list[float]) -> str:
        seen.append(xs)
        return "ok"

    result = reg.dispatch_tool("take", {"xs": "[1e400]"})
    assert result.error_kind == "invalid_arguments"  # coercion refuses; the type error stands
    assert result.content == "Invalid arguments for tool 'take': xs: expected array, got string."
    assert seen == []
    assert reg.dispatch_tool("take", {"xs": "[1.5, 2]"}).ok
    assert seen == [[1.5, 2.0]]


# -- null -> default ----------------------------------------------------------------------


def test_null_for_a_parameter_with_a_default_means_the_default() -> None:
    for settings in ({}, {"coerce": False}):  # strict mode needs it even without coercion
        reg, seen = scalar_registry(**settings)
        result = reg.dispatch_tool("kinds", '{"i": null, "f": null, "b": null, "s": null}')
        assert result.ok, result.content
        assert seen[0] == {"i": 0, "f": 0.0, "b": False, "xs": None, "d": None, "s": ""}
        assert result.arguments == {}


def test_null_for_an_optional_parameter_stays_none() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def opt(tag: Optional[str] = "x") -> str:
        return repr(tag)

    assert reg.dispatch_tool("opt", '{"tag": null}').content == "None"
    assert reg.dispatch_tool("opt", "{}").content == "'x'"


def test_null_for_a_required_parameter_is_an_error() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def need(q: str) -> str:
        return q

    assert reg.dispatch_tool("need", '{"q": null}').content == (
        "Invalid arguments for tool 'need': q: expected string, got null."
    )


@dataclasses.dataclass
class Options:
    limit: int = 10
    tag: Optional[str] = None


class Filter(TypedDict):
    field: str
    value: NotRequired[int]


def test_strict_mode_nulls_in_nested_objects_mean_their_defaults() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool(strict=True)
    def search(
        q: str,
        opts: Options,
        more: list[Options],
        filters: list[Filter],
        maybe: Optional[Options] = None,
        page: int = 1,
    ) -> str:
        """Search."""
        seen.append((q, opts, more, filters, maybe, page))
        return "ok"

    # what a strict-mode model sends: every key, null for the ones it leaves out
    arguments = {
        "q": "x",
        "opts": {"limit": None, "tag": None},
        "more": [{"limit": None, "tag": "a"}, {"limit": 3, "tag": None}],
        "filters": [{"field": "f", "value": None}],
        "maybe": {"limit": None, "tag": "t"},
        "page": None,
    }
    result = reg.dispatch_tool("search", arguments)
    assert result.ok, result.content
    assert seen == [
        (
            "x",
            Options(10, None),
            [Options(10, "a"), Options(3, None)],
            [{"field": "f"}],
            Options(10, "t"),
            1,
        )
    ]
    # still an error where null has no default to fall back on
    bad = reg.dispatch_tool("search", {**arguments, "filters": [{"field": None}]})
    assert bad.content == (
        "Invalid arguments for tool 'search': filters[0].field: expected string, got null."
    )


def test_nested_null_for_a_required_field_is_still_reported_with_other_problems() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def take(opts: Options, n: int) -> str:
        return "ok"

    result = reg.dispatch_tool("take", {"opts": {"limit": None}, "n": "x"})
    assert result.content == "Invalid arguments for tool 'take': n: expected integer, got string."


# -- conversion ---------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0


class Movie(TypedDict):
    title: str
    year: int
    released: NotRequired[dt.date]


class Pair(NamedTuple):
    a: int
    b: str = "-"


class User(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0)
    joined: Optional[dt.date] = None


@dataclasses.dataclass
class Team:
    name: str
    lead: User
    members: list[Point]
    colors: set[Color]


def conversion_registry() -> tuple[ToolRegistry, list[dict[str, Any]]]:
    reg = ToolRegistry()
    seen: list[dict[str, Any]] = []

    @reg.register_tool
    def convert(
        color: Optional[Color] = None,
        level: Optional[Level] = None,
        point: Optional[Point] = None,
        movie: Optional[Movie] = None,
        pair: Optional[Pair] = None,
        tup: Optional[tuple[int, str]] = None,
        many: Optional[tuple[float, ...]] = None,
        tags: Optional[set[str]] = None,
        frozen: Optional[frozenset[int]] = None,
        when: Optional[dt.datetime] = None,
        day: Optional[dt.date] = None,
        at: Optional[dt.time] = None,
        span: Optional[dt.timedelta] = None,
        uid: Optional[uuid.UUID] = None,
        price: Optional[Decimal] = None,
        path: Optional[Path] = None,
        pure: Optional[PurePosixPath] = None,
        user: Optional[User] = None,
        points: Optional[list[Point]] = None,
        by_name: Optional[dict[str, list[Color]]] = None,
        team: Optional[Team] = None,
        union: Optional[int | dt.date] = None,
    ) -> str:
        """Every convertible type."""
        seen.append({k: v for k, v in locals().items() if v is not None})
        return "ok"

    return reg, seen


@pytest.mark.parametrize(
    ("key", "sent", "expected"),
    [
        ("color", "red", Color.RED),
        ("level", 2, Level.HIGH),
        ("point", {"x": 1}, Point(1, 0.0)),
        ("point", {"x": 1, "y": 2}, Point(1, 2.0)),
        ("movie", {"title": "T", "year": 1999}, {"title": "T", "year": 1999}),
        (
            "movie",
            {"title": "T", "year": 1999, "released": "1999-03-31"},
            {"title": "T", "year": 1999, "released": dt.date(1999, 3, 31)},
        ),
        ("pair", {"a": 1}, Pair(1, "-")),
        ("tup", [1, "a"], (1, "a")),
        ("many", [1, 2.5], (1.0, 2.5)),
        ("tags", ["a", "b"], {"a", "b"}),
        ("frozen", [1, 2], frozenset({1, 2})),
        (
            "when",
            "2024-05-01T09:30:00Z",
            dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.timezone.utc),
        ),
        (
            "when",
            "2024-05-01T09:30:00+08:00",
            dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=8))),
        ),
        ("day", "2024-05-01", dt.date(2024, 5, 1)),
        ("at", "09:30:00", dt.time(9, 30)),
        ("span", "PT1H30M", dt.timedelta(hours=1, minutes=30)),
        ("span", "P1DT2S", dt.timedelta(days=1, seconds=2)),
        ("span", "-PT5M", dt.timedelta(minutes=-5)),
        (
            "uid",
            "12345678-1234-5678-1234-567812345678",
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
        ),
        ("price", "19.90", Decimal("19.90")),
        ("price", 1.1, Decimal("1.1")),
        ("price", 3, Decimal(3)),
        ("path", "/tmp/x.txt", Path("/tmp/x.txt")),
        ("pure", "a/b", PurePosixPath("a/b")),
        ("user", {"name": "Ann", "age": 3}, User(name="Ann", age=3)),
        (
            "user",
            {"name": "Ann", "age": 3, "joined": "2020-01-02"},
            User(name="Ann", age=3, joined=dt.date(2020, 1, 2)),
        ),
        ("points", [{"x": 1}, {"x": 2, "y": 3}], [Point(1), Point(2, 3.0)]),
        ("by_name", {"k": ["red", "blue"]}, {"k": [Color.RED, Color.BLUE]}),
        ("union", 5, 5),
        ("union", "2024-01-31", dt.date(2024, 1, 31)),
    ],
)
def test_conversion_into_annotated_types(key: str, sent: Any, expected: Any) -> None:
    reg, seen = conversion_registry()
    result = reg.dispatch_tool("convert", {key: sent})
    assert result.ok, result.content
    value = seen[0][key]
    assert value == expected
    assert type(value) is type(expected)
    if isinstance(expected, dict):
        assert all(type(value[k]) is type(v) for k, v in expected.items())
    if isinstance(expected, list):
        assert [type(v) for v in value] == [type(v) for v in expected]
    if isinstance(expected, Point):
        assert type(value.y) is float


def test_conversion_deeply_nested() -> None:
    reg, seen = conversion_registry()
    team = {
        "name": "core",
        "lead": {"name": "Ann", "age": 40, "joined": "2019-09-01"},
        "members": [{"x": 1}, {"x": 2, "y": 0.5}],
        "colors": ["red", "blue"],
    }
    assert reg.dispatch_tool("convert", {"team": team}).ok
    assert seen[0]["team"] == Team(
        name="core",
        lead=User(name="Ann", age=40, joined=dt.date(2019, 9, 1)),
        members=[Point(1, 0.0), Point(2, 0.5)],
        colors={Color.RED, Color.BLUE},
    )


def test_conversion_combined_with_coercion() -> None:
    reg, seen = conversion_registry()
    result = reg.dispatch_tool("convert", {"points": '[{"x": "1"}]', "level": "2"})
    assert result.ok, result.content
    assert seen[0]["points"] == [Point(1, 0.0)]
    assert seen[0]["level"] is Level.HIGH


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({"day": "2024-13-01"}, "day: expected an ISO 8601 date, e.g. 2024-05-01"),
        ({"day": "yesterday"}, "day: expected an ISO 8601 date, e.g. 2024-05-01"),
        (
            {"when": "soon"},
            "when: expected an ISO 8601 date-time, e.g. 2024-05-01T09:30:00+08:00",
        ),
        ({"at": "25:00"}, "at: expected an ISO 8601 time, e.g. 09:30:00"),
        ({"span": "1 hour"}, "span: expected an ISO 8601 duration, e.g. PT1H30M"),
        ({"span": "P"}, "span: expected an ISO 8601 duration, e.g. PT1H30M"),
        ({"span": "P99999999999D"}, "span: the duration is too long (at most 999999999 days)"),
        ({"uid": "not-a-uuid"}, "uid: expected a UUID"),
        (
            {"points": [{"x": 1}, {"x": 2}, {"x": "a"}]},
            "points[2].x: expected integer, got string",
        ),
        (
            {"movie": {"title": "T", "year": 1, "released": "1999-02-30"}},
            "movie.released: expected an ISO 8601 date, e.g. 2024-05-01",
        ),
        (
            {
                "team": {
                    "name": "t",
                    "lead": {"name": "a", "age": 1, "joined": "bad"},
                    "members": [],
                    "colors": [],
                }
            },
            "team.lead.joined: expected an ISO 8601 date, e.g. 2024-05-01",
        ),
        (
            {"team": {"name": "t", "lead": {"name": "a", "age": -1}, "members": [], "colors": []}},
            "team.lead.age: must be >= 0",
        ),
    ],
)
def test_conversion_errors_name_the_path(arguments: dict[str, Any], line: str) -> None:
    reg, seen = conversion_registry()
    result = reg.dispatch_tool("convert", arguments)
    assert result.error_kind == "invalid_arguments"
    assert result.content == f"Invalid arguments for tool 'convert': {line}."
    assert seen == []


class Booking(pydantic.BaseModel):
    start: dt.date
    end: dt.date

    @pydantic.model_validator(mode="after")
    def ordered(self) -> Booking:
        if self.end < self.start:
            raise ValueError("end is before start")
        return self


def test_pydantic_validator_errors_are_reported_with_their_location() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def book(booking: Booking) -> str:
        return "ok"

    result = reg.dispatch_tool("book", {"booking": {"start": "2024-05-02", "end": "2024-05-01"}})
    assert result.content == (
        "Invalid arguments for tool 'book': booking: Value error, end is before start."
    )


@dataclasses.dataclass
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("n must not be negative")
        if self.n == 13:
            raise KeyError("unlucky")


def test_errors_raised_while_building_a_class_are_invalid_arguments() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool
    def take(p: Positive) -> str:
        seen.append(p)
        return "ok"

    result = reg.dispatch_tool("take", {"p": {"n": -1}})
    assert result.content == (
        "Invalid arguments for tool 'take': p: ValueError: n must not be negative."
    )
    odd = reg.dispatch_tool("take", {"p": {"n": 13}})
    assert odd.error_kind == "invalid_arguments"
    assert odd.content == (
        "Invalid arguments for tool 'take': p: cannot be converted (KeyError: 'unlucky')."
    )
    assert isinstance(odd.exception, KeyError)
    assert seen == []


def test_errors_mode_applies_to_exception_text_from_conversion_too() -> None:
    @dataclasses.dataclass
    class Query:
        path: str

        def __post_init__(self) -> None:
            raise ValueError("cannot open /etc/secret/db.conf")

    for mode, expected in [
        ("full", "q: ValueError: cannot open /etc/secret/db.conf"),
        ("redact", "q: ValueError: cannot open [redacted]"),
        ("mask", "q: cannot be converted"),
    ]:
        reg = ToolRegistry(errors=mode)  # type: ignore[arg-type]

        def run(q: Query) -> str:
            """Run a query."""
            return "ran"

        run.__annotations__ = {"q": Query, "return": str}  # a local class
        reg.register_tool(run)
        result = reg.dispatch_tool("run", '{"q": {"path": "x"}}')
        assert result.content == f"Invalid arguments for tool 'run': {expected}."


@dataclasses.dataclass
class Range:
    lo: Annotated[int, Param(ge=0)]
    hi: Annotated[int, Param(le=100)]


def test_constraints_inside_annotated_classes_are_validated_before_conversion() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def take(r: Range) -> str:
        return "ok"

    result = reg.dispatch_tool("take", {"r": {"lo": -1, "hi": 101}})
    assert result.content == (
        "Invalid arguments for tool 'take':\n- r.lo: must be >= 0\n- r.hi: must be <= 100"
    )


class UserId(int):
    pass


class Score(float):
    pass


def test_scalar_subclasses_are_built_from_the_json_value() -> None:
    reg = ToolRegistry()
    seen: list[Any] = []

    @reg.register_tool
    def take(user: UserId, score: Score = Score(0.0)) -> str:
        seen.append((user, score))
        return "ok"

    assert reg.dispatch_tool("take", {"user": 3.0, "score": 2}).ok
    assert reg.dispatch_tool("take", {"user": "7"}).ok
    assert seen == [(3, 2.0), (7, 0.0)]
    assert [type(v) for pair in seen for v in pair] == [UserId, Score, UserId, Score]


def test_bare_containers_reach_the_function_as_their_own_type() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def kinds(a: set, b: tuple, c: frozenset) -> str:  # type: ignore[type-arg]
        """Report the types."""
        return " ".join(type(x).__name__ for x in (a, b, c))

    assert reg.dispatch_tool("kinds", '{"a": [1], "b": [1, 2], "c": ["x"]}').content == (
        "set tuple frozenset"
    )


# -- a pydantic model argument: every problem at once, in toolreg's words -------------------


class Order(pydantic.BaseModel):
    item: str
    amount: float
    when: dt.date
    at: dt.time = dt.time(9)
    qty: int = pydantic.Field(default=1, ge=1)

    @pydantic.field_validator("item")
    @classmethod
    def known(cls, value: str) -> str:
        if value == "lost":
            raise ValueError("no such item in /srv/catalog/items.db")
        return value


@dataclasses.dataclass
class Shipment:
    order: Order
    sent: dt.datetime
    weight: float


def order_registry(errors: Any = "redact") -> tuple[ToolRegistry, list[Any]]:
    reg = ToolRegistry(errors=errors)
    seen: list[Any] = []

    @reg.register_tool
    def place(order: Order, note: str = "") -> str:
        """Place an order."""
        seen.append(order)
        return "ok"

    @reg.register_tool
    def ship(shipment: Shipment) -> str:
        """Ship an order."""
        seen.append(shipment)
        return "ok"

    return reg, seen


def problems_of(reg: ToolRegistry, name: str, arguments: dict[str, Any]) -> list[str]:
    result = reg.dispatch_tool(name, arguments)
    assert result.error_kind == "invalid_arguments", result.content
    lines = result.content.splitlines()
    if len(lines) == 1:
        return [lines[0].split(": ", 1)[1].rstrip(".")]
    return [line.removeprefix("- ") for line in lines[1:]]


def test_schema_and_conversion_problems_of_a_model_come_in_one_answer() -> None:
    reg, seen = order_registry()
    arguments = {"order": {"item": "tea", "amount": "lots", "when": "2024-13-45"}, "note": 1}
    assert problems_of(reg, "place", arguments) == [
        "order.amount: expected number, got string",
        "note: expected string, got integer",
        "order.when: expected an ISO 8601 date, e.g. 2024-05-01",
    ]
    assert seen == []


def test_every_conversion_problem_of_a_model_at_once() -> None:
    reg, _ = order_registry()
    arguments = {"order": {"item": "tea", "amount": 2, "when": "yesterday", "at": "noon"}}
    assert problems_of(reg, "place", arguments) == [
        "order.when: expected an ISO 8601 date, e.g. 2024-05-01",
        "order.at: expected an ISO 8601 time, e.g. 09:30:00",
    ]


def test_missing_and_unexpected_keys_do_not_hide_a_bad_value_beside_them() -> None:
    reg, _ = order_registry()
    arguments = {"order": {"amount": 2, "when": "soon", "colour": "red"}}
    assert problems_of(reg, "place", arguments) == [
        "order: missing required property 'item'",
        "order: unexpected property 'colour'",
        "order.when: expected an ISO 8601 date, e.g. 2024-05-01",
    ]  # each said once: not again in pydantic's words


def test_a_model_inside_a_dataclass_reports_everything_at_once() -> None:
    reg, seen = order_registry()
    arguments = {
        "shipment": {
            "order": {"item": "tea", "amount": 2, "when": "2024-02-30", "qty": 0},
            "sent": "later",
            "weight": "heavy",
        }
    }
    assert problems_of(reg, "ship", arguments) == [
        "shipment.order.qty: must be >= 1",
        "shipment.weight: expected number, got string",
        "shipment.order.when: expected an ISO 8601 date, e.g. 2024-05-01",
        "shipment.sent: expected an ISO 8601 date-time, e.g. 2024-05-01T09:30:00+08:00",
    ]
    assert seen == []
    fixed = reg.dispatch_tool(
        "ship",
        {
            "shipment": {
                "order": {"item": "tea", "amount": 2, "when": "2024-02-29"},
                "sent": "2024-03-01T10:00:00Z",
                "weight": 1.5,
            }
        },
    )
    assert fixed.ok, fixed.content
    assert seen[0].order.when == dt.date(2024, 2, 29)


@pytest.mark.parametrize(
    ("errors", "line"),
    [
        ("full", "order.item: Value error, no such item in /srv/catalog/items.db"),
        ("redact", "order.item: Value error, no such item in [redacted]"),
        ("mask", "order.item: cannot be converted"),
    ],
)
def test_a_models_own_validator_keeps_its_words_as_errors_says(errors: str, line: str) -> None:
    reg, _ = order_registry(errors)
    arguments = {"order": {"item": "lost", "amount": 1, "when": "never"}}
    assert problems_of(reg, "place", arguments) == [
        line,
        "order.when: expected an ISO 8601 date, e.g. 2024-05-01",
    ]


def test_a_model_with_many_bad_values_is_answered_in_bounded_text() -> None:
    fields: dict[str, Any] = {f"d{i}": (dt.date, ...) for i in range(200)}
    Many = pydantic.create_model("Many", **fields)
    reg = ToolRegistry()

    def take(many: Any) -> str:
        """Take many dates."""
        return "ok"

    take.__annotations__ = {"many": Many, "return": str}
    reg.register_tool(take)
    result = reg.dispatch_tool("take", {"many": {f"d{i}": "bad" for i in range(200)}})
    lines = result.content.splitlines()
    assert lines[1] == "- many.d0: expected an ISO 8601 date, e.g. 2024-05-01"
    assert len(lines) == 22  # the header, 20 problems and how many more
    assert lines[-1] == "- ... and 30 more problems"  # at most 50 of one value are read
