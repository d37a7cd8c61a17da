"""Python types -> JSON Schema, through the public API (`ToolRegistry.register_tool`).

Every expected schema is written out in full. Tables:

- TYPES: one parameter `x` of each supported type (the property schema);
- CONSTRAINTS: `Param(...)` and `annotated_types` metadata, Optional types included;
- FUNCTIONS: whole tools (required/default rules, `**kwargs`, injected parameters);
- NAMED: TypedDicts, dataclasses, NamedTuples, pydantic models, recursion via `$defs`.

Every schema produced here is also checked against the Draft 2020-12 metaschema.
The module does not use `from __future__ import annotations` (tests/_future_tools.py does),
so local classes in test functions can be used in annotations.
"""

import collections.abc as abc
import dataclasses
import datetime as dt
import enum
import pathlib
import sys
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal, NamedTuple, NewType, Optional, Union

import _future_tools
import annotated_types as at
import jsonschema
import pytest
from typing_extensions import NotRequired, Required, TypeAliasType, TypedDict

from toolreg import Injected, Param, Tool, ToolContext, ToolRegistry

DECIMAL_PATTERN = r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$"


def tool_of(fn: Callable[..., Any], **options: Any) -> Tool:
    reg = ToolRegistry()
    reg.register_tool(fn, **options)
    (name,) = reg.names()
    tool = reg[name]
    jsonschema.Draft202012Validator.check_schema(tool.parameters)
    return tool


def schema_of(fn: Callable[..., Any], **options: Any) -> dict[str, Any]:
    return tool_of(fn, **options).parameters


def one_param(annotation: Any) -> Callable[..., Any]:
    """A tool `f(x: annotation)`; the annotation is set directly (it may not be a name)."""

    def f(x):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    f.__annotations__ = {"x": annotation}
    return f


def param_schema(annotation: Any) -> dict[str, Any]:
    """The property schema of `x`, after checking the wrapper object around it."""
    schema = schema_of(one_param(annotation))
    prop = schema["properties"]["x"]
    assert schema == {
        "type": "object",
        "properties": {"x": prop},
        "required": ["x"],
        "additionalProperties": False,
    }
    return prop


# ----------------------------------------------------------------------------------------
# Types used by the tables


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    ONE = 1
    TWO = "two"


class Ratio(enum.Enum):
    HALF = 0.5
    QUARTER = 0.25


class UserName(str):
    """A str subclass: described as a string."""


UserId = NewType("UserId", int)
Email = NewType("Email", str)
IntList = list[int]  # a plain alias
Tags: typing.TypeAlias = list[str]  # an explicit TypeAlias
Scores = TypeAliasType("Scores", dict[str, float])  # `type Scores = dict[str, float]`
City = Annotated[str, "A city name"]  # an Annotated alias carries its description

STR_ENUM: list[Any] = []
if sys.version_info >= (3, 11):

    class Size(enum.StrEnum):
        S = "s"
        M = "m"

    STR_ENUM = [pytest.param(Size, {"type": "string", "enum": ["s", "m"]}, id="StrEnum")]
else:  # pragma: no cover - Python 3.10
    STR_ENUM = [pytest.param(None, None, id="StrEnum", marks=pytest.mark.skip("3.11+ only"))]

NUMBER: dict[str, Any] = {"type": "number"}
STRING: dict[str, Any] = {"type": "string"}
INTEGER: dict[str, Any] = {"type": "integer"}
NULL: dict[str, Any] = {"type": "null"}

TYPES = [
    # --- scalars
    pytest.param(str, {"type": "string"}, id="str"),
    pytest.param(int, {"type": "integer"}, id="int"),
    pytest.param(float, {"type": "number"}, id="float"),
    pytest.param(bool, {"type": "boolean"}, id="bool"),
    pytest.param(None, {"type": "null"}, id="None"),
    pytest.param(type(None), {"type": "null"}, id="NoneType"),
    pytest.param(Any, {}, id="Any"),
    pytest.param(object, {}, id="object-is-Any"),
    # --- Literal
    pytest.param(Literal["c", "f"], {"type": "string", "enum": ["c", "f"]}, id="Literal-str"),
    pytest.param(Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}, id="Literal-int"),
    pytest.param(Literal[True], {"type": "boolean", "enum": [True]}, id="Literal-bool"),
    pytest.param(Literal["a", 1, True, None], {"enum": ["a", 1, True, None]}, id="Literal-mixed"),
    pytest.param(
        Literal["a", Literal["b", "c"]],  # noqa: RUF041
        {"type": "string", "enum": ["a", "b", "c"]},
        id="Literal-nested",
    ),
    pytest.param(Literal[Color.RED], {"type": "string", "enum": ["red"]}, id="Literal-enum-member"),
    # --- Enum
    pytest.param(Color, {"type": "string", "enum": ["red", "green"]}, id="Enum"),
    pytest.param(Level, {"type": "integer", "enum": [1, 2]}, id="IntEnum"),
    *STR_ENUM,
    pytest.param(Mixed, {"enum": [1, "two"]}, id="Enum-mixed-values"),
    pytest.param(Ratio, {"type": "number", "enum": [0.5, 0.25]}, id="Enum-float-values"),
    # --- unions: anyOf, null as {"type": "null"}, never nullable
    pytest.param(Optional[int], {"anyOf": [INTEGER, NULL]}, id="Optional"),
    pytest.param(int | None, {"anyOf": [INTEGER, NULL]}, id="X|None"),
    pytest.param(Union[int, str], {"anyOf": [INTEGER, STRING]}, id="Union"),
    pytest.param(int | str | None, {"anyOf": [INTEGER, STRING, NULL]}, id="X|Y|None"),
    pytest.param(
        Union[int, Optional[str]], {"anyOf": [INTEGER, STRING, NULL]}, id="Union-flattened"
    ),
    pytest.param(
        Optional[Literal["a"]],
        {"anyOf": [{"type": "string", "enum": ["a"]}, NULL]},
        id="Optional-Literal",
    ),
    pytest.param(
        Optional[Color],
        {"anyOf": [{"type": "string", "enum": ["red", "green"]}, NULL]},
        id="Optional-Enum",
    ),
    pytest.param(Optional[Any], {}, id="Optional-Any-is-Any"),
    pytest.param(
        Optional[list[int]],
        {"anyOf": [{"type": "array", "items": INTEGER}, NULL]},
        id="Optional-list",
    ),
    # --- sequences
    pytest.param(list[int], {"type": "array", "items": INTEGER}, id="list"),
    pytest.param(typing.List[str], {"type": "array", "items": STRING}, id="typing.List"),  # noqa: UP006
    pytest.param(Sequence[str], {"type": "array", "items": STRING}, id="Sequence"),
    pytest.param(
        abc.MutableSequence[int], {"type": "array", "items": INTEGER}, id="MutableSequence"
    ),
    pytest.param(abc.Iterable[int], {"type": "array", "items": INTEGER}, id="Iterable"),
    pytest.param(list, {"type": "array"}, id="bare-list"),
    pytest.param(list[Any], {"type": "array", "items": {}}, id="list-Any"),
    pytest.param(
        list[list[int]],
        {"type": "array", "items": {"type": "array", "items": INTEGER}},
        id="list-list",
    ),
    pytest.param(
        list[int | None], {"type": "array", "items": {"anyOf": [INTEGER, NULL]}}, id="list-Optional"
    ),
    # --- tuples: fixed ones with prefixItems
    pytest.param(
        tuple[int, str],
        {
            "type": "array",
            "prefixItems": [INTEGER, STRING],
            "items": False,
            "minItems": 2,
            "maxItems": 2,
        },
        id="tuple-fixed",
    ),
    pytest.param(
        typing.Tuple[float, float, float],  # noqa: UP006
        {
            "type": "array",
            "prefixItems": [NUMBER, NUMBER, NUMBER],
            "items": False,
            "minItems": 3,
            "maxItems": 3,
        },
        id="typing.Tuple-fixed",
    ),
    pytest.param(tuple[int, ...], {"type": "array", "items": INTEGER}, id="tuple-variadic"),
    pytest.param(tuple[()], {"type": "array", "maxItems": 0}, id="tuple-empty"),
    pytest.param(typing.Tuple[()], {"type": "array", "maxItems": 0}, id="typing.Tuple-empty"),  # noqa: UP006
    pytest.param(tuple, {"type": "array"}, id="bare-tuple"),
    # --- sets: uniqueItems
    pytest.param(set[str], {"type": "array", "items": STRING, "uniqueItems": True}, id="set"),
    pytest.param(
        frozenset[int], {"type": "array", "items": INTEGER, "uniqueItems": True}, id="frozenset"
    ),
    pytest.param(
        abc.Set[str], {"type": "array", "items": STRING, "uniqueItems": True}, id="abc.Set"
    ),
    pytest.param(set, {"type": "array", "uniqueItems": True}, id="bare-set"),
    pytest.param(frozenset, {"type": "array", "uniqueItems": True}, id="bare-frozenset"),
    # --- mappings: string keys only
    pytest.param(dict[str, int], {"type": "object", "additionalProperties": INTEGER}, id="dict"),
    pytest.param(
        Mapping[str, float], {"type": "object", "additionalProperties": NUMBER}, id="Mapping"
    ),
    pytest.param(
        typing.Dict[str, Any],  # noqa: UP006
        {"type": "object", "additionalProperties": {}},
        id="typing.Dict",
    ),
    pytest.param(
        dict[UserName, int],
        {"type": "object", "additionalProperties": INTEGER},
        id="dict-str-subclass-key",
    ),
    pytest.param(
        dict[Email, int], {"type": "object", "additionalProperties": INTEGER}, id="dict-NewType-key"
    ),
    pytest.param(
        dict[str, list[str]],
        {"type": "object", "additionalProperties": {"type": "array", "items": STRING}},
        id="dict-of-lists",
    ),
    pytest.param(dict, {"type": "object"}, id="bare-dict"),
    pytest.param(Mapping, {"type": "object"}, id="bare-Mapping"),
    # --- standard formats
    pytest.param(dt.datetime, {"type": "string", "format": "date-time"}, id="datetime"),
    pytest.param(dt.date, {"type": "string", "format": "date"}, id="date"),
    pytest.param(dt.time, {"type": "string", "format": "time"}, id="time"),
    pytest.param(dt.timedelta, {"type": "string", "format": "duration"}, id="timedelta"),
    pytest.param(uuid.UUID, {"type": "string", "format": "uuid"}, id="UUID"),
    pytest.param(
        Decimal, {"anyOf": [NUMBER, {"type": "string", "pattern": DECIMAL_PATTERN}]}, id="Decimal"
    ),
    pytest.param(pathlib.Path, {"type": "string", "format": "path"}, id="Path"),
    pytest.param(pathlib.PurePosixPath, {"type": "string", "format": "path"}, id="PurePosixPath"),
    # --- NewType, subclasses of scalars, aliases
    pytest.param(UserId, {"type": "integer"}, id="NewType-int"),
    pytest.param(Email, {"type": "string"}, id="NewType-str"),
    pytest.param(UserName, {"type": "string"}, id="str-subclass"),
    pytest.param(IntList, {"type": "array", "items": INTEGER}, id="alias"),
    pytest.param(Tags, {"type": "array", "items": STRING}, id="TypeAlias"),
    pytest.param(Scores, {"type": "object", "additionalProperties": NUMBER}, id="TypeAliasType"),
    pytest.param(City, {"type": "string", "description": "A city name"}, id="Annotated-alias"),
    pytest.param(
        list[City],
        {"type": "array", "items": {"type": "string", "description": "A city name"}},
        id="list-of-Annotated-alias",
    ),
]


@pytest.mark.parametrize(("annotation", "expected"), TYPES)
def test_type_to_schema(annotation: Any, expected: dict[str, Any]) -> None:
    assert param_schema(annotation) == expected


def test_null_is_never_openapi_nullable() -> None:
    for annotation in (Optional[int], int | None, Optional[Color], Optional[list[str]]):
        text = repr(param_schema(annotation))
        assert "nullable" not in text
        assert "{'type': 'null'}" in text


# ----------------------------------------------------------------------------------------
# Constraints: Param and annotated_types, applied to the non-null branch of an Optional

CONSTRAINTS = [
    pytest.param(
        Annotated[int, Param(ge=1, le=10)],
        {"type": "integer", "minimum": 1, "maximum": 10},
        id="Param-ge-le",
    ),
    pytest.param(
        Annotated[float, Param(gt=0, lt=1)],
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        id="Param-gt-lt",
    ),
    pytest.param(
        Annotated[float, Param(multiple_of=0.5)],
        {"type": "number", "multipleOf": 0.5},
        id="Param-multiple_of",
    ),
    pytest.param(
        Annotated[str, Param(min_length=1, max_length=20)],
        {"type": "string", "minLength": 1, "maxLength": 20},
        id="Param-length-str",
    ),
    pytest.param(
        Annotated[list[int], Param(min_length=1, max_length=3)],
        {"type": "array", "items": INTEGER, "minItems": 1, "maxItems": 3},
        id="Param-length-list",
    ),
    pytest.param(
        Annotated[dict[str, int], Param(max_length=5)],
        {"type": "object", "additionalProperties": INTEGER, "maxProperties": 5},
        id="Param-length-dict",
    ),
    pytest.param(
        Annotated[str, Param(pattern=r"^\d{6}$")],
        {"type": "string", "pattern": r"^\d{6}$"},
        id="Param-pattern",
    ),
    pytest.param(
        Annotated[str, Param(format="email")],
        {"type": "string", "format": "email"},
        id="Param-format",
    ),
    pytest.param(
        Annotated[str, Param(examples=["Beijing", "Paris"])],
        {"type": "string", "examples": ["Beijing", "Paris"]},
        id="Param-examples",
    ),
    pytest.param(
        Annotated[dt.date, Param(examples=[dt.date(2024, 5, 1)])],
        {"type": "string", "format": "date", "examples": ["2024-05-01"]},
        id="Param-examples-jsonable",
    ),
    pytest.param(
        Annotated[int, Param(description="How many", ge=0)],
        {"type": "integer", "minimum": 0, "description": "How many"},
        id="Param-description-and-constraint",
    ),
    pytest.param(
        Annotated[int, Param(ge=1), Param(le=9)],
        {"type": "integer", "minimum": 1, "maximum": 9},
        id="Param-merged",
    ),
    pytest.param(
        Annotated[int, Param(ge=1), Param(ge=5)],
        {"type": "integer", "minimum": 5},
        id="Param-later-wins",
    ),
    # --- annotated_types
    pytest.param(Annotated[int, at.Gt(0)], {"type": "integer", "exclusiveMinimum": 0}, id="at.Gt"),
    pytest.param(Annotated[int, at.Ge(0)], {"type": "integer", "minimum": 0}, id="at.Ge"),
    pytest.param(Annotated[float, at.Lt(1)], {"type": "number", "exclusiveMaximum": 1}, id="at.Lt"),
    pytest.param(Annotated[float, at.Le(1)], {"type": "number", "maximum": 1}, id="at.Le"),
    pytest.param(
        Annotated[int, at.MultipleOf(3)], {"type": "integer", "multipleOf": 3}, id="at.MultipleOf"
    ),
    pytest.param(Annotated[str, at.MinLen(2)], {"type": "string", "minLength": 2}, id="at.MinLen"),
    pytest.param(Annotated[str, at.MaxLen(8)], {"type": "string", "maxLength": 8}, id="at.MaxLen"),
    pytest.param(
        Annotated[str, at.Len(2, 8)],
        {"type": "string", "minLength": 2, "maxLength": 8},
        id="at.Len",
    ),
    pytest.param(
        Annotated[list[str], at.Len(1)],
        {"type": "array", "items": STRING, "minItems": 1},
        id="at.Len-list-min-only",
    ),
    pytest.param(
        Annotated[float, at.Interval(ge=0, lt=1)],
        {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        id="at.Interval",
    ),
    pytest.param(
        Annotated[int, at.Interval(gt=0, le=100)],
        {"type": "integer", "exclusiveMinimum": 0, "maximum": 100},
        id="at.Interval-gt-le",
    ),
    pytest.param(
        Annotated[int, at.Ge(1), at.Le(5)],
        {"type": "integer", "minimum": 1, "maximum": 5},
        id="at-several",
    ),
    # --- Optional: constraints on the non-null branch, annotations outside
    pytest.param(
        Annotated[Optional[int], Param(ge=1, description="Page")],
        {"anyOf": [{"type": "integer", "minimum": 1}, NULL], "description": "Page"},
        id="Optional-Param",
    ),
    pytest.param(
        Annotated[str | None, at.MaxLen(3)],
        {"anyOf": [{"type": "string", "maxLength": 3}, NULL]},
        id="Optional-at.MaxLen",
    ),
    pytest.param(
        Annotated[Optional[list[int]], Param(min_length=1)],
        {"anyOf": [{"type": "array", "items": INTEGER, "minItems": 1}, NULL]},
        id="Optional-list-min_length",
    ),
    pytest.param(
        Optional[Annotated[int, Param(le=3)]],
        {"anyOf": [{"type": "integer", "maximum": 3}, NULL]},
        id="Optional-of-Annotated",
    ),
    # --- on items and values
    pytest.param(
        list[Annotated[int, Param(ge=0)]],
        {"type": "array", "items": {"type": "integer", "minimum": 0}},
        id="list-items",
    ),
    pytest.param(
        dict[str, Annotated[float, at.Gt(0)]],
        {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
        id="dict-values",
    ),
]


@pytest.mark.parametrize(("annotation", "expected"), CONSTRAINTS)
def test_constraints(annotation: Any, expected: dict[str, Any]) -> None:
    assert param_schema(annotation) == expected


def test_unknown_annotated_metadata_is_ignored() -> None:
    """`Annotated` may carry anything (other libraries' markers): only known metadata counts."""
    assert param_schema(Annotated[int, object(), at.Predicate(str.isdigit)]) == {"type": "integer"}


# ----------------------------------------------------------------------------------------
# Whole tools: required and defaults, **kwargs, injected parameters


def t_required_and_defaults(
    city: str,
    days: int = 3,
    unit: Literal["c", "f"] = "c",
    note: str | None = None,
    ratio: float = 0.5,
    verbose: bool = False,
) -> None: ...


def t_rich_defaults(
    color: Color = Color.GREEN,
    level: Level = Level.HIGH,
    day: dt.date = dt.date(2024, 5, 1),
    span: dt.timedelta = dt.timedelta(hours=1),
    point: tuple[int, int] = (1, 2),
    tags: frozenset[str] = frozenset({"b", "a"}),
    ident: uuid.UUID = uuid.UUID(int=1),
    maybe: Optional[Color] = Color.RED,
) -> None: ...


_SENTINEL = object()


def t_unjsonable_defaults(
    anything: Any = _SENTINEL,
    ratio: float = float("inf"),
    when: Any = print,
) -> None: ...


def t_chatglm3(
    symbol: Annotated[str, "The stock symbol", True],
    market: Annotated[str, "The market", False] = "NASDAQ",
    limit: Annotated[int, "How many", True] = 10,
    note: Annotated[str, "A note", False] = "",
) -> None: ...


def t_chatglm3_optional_without_default(
    city: Annotated[str, "City", True],
    unit: Annotated[str, "Unit", False],
) -> None: ...


def t_param_required(
    a: Annotated[int, Param(required=True)] = 1,
    b: Annotated[int, Param(required=False)] = 2,
) -> None: ...


def t_kwargs_any(query: str, **options: Any) -> None: ...


def t_kwargs_typed(query: str, **counts: int) -> None: ...


def t_kwargs_annotated(**labels: Annotated[str, Param(max_length=8)]) -> None: ...


def t_context(
    city: str,
    ctx: ToolContext[dict[str, str]],
    plain_ctx: ToolContext,  # type: ignore[type-arg]
    session: Annotated[object, Injected],
    user: Annotated[str, Injected, "never shown"] = "anonymous",
) -> None: ...


def t_positional_only(a: int, /, b: str) -> None: ...


def t_no_parameters() -> None: ...


def t_bad_return(x: int) -> Any: ...


FUNCTIONS = [
    pytest.param(
        t_required_and_defaults,
        {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "default": 3},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "note": {"anyOf": [STRING, NULL], "default": None},
                "ratio": {"type": "number", "default": 0.5},
                "verbose": {"type": "boolean", "default": False},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        id="required-and-defaults",
    ),
    pytest.param(
        t_rich_defaults,
        {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
                "level": {"type": "integer", "enum": [1, 2], "default": 2},
                "day": {"type": "string", "format": "date", "default": "2024-05-01"},
                "span": {"type": "string", "format": "duration", "default": "P0DT3600S"},
                "point": {
                    "type": "array",
                    "prefixItems": [INTEGER, INTEGER],
                    "items": False,
                    "minItems": 2,
                    "maxItems": 2,
                    "default": [1, 2],
                },
                "tags": {
                    "type": "array",
                    "items": STRING,
                    "uniqueItems": True,
                    "default": ["a", "b"],
                },
                "ident": {
                    "type": "string",
                    "format": "uuid",
                    "default": "00000000-0000-0000-0000-000000000001",
                },
                "maybe": {
                    "anyOf": [{"type": "string", "enum": ["red", "green"]}, NULL],
                    "default": "red",
                },
            },
            "additionalProperties": False,
        },
        id="rich-defaults-as-json",
    ),
    pytest.param(
        t_unjsonable_defaults,
        {
            "type": "object",
            "properties": {"anything": {}, "ratio": {"type": "number"}, "when": {}},
            "additionalProperties": False,
        },
        id="unjsonable-defaults-left-out",
    ),
    pytest.param(
        t_chatglm3,
        {
            "type": "object",
            "properties": {
                "symbol": {"type": "string", "description": "The stock symbol"},
                "market": {"type": "string", "description": "The market", "default": "NASDAQ"},
                "limit": {"type": "integer", "description": "How many", "default": 10},
                "note": {"type": "string", "description": "A note", "default": ""},
            },
            "required": ["symbol", "limit"],
            "additionalProperties": False,
        },
        id="chatglm3-triple-overrides-required",
    ),
    pytest.param(
        t_chatglm3_optional_without_default,
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City"},
                "unit": {"type": "string", "description": "Unit"},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        id="chatglm3-false-without-default",
    ),
    pytest.param(
        t_param_required,
        {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "default": 1},
                "b": {"type": "integer", "default": 2},
            },
            "required": ["a"],
            "additionalProperties": False,
        },
        id="Param-required",
    ),
    pytest.param(
        t_kwargs_any,
        {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": True,
        },
        id="kwargs-Any",
    ),
    pytest.param(
        t_kwargs_typed,
        {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
            "additionalProperties": {"type": "integer"},
        },
        id="kwargs-typed",
    ),
    pytest.param(
        t_kwargs_annotated,
        {
            "type": "object",
            "properties": {},
            "additionalProperties": {"type": "string", "maxLength": 8},
        },
        id="kwargs-annotated",
    ),
    pytest.param(
        t_context,
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        id="context-and-injected-left-out",
    ),
    pytest.param(
        t_positional_only,
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        id="positional-only",
    ),
    pytest.param(
        t_no_parameters,
        {"type": "object", "properties": {}, "additionalProperties": False},
        id="no-parameters",
    ),
]


@pytest.mark.parametrize(("fn", "expected"), FUNCTIONS)
def test_tool_parameters(fn: Callable[..., Any], expected: dict[str, Any]) -> None:
    assert schema_of(fn) == expected


def test_injected_parameters_are_recorded_but_not_required() -> None:
    tool = tool_of(t_context)
    injected = {p.name: p.inject for p in tool.params if p.inject is not None}
    assert injected == {"ctx": "context", "plain_ctx": "context", "session": "raw", "user": "raw"}
    assert [p.name for p in tool.params if p.required] == ["city"]


def test_same_function_same_schema_on_every_call() -> None:
    assert schema_of(t_rich_defaults) == schema_of(t_rich_defaults)


# ----------------------------------------------------------------------------------------
# Named types: TypedDict, dataclass, NamedTuple, pydantic; nested and recursive via $defs


class Movie(TypedDict):
    title: str
    year: int


class MovieDraft(TypedDict, total=False):
    title: Required[str]
    year: int
    rating: float


class Review(TypedDict):
    movie: Movie
    stars: Annotated[int, Param(ge=1, le=5)]
    text: NotRequired[Annotated[str, "What the reviewer thought"]]


class DetailedReview(Review, total=False):
    spoilers: bool


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list[str] = dataclasses.field(default_factory=list)
    cache: dict[str, int] = dataclasses.field(default_factory=dict, init=False)


@dataclasses.dataclass(frozen=True)
class Box:
    """An axis-aligned box."""

    low: Point
    high: Point
    label: Annotated[str, "Shown on the map"] = ""


class Pair(NamedTuple):
    key: str
    value: int = 0


@dataclasses.dataclass
class Node:
    value: int
    children: list["Node"] = dataclasses.field(default_factory=list)


class Category(TypedDict):
    name: str
    parent: Optional["Category"]
    children: list["Category"]


@dataclasses.dataclass
class Employee:
    name: str
    team: "Team | None" = None


@dataclasses.dataclass
class Team:
    lead: Employee
    members: list[Employee]


def t_typeddicts(movie: Movie, draft: MovieDraft) -> None: ...


def t_nested_typeddict(review: Review, reviews: list[Review] | None = None) -> None: ...


def t_inherited_typeddict(review: DetailedReview) -> None: ...


def t_dataclasses(box: Box, pair: Pair, start: Point = Point(1.0, 2.0)) -> None: ...


def t_recursive(node: Node, category: Optional[Category] = None) -> None: ...


def t_mutual(team: Team) -> None: ...


MOVIE = {
    "type": "object",
    "properties": {"title": STRING, "year": INTEGER},
    "required": ["title", "year"],
    "additionalProperties": False,
}
REVIEW = {
    "type": "object",
    "properties": {
        "movie": {"$ref": "#/$defs/Movie"},
        "stars": {"type": "integer", "minimum": 1, "maximum": 5},
        "text": {"type": "string", "description": "What the reviewer thought"},
    },
    "required": ["movie", "stars"],
    "additionalProperties": False,
}
POINT = {
    "type": "object",
    "properties": {
        "x": NUMBER,
        "y": {"type": "number", "default": 0.0},
        "tags": {"type": "array", "items": STRING},
    },
    "required": ["x"],
    "additionalProperties": False,
}

NAMED = [
    pytest.param(
        t_typeddicts,
        {
            "type": "object",
            "properties": {
                "movie": {"$ref": "#/$defs/Movie"},
                "draft": {"$ref": "#/$defs/MovieDraft"},
            },
            "required": ["movie", "draft"],
            "additionalProperties": False,
            "$defs": {
                "Movie": MOVIE,
                "MovieDraft": {
                    "type": "object",
                    "properties": {"title": STRING, "year": INTEGER, "rating": NUMBER},
                    "required": ["title"],
                    "additionalProperties": False,
                },
            },
        },
        id="TypedDict-total-and-partial",
    ),
    pytest.param(
        t_nested_typeddict,
        {
            "type": "object",
            "properties": {
                "review": {"$ref": "#/$defs/Review"},
                "reviews": {
                    "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Review"}}, NULL],
                    "default": None,
                },
            },
            "required": ["review"],
            "additionalProperties": False,
            "$defs": {"Review": REVIEW, "Movie": MOVIE},
        },
        id="TypedDict-nested-NotRequired-Annotated",
    ),
    pytest.param(
        t_inherited_typeddict,
        {
            "type": "object",
            "properties": {"review": {"$ref": "#/$defs/DetailedReview"}},
            "required": ["review"],
            "additionalProperties": False,
            "$defs": {
                "DetailedReview": {
                    "type": "object",
                    "properties": {**REVIEW["properties"], "spoilers": {"type": "boolean"}},  # type: ignore[dict-item]
                    "required": ["movie", "stars"],
                    "additionalProperties": False,
                },
                "Movie": MOVIE,
            },
        },
        id="TypedDict-inherited",
    ),
    pytest.param(
        t_dataclasses,
        {
            "type": "object",
            "properties": {
                "box": {"$ref": "#/$defs/Box"},
                "pair": {"$ref": "#/$defs/Pair"},
                # a dataclass default is shown as the model would send it: __init__ fields only
                "start": {"$ref": "#/$defs/Point", "default": {"x": 1.0, "y": 2.0, "tags": []}},
            },
            "required": ["box", "pair"],
            "additionalProperties": False,
            "$defs": {
                "Box": {
                    "description": "An axis-aligned box.",
                    "type": "object",
                    "properties": {
                        "low": {"$ref": "#/$defs/Point"},
                        "high": {"$ref": "#/$defs/Point"},
                        "label": {
                            "type": "string",
                            "description": "Shown on the map",
                            "default": "",
                        },
                    },
                    "required": ["low", "high"],
                    "additionalProperties": False,
                },
                "Point": POINT,
                "Pair": {
                    "type": "object",
                    "properties": {"key": STRING, "value": {"type": "integer", "default": 0}},
                    "required": ["key"],
                    "additionalProperties": False,
                },
            },
        },
        id="dataclass-NamedTuple-defaults-factory",
    ),
    pytest.param(
        t_recursive,
        {
            "type": "object",
            "properties": {
                "node": {"$ref": "#/$defs/Node"},
                "category": {"anyOf": [{"$ref": "#/$defs/Category"}, NULL], "default": None},
            },
            "required": ["node"],
            "additionalProperties": False,
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "value": INTEGER,
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                },
                "Category": {
                    "type": "object",
                    "properties": {
                        "name": STRING,
                        "parent": {"anyOf": [{"$ref": "#/$defs/Category"}, NULL]},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Category"}},
                    },
                    "required": ["name", "parent", "children"],
                    "additionalProperties": False,
                },
            },
        },
        id="recursive",
    ),
    pytest.param(
        t_mutual,
        {
            "type": "object",
            "properties": {"team": {"$ref": "#/$defs/Team"}},
            "required": ["team"],
            "additionalProperties": False,
            "$defs": {
                "Team": {
                    "type": "object",
                    "properties": {
                        "lead": {"$ref": "#/$defs/Employee"},
                        "members": {"type": "array", "items": {"$ref": "#/$defs/Employee"}},
                    },
                    "required": ["lead", "members"],
                    "additionalProperties": False,
                },
                "Employee": {
                    "type": "object",
                    "properties": {
                        "name": STRING,
                        "team": {"anyOf": [{"$ref": "#/$defs/Team"}, NULL], "default": None},
                    },
                    "required": ["name"],
                    "additionalProperties": False,
                },
            },
        },
        id="mutually-recursive",
    ),
]


@pytest.mark.parametrize(("fn", "expected"), NAMED)
def test_named_types(fn: Callable[..., Any], expected: dict[str, Any]) -> None:
    assert schema_of(fn) == expected


def test_two_classes_with_one_name_get_two_definitions() -> None:
    def make() -> type:
        @dataclasses.dataclass
        class Item:
            sku: str

        return Item

    other = make()

    @dataclasses.dataclass
    class Item:
        count: int

    def f(a: Item, b: other) -> None:  # type: ignore[valid-type]
        raise NotImplementedError

    f.__annotations__ = {"a": Item, "b": other}
    assert schema_of(f) == {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Item"}, "b": {"$ref": "#/$defs/Item2"}},
        "required": ["a", "b"],
        "additionalProperties": False,
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"count": INTEGER},
                "required": ["count"],
                "additionalProperties": False,
            },
            "Item2": {
                "type": "object",
                "properties": {"sku": STRING},
                "required": ["sku"],
                "additionalProperties": False,
            },
        },
    }


# ----------------------------------------------------------------------------------------
# `from __future__ import annotations` and forward references (tests/_future_tools.py)


def test_future_annotations_and_forward_references() -> None:
    tool = tool_of(_future_tools.plan_trip)
    assert tool.description == "Plan a trip along a route."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "route": {"$ref": "#/$defs/Route"},
            "stops": {"type": "array", "items": {"$ref": "#/$defs/Stop"}},
            "budget": {"anyOf": [NUMBER, NULL], "default": None},
        },
        "required": ["route", "stops"],
        "additionalProperties": False,
        "$defs": {
            # NotRequired / Required under PEP 563: read from the hints, not __required_keys__
            "Route": {
                "type": "object",
                "properties": {
                    "start": STRING,
                    "end": {"type": "string", "description": "Where the trip ends"},
                    "via": {"type": "array", "items": STRING},
                },
                "required": ["start", "end"],
                "additionalProperties": False,
            },
            "Stop": {
                "type": "object",
                "properties": {"name": STRING, "nights": INTEGER},
                "required": ["name"],
                "additionalProperties": False,
            },
        },
    }


def test_future_annotations_recursive_dataclass() -> None:
    assert schema_of(_future_tools.walk_tree) == {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/TreeNode"}},
        "required": ["root"],
        "additionalProperties": False,
        "$defs": {
            "TreeNode": {
                "type": "object",
                "properties": {
                    "label": STRING,
                    "children": {"type": "array", "items": {"$ref": "#/$defs/TreeNode"}},
                },
                "required": ["label"],
                "additionalProperties": False,
            }
        },
    }


def test_unresolvable_return_annotation_does_not_block_registration() -> None:
    assert schema_of(_future_tools.bad_return) == {
        "type": "object",
        "properties": {"x": INTEGER},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_string_annotations_in_a_normal_module() -> None:
    def f(node: Node, n: int) -> None:
        raise NotImplementedError

    f.__annotations__ = {"node": "Node", "n": "int"}
    assert schema_of(f)["properties"] == {"node": {"$ref": "#/$defs/Node"}, "n": INTEGER}


def test_none_default_does_not_make_the_type_optional() -> None:
    """Python 3.10's get_type_hints adds Optional for `= None`; toolreg never does."""

    def f(x: int | None = None, y: Optional[str] = None) -> None:
        raise NotImplementedError

    assert schema_of(f)["properties"] == {
        "x": {"anyOf": [INTEGER, NULL], "default": None},
        "y": {"anyOf": [STRING, NULL], "default": None},
    }


# ----------------------------------------------------------------------------------------
# pydantic models (optional dependency)


def test_pydantic_models() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        street: str
        zip_code: str = pydantic.Field(pattern=r"^\d{5}$", description="Five digits")

    class Customer(pydantic.BaseModel):
        """A customer."""

        name: str = pydantic.Field(min_length=1)
        address: Address
        previous: list[Address] = []
        color: Color = Color.RED

    def f(customer: Customer, address: Address | None = None) -> None:
        raise NotImplementedError

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "customer": {"$ref": "#/$defs/Customer"},
            "address": {"anyOf": [{"$ref": "#/$defs/Address"}, NULL], "default": None},
        },
        "required": ["customer"],
        "additionalProperties": False,
        "$defs": {
            "Customer": {
                "description": "A customer.",
                "properties": {
                    "name": {"minLength": 1, "type": "string"},
                    "address": {"$ref": "#/$defs/Address"},
                    "previous": {
                        "default": [],
                        "items": {"$ref": "#/$defs/Address"},
                        "type": "array",
                    },
                    "color": {"$ref": "#/$defs/Color", "default": "red"},
                },
                "required": ["name", "address"],
                "type": "object",
                "additionalProperties": False,
            },
            # one entry for Address, whether reached through Customer or directly
            "Address": {
                "properties": {
                    "street": {"type": "string"},
                    "zip_code": {
                        "description": "Five digits",
                        "pattern": r"^\d{5}$",
                        "type": "string",
                    },
                },
                "required": ["street", "zip_code"],
                "type": "object",
                "additionalProperties": False,
            },
            "Color": {"enum": ["red", "green"], "type": "string"},
        },
    }


def test_pydantic_recursive_model() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Comment(pydantic.BaseModel):
        text: str
        replies: list["Comment"] = []

    Comment.model_rebuild(_types_namespace={"Comment": Comment})

    def f(comment: Comment) -> None:
        raise NotImplementedError

    assert schema_of(f) == {
        "type": "object",
        "properties": {"comment": {"$ref": "#/$defs/Comment"}},
        "required": ["comment"],
        "additionalProperties": False,
        "$defs": {
            "Comment": {
                "properties": {
                    "text": {"type": "string"},
                    "replies": {
                        "default": [],
                        "items": {"$ref": "#/$defs/Comment"},
                        "type": "array",
                    },
                },
                "required": ["text"],
                "type": "object",
                "additionalProperties": False,
            }
        },
    }


def _pydantic_money() -> Any:
    """A pydantic model named `Money`, like the dataclass below (pydantic keys $defs by name)."""
    pydantic = pytest.importorskip("pydantic")

    class Money(pydantic.BaseModel):
        currency: str

    class Wallet(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        balance: Money

    return Wallet


def test_pydantic_model_and_dataclass_with_the_same_name() -> None:
    wallet_model = _pydantic_money()

    @dataclasses.dataclass
    class Money:
        cents: int

    def f(cash: Money, wallet: wallet_model) -> None:  # type: ignore[valid-type]
        raise NotImplementedError

    assert schema_of(f) == {
        "type": "object",
        "properties": {"cash": {"$ref": "#/$defs/Money"}, "wallet": {"$ref": "#/$defs/Wallet"}},
        "required": ["cash", "wallet"],
        "additionalProperties": False,
        "$defs": {
            "Money": {
                "type": "object",
                "properties": {"cents": INTEGER},
                "required": ["cents"],
                "additionalProperties": False,
            },
            "Money2": {
                "properties": {"currency": {"type": "string"}},
                "required": ["currency"],
                "type": "object",
                "additionalProperties": False,
            },
            "Wallet": {
                "additionalProperties": True,  # extra="allow" is kept
                "properties": {"balance": {"$ref": "#/$defs/Money2"}},
                "required": ["balance"],
                "type": "object",
            },
        },
    }


def test_pydantic_model_can_be_strict() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Query(pydantic.BaseModel):
        text: str
        limit: int = 10

    def f(query: Query) -> None:
        raise NotImplementedError

    reg = ToolRegistry()
    reg.register_tool(f, strict=True)
    (exported,) = reg.get_tools(strict=True)
    assert exported["function"]["parameters"]["$defs"]["Query"] == {
        "properties": {
            "text": {"type": "string"},
            "limit": {
                "description": "Default: 10 (send null for the default).",
                "anyOf": [{"type": "integer"}, NULL],
            },
        },
        "required": ["text", "limit"],
        "type": "object",
        "additionalProperties": False,
    }
