"""The fast metaschema check (`toolreg.validation.metaschema.conforms`) says what jsonschema's
`Draft202012Validator.check_schema` says, on generated schemas valid and invalid."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg.validation.metaschema import conforms

KEYWORDS = [
    *("$id", "$schema", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary"),
    *("$comment", "$defs", "prefixItems", "items", "contains", "additionalProperties"),
    *("properties", "patternProperties", "dependentSchemas", "propertyNames", "if", "then"),
    *("else", "allOf", "anyOf", "oneOf", "not", "unevaluatedItems", "unevaluatedProperties"),
    *("type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum"),
    *("exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems"),
    *("uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"),
    *("required", "dependentRequired", "title", "description", "default", "deprecated"),
    *("readOnly", "writeOnly", "examples", "format", "contentEncoding", "contentMediaType"),
    *("contentSchema", "definitions", "dependencies", "$recursiveAnchor", "$recursiveRef"),
    *("x-unknown", "id", "nullable"),
]
STRINGS = [
    *("", "a", "string", "integer", "object", "#", "#/$defs/a", "#a", "a#b", "http://x/y#"),
    *("^[a-z]+$", "(", "[", "a{2}", "_anchor", "1bad", "a b", "https://json-schema.org/x"),
    *("anchor\n", "\\d+", "*", "urn:x"),
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e300]),
    st.sampled_from(STRINGS),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(STRINGS), inner, max_size=3),
    ),
    max_leaves=6,
)


def _valid_values(inner: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    """A value the metaschema accepts for each keyword (most of the time: the strings and
    numbers drawn from include some it refuses)."""
    strings = st.sampled_from(STRINGS)
    refs = st.sampled_from(["#", "#/$defs/a", "#a", "urn:x", "http://x/y#"])
    anchors = st.sampled_from(["a", "_x", "a-b.c"])
    names = st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True)
    types = st.sampled_from(["string", "integer", "null", "object", "array"])
    count = st.one_of(st.integers(0, 3), st.sampled_from([2.0, 0.0]))
    schema_map = st.dictionaries(st.sampled_from(["a", "b", "^a", ""]), inner, max_size=3)
    schema_list = st.lists(inner, min_size=1, max_size=3)
    one = dict.fromkeys(("items", "contains", "additionalProperties", "propertyNames"), inner)
    one |= dict.fromkeys(("if", "then", "else", "not", "contentSchema"), inner)
    one |= dict.fromkeys(("unevaluatedItems", "unevaluatedProperties"), inner)
    return {
        **one,
        **dict.fromkeys(("$defs", "properties", "patternProperties"), schema_map),
        **dict.fromkeys(("dependentSchemas", "definitions"), schema_map),
        **dict.fromkeys(("prefixItems", "allOf", "anyOf", "oneOf"), schema_list),
        **dict.fromkeys(("$schema", "$ref", "$dynamicRef", "$recursiveRef"), refs),
        **dict.fromkeys(("$anchor", "$dynamicAnchor", "$recursiveAnchor"), anchors),
        "$id": st.sampled_from(["", "a", "http://x/y#", "urn:x"]),
        "pattern": st.sampled_from(["^[a-z]+$", "a{2}", "\\d+", ""]),
        **dict.fromkeys(("$comment", "title", "description", "format"), strings),
        **dict.fromkeys(("contentEncoding", "contentMediaType"), strings),
        **{k: st.booleans() for k in ("uniqueItems", "deprecated", "readOnly", "writeOnly")},
        **{k: st.integers(-3, 3) for k in ("maximum", "minimum")},
        **{k: st.sampled_from([0.5, 1, 2.5]) for k in ("exclusiveMaximum", "multipleOf")},
        **dict.fromkeys(("maxLength", "minLength", "maxItems", "minItems"), count),
        **dict.fromkeys(("maxContains", "minContains", "maxProperties", "minProperties"), count),
        "exclusiveMinimum": st.integers(-3, 3),
        "type": st.one_of(types, st.lists(types, min_size=1, max_size=3, unique=True)),
        "const": values,
        "default": values,
        "enum": st.lists(values, max_size=3),
        "examples": st.lists(values, max_size=3),
        "required": names,
        "dependentRequired": st.dictionaries(st.sampled_from(["a", "b"]), names, max_size=2),
        "dependencies": st.dictionaries(
            st.sampled_from(["a", "b"]), st.one_of(names, inner), max_size=2
        ),
        "$vocabulary": st.dictionaries(st.sampled_from(STRINGS), st.booleans(), max_size=2),
    }


def _schemas(inner: st.SearchStrategy[Any], noise: bool = True) -> st.SearchStrategy[Any]:
    valid = _valid_values(inner)
    anything = st.one_of(
        values,
        inner,
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(STRINGS), inner, max_size=3),
        st.lists(st.sampled_from(STRINGS), max_size=3),
        st.dictionaries(st.sampled_from(STRINGS), st.lists(st.sampled_from(STRINGS)), max_size=2),
    )
    entry = st.sampled_from(KEYWORDS).flatmap(
        lambda key: st.tuples(
            st.just(key),
            (st.one_of(*[valid[key]] * 8, anything) if noise else valid[key])
            if key in valid
            else anything,
        )
    )
    return st.lists(entry, max_size=4).map(dict)


schemas = st.recursive(
    st.one_of(st.booleans(), *[st.just({})] * 6, scalars), _schemas, max_leaves=10
)
mostly_valid = st.recursive(
    st.one_of(st.booleans(), st.just({})),
    lambda inner: _schemas(inner, noise=False),
    max_leaves=12,
)


def jsonschema_says(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(schemas, mostly_valid))
def test_conforms_agrees_with_jsonschema_on_plain_json(schema: Any) -> None:
    assert conforms(schema) == jsonschema_says(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}},
        {"type": ["string", "null"], "pattern": "^[a-z]+$", "format": "email"},
        {"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a", "$id": "https://x/y#"},
        {"dependencies": {"a": ["b"], "c": {"required": ["d"]}}, "definitions": {"x": True}},
        {"items": {"minItems": 2.0}, "prefixItems": [True, False], "$anchor": "a-b_c.d"},
        {"minLength": 1.0, "multipleOf": 0.5, "enum": [], "examples": [1, "a"]},
    ],
)
def test_valid_schemas(schema: dict[str, Any]) -> None:
    assert conforms(schema)
    assert jsonschema_says(schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "any"},
        {"type": []},
        {"type": ["string", "string"]},
        {"items": [{"type": "string"}]},  # draft 7's tuple form
        {"exclusiveMinimum": True},  # draft 4's boolean
        {"minLength": -1},
        {"minLength": 1.5},
        {"minLength": True},
        {"multipleOf": 0},
        {"required": ["a", "a"]},
        {"required": True},  # draft 3
        {"allOf": []},
        {"pattern": "("},
        {"patternProperties": {"(": {}}},
        {"$id": "#frag"},
        {"$anchor": "1bad"},
        {"$recursiveAnchor": True},  # 2019-09's boolean
        {"properties": {"a": 1}},
        {"dependencies": {"a": "b"}},
        {"dependentRequired": {"a": [1]}},
        {"$vocabulary": {"https://x": "yes"}},
    ],
)
def test_invalid_schemas(schema: dict[str, Any]) -> None:
    assert not conforms(schema)
    assert not jsonschema_says(schema)


@pytest.mark.parametrize(
    "schema",
    [
        OrderedDict(type="string"),  # valid for jsonschema: a dict, though not plain
        {"maximum": float("inf")},
        {"maximum": float("nan")},
        {"enum": ("a", "b")},  # a tuple is not an array for jsonschema
        {"properties": OrderedDict(a={})},
    ],
)
def test_anything_not_plain_json_is_left_to_jsonschema(schema: Any) -> None:
    assert conforms(schema) is False  # "ask jsonschema", whatever it then says
    jsonschema_says(schema)


def test_a_schema_deeper_than_the_stack_is_left_to_jsonschema() -> None:
    schema: dict[str, Any] = {}
    for _ in range(5_000):
        schema = {"not": schema}
    assert conforms(schema) is False
