"""Differential test: the compiled validator agrees with jsonschema on generated cases."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from jsonschema._utils import uniq as jsonschema_uniq

from toolreg.validation.coercion import unique
from toolreg.validation.validator import Problem, Validator

TOO_DEEP = Problem((), "value is nested too deeply")
KEYS = ["a", "b", "c", "é", "a b", ""]
PATTERNS = ["^a", "b$", "[0-9]", "^$", "é", "^[a-z]+$"]
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 12),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, -1.5, 0.1, 0.3, 1e20, 3.0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(),
    st.text(alphabet="ab1é😀 ", max_size=5),
    st.sampled_from(KEYS),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    ),
    max_leaves=12,
)
small = st.integers(0, 4)
numbers = st.one_of(st.integers(-3, 10), st.sampled_from([0.5, 1.5, 2.0, -0.5, 0.1]))


def _typed(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    extra: dict[str, st.SearchStrategy[Any]] = {}
    if kind == "string":
        extra = {
            "minLength": small,
            "maxLength": small,
            "pattern": st.sampled_from(PATTERNS),
            "format": st.sampled_from(["email", "date-time", "uuid"]),
        }
    elif kind in ("integer", "number"):
        extra = {
            "minimum": numbers,
            "maximum": numbers,
            "exclusiveMinimum": numbers,
            "exclusiveMaximum": numbers,
            "multipleOf": st.sampled_from([1, 2, 3, 0.5, 0.1, 1.5]),
        }
    return st.fixed_dictionaries(
        {"type": st.just(kind)},
        optional={**extra, "description": st.just("annotation"), "default": json_values},
    )


leaves = st.one_of(
    st.sampled_from(TYPES).flatmap(_typed),
    st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True).map(
        lambda t: {"type": t}
    ),
    st.lists(json_values, min_size=1, max_size=5).map(lambda v: {"enum": v}),
    json_values.map(lambda v: {"const": v}),
    st.booleans(),
    st.just({}),
    st.sampled_from([{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}, {"$ref": "#"}]),
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    objects = st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("object"),
            "properties": st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
            "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
            "additionalProperties": inner,
            "patternProperties": st.dictionaries(st.sampled_from(PATTERNS), inner, max_size=2),
            "propertyNames": st.sampled_from(
                [{"pattern": "^[a-z]*$"}, {"maxLength": 1}, {"enum": ["a", "b"]}]
            ),
            "minProperties": small,
            "maxProperties": small,
        },
    )
    arrays = st.fixed_dictionaries(
        {},
        optional={
            "type": st.just("array"),
            "items": inner,
            "prefixItems": st.lists(inner, max_size=2),
            "minItems": small,
            "maxItems": small,
            "uniqueItems": st.booleans(),
            "contains": inner,
            "minContains": small,
            "maxContains": small,
        },
    )
    combined = st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda s: {"anyOf": s}),
        st.lists(inner, min_size=1, max_size=3).map(lambda s: {"oneOf": s}),
        st.lists(inner, min_size=1, max_size=3).map(lambda s: {"allOf": s}),
        inner.map(lambda s: {"not": s}),
        st.fixed_dictionaries(
            {},
            optional={
                "dependentRequired": st.dictionaries(
                    st.sampled_from(KEYS), st.lists(st.sampled_from(KEYS), max_size=2, unique=True)
                ),
                "dependentSchemas": st.dictionaries(st.sampled_from(KEYS), inner, max_size=2),
            },
        ),
        st.tuples(inner, leaves).map(
            lambda p: {
                "anyOf": [p[0], {"type": "null"}],
                **(p[1] if isinstance(p[1], dict) else {}),
            }
        ),
    )
    return st.one_of(objects, arrays, combined)


schemas = st.recursive(leaves, _containers, max_leaves=8)
documents = st.fixed_dictionaries(
    {"$defs": st.fixed_dictionaries({"A": schemas, "B": schemas})},
).flatmap(lambda root: schemas.map(lambda s: {**root, **s} if isinstance(s, dict) else root))


def _lists(value: Any) -> list[list[Any]]:
    if isinstance(value, list):
        return [value, *(x for item in value for x in _lists(item))]
    if isinstance(value, dict):
        return [x for item in value.values() for x in _lists(item)]
    return []


def _jsonschema_is_valid(schema: Any, instance: Any) -> bool:
    try:
        return bool(jsonschema.Draft202012Validator(schema).is_valid(instance))
    except RecursionError:  # a $ref loop that never descends: undefined, skip it
        reject()
    except BaseException as error:  # the same, seen through referencing's Rust core
        if type(error).__name__ != "PanicException":
            raise
        reject()


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=documents, instances=st.lists(json_values, min_size=1, max_size=4))
def test_agrees_with_jsonschema(schema: dict[str, Any], instances: list[Any]) -> None:
    validator = Validator(schema)
    for instance in instances:
        if any(unique(x) != jsonschema_uniq(x) for x in _lists(instance)):
            continue  # jsonschema's sort-based uniqueItems check misses some duplicates
        if validator.validate(instance) == [TOO_DEEP]:
            continue  # a $ref loop that never descends: jsonschema's answer hangs on key order
        expected = _jsonschema_is_valid(schema, instance)
        assert validator.is_valid(instance) == expected, (schema, instance)
        assert (validator.validate(instance) == []) == expected, (schema, instance)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=documents, instance=json_values)
def test_fallback_agrees_with_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    """The same schemas with an uncompiled keyword (`if`/`then`; `dependentRequired` is
    compiled now) go through jsonschema, same answers."""
    schema = {**schema, "if": {"required": ["zz"]}, "then": {"required": ["a"]}}
    validator = Validator(schema)
    expected = _jsonschema_is_valid(schema, instance)
    assert validator.is_valid(instance) == expected
    assert (validator.validate(instance) == []) == expected


@pytest.mark.parametrize(
    ("items", "ours", "theirs"),
    [([[1], [True], [1]], False, True), ([[0], [False], [0.0]], False, True)],
)
def test_unique_items_is_exact_where_jsonschema_is_not(
    items: list[Any], ours: bool, theirs: bool
) -> None:
    schema = {"type": "array", "uniqueItems": True}
    assert Validator(schema).is_valid(items) is ours
    assert jsonschema.Draft202012Validator(schema).is_valid(items) is theirs
