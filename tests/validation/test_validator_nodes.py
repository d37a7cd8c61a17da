"""A tool's validator reuses the checks compiled for its parameters' schema fragments
(`Validator(nodes=...)`); it must judge every value exactly as one compiled from scratch."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal, Optional

import pytest
from typing_extensions import TypedDict

from toolreg import Param, Tool
from toolreg.jsonvalues import copy_json
from toolreg.validation import Validator, self_contained_node
from toolreg.validation.keywords import reject


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    label: Annotated[str, Param(min_length=2)]


def many(
    name: str,
    count: Annotated[int, Param(ge=1, le=5)],
    tags: list[str],
    color: Color = Color.RED,
    unit: Literal["c", "f"] = "c",
    when: Optional[str] = None,
    ratio: float | None = None,
    points: list[Point] | None = None,
) -> str:
    """Everything at once.

    Args:
        name: A name.
        count: How many.
    """
    return name


VALUES: list[Any] = [
    None,
    True,
    0,
    3,
    9,
    1.5,
    "x",
    "",
    [],
    ["a"],
    [1],
    {},
    {"x": 1, "label": "ab"},
    {"x": 1, "label": "a"},
    {"x": "1", "label": "ab"},
    "red",
    "green",
    "c",
    "k",
]


def _arguments() -> list[dict[str, Any]]:
    base = {"name": "n", "count": 2, "tags": ["t"]}
    out: list[dict[str, Any]] = [base, {}, {"name": "n"}, {**base, "extra": 1}]
    for key in ("name", "count", "tags", "color", "unit", "when", "ratio", "points"):
        for value in VALUES:
            out.append({**base, key: value})
            out.append({**base, key: [value]})
    return out


@pytest.mark.parametrize("fn", [many])
def test_tool_validator_agrees_with_a_validator_compiled_from_scratch(fn: Any) -> None:
    for _ in range(2):  # the second tool takes every fragment's check from the cache
        tool = Tool.from_function(fn)
        scratch = Validator(copy_json(tool.parameters))
        for arguments in _arguments():
            assert tool.plan.validator.validate(arguments) == scratch.validate(arguments), arguments


def test_nodes_for_dicts_outside_the_schema_are_ignored() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    stranger: dict[str, Any] = {"type": "integer"}
    validator = Validator(schema, copy=False, nodes={id(stranger): reject})
    assert validator.is_valid({"a": 1})
    assert validator.accepts(stranger, 1)  # compiled on its own, not the given check


def test_a_given_node_is_used_for_its_subschema() -> None:
    prop: dict[str, Any] = {"type": "integer"}
    schema = {"type": "object", "properties": {"a": prop}}
    validator = Validator(schema, copy=False, nodes={id(prop): reject})
    assert not validator.is_valid({"a": 1})


def test_nodes_need_the_schema_itself() -> None:
    prop: dict[str, Any] = {"type": "integer"}
    with pytest.raises(ValueError, match="copy=False"):
        Validator({"type": "object", "properties": {"a": prop}}, nodes={id(prop): reject})


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/A"},
        {"type": "array", "items": {"$ref": "#"}},
        {"$id": "https://example.com/a", "type": "string"},
        {"if": {"type": "string"}, "then": {"minLength": 1}},
        {"type": "string", "pattern": "("},
        {"type": "nothing"},
    ],
)
def test_no_self_contained_node_for_what_depends_on_the_document_or_fails(
    schema: dict[str, Any],
) -> None:
    assert self_contained_node(schema) is None


def test_self_contained_node_checks_like_a_validator() -> None:
    schema = {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]}
    node = self_contained_node(schema)
    assert node is not None
    for value in (None, "ab", "a", 1, [], {}):
        assert (node(value) is None) == Validator(schema).is_valid(value)
