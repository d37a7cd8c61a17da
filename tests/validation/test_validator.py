"""The compiled validator: every keyword, every message, paths, $ref, fallback, coercion."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg.validation.validator import MAX_ITEM_PROBLEMS, Problem, Validator

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def problems(schema: Any, instance: Any) -> list[tuple[str, str]]:
    return [(p.location(), p.message) for p in Validator(schema).validate(instance)]


def test_valid_instance_has_no_problems() -> None:
    validator = Validator(WEATHER)
    assert validator.validate({"city": "北京", "unit": "f", "days": 3}) == []
    assert validator.is_valid({"city": "Paris", "days": 2.0})  # an integral float is an integer


def test_collects_every_problem_in_order() -> None:
    assert problems(WEATHER, {"unit": "k", "days": 0, "foo": 1, "bar": None}) == [
        ("(root)", "missing required property 'city'"),
        ("unit", "'k' is not one of 'c', 'f'"),
        ("days", "must be >= 1"),
        ("(root)", "unexpected property 'foo'"),
        ("(root)", "unexpected property 'bar'"),
    ]


def test_problem_is_a_frozen_value() -> None:
    problem = Problem(("items", 0, "name"), "expected string, got integer")
    assert problem == Problem(("items", 0, "name"), "expected string, got integer")
    with pytest.raises(AttributeError):
        problem.message = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((), "(root)"),
        (("city",), "city"),
        (("items", 0, "name"), "items[0].name"),
        ((0,), "[0]"),
        ((0, 1, "a"), "[0][1].a"),
        (("a b", "c"), "['a b'].c"),
        (("x", "a.b"), "x['a.b']"),
        (("",), "['']"),
        (("é",), "é"),
    ],
)
def test_location(path: tuple[str | int, ...], text: str) -> None:
    assert Problem(path, "m").location() == text


@pytest.mark.parametrize(
    ("schema", "instance", "message"),
    [
        ({"type": "integer"}, "3", "expected integer, got string"),
        ({"type": "integer"}, True, "expected integer, got boolean"),
        ({"type": "integer"}, 2.5, "expected integer, got number"),
        ({"type": "number"}, False, "expected number, got boolean"),
        ({"type": "string"}, None, "expected string, got null"),
        ({"type": "boolean"}, 0, "expected boolean, got integer"),
        ({"type": "null"}, "null", "expected null, got string"),
        ({"type": "array"}, {}, "expected array, got object"),
        ({"type": "object"}, [], "expected object, got array"),
        ({"type": ["string", "null"]}, 1, "expected string or null, got integer"),
        (
            {"type": ["string", "integer", "null"]},
            [],
            "expected string, integer or null, got array",
        ),
        ({"type": "array"}, (1, 2), "expected array, got tuple"),
        ({"type": "object"}, {1, 2}, "expected object, got set"),
        ({"enum": ["c", "f"]}, "x", "'x' is not one of 'c', 'f'"),
        ({"enum": [1, None, True, [1]]}, 2, "2 is not one of 1, null, true, [1]"),
        ({"enum": list(range(12))}, 20, "20 is not one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ..."),
        ({"type": "string", "enum": ["c", "f"]}, 5, "5 is not one of 'c', 'f'"),
        ({"type": "integer", "enum": [1.5]}, 1.5, "expected integer, got number"),
        ({"const": "on"}, "off", "must be 'on'"),
        ({"const": 1}, True, "must be 1"),
        ({"minimum": 1}, 0, "must be >= 1"),
        ({"maximum": 10}, 11, "must be <= 10"),
        ({"exclusiveMinimum": 0}, 0, "must be > 0"),
        ({"exclusiveMaximum": 10}, 10, "must be < 10"),
        ({"exclusiveMaximum": 0.5}, 0.5, "must be < 0.5"),
        ({"multipleOf": 5}, 7, "must be a multiple of 5"),
        ({"multipleOf": 0.1}, 0.35, "must be a multiple of 0.1"),
        ({"minLength": 3}, "ab", "must have at least 3 characters"),
        ({"minLength": 1}, "", "must have at least 1 character"),
        ({"maxLength": 64}, "x" * 65, "must have at most 64 characters"),
        ({"pattern": "^[a-z]+$"}, "abc1", "must match pattern '^[a-z]+$'"),
        ({"minItems": 1}, [], "must have at least 1 item"),
        ({"minItems": 3}, [1], "must have at least 3 items"),
        ({"maxItems": 5}, list(range(6)), "must have at most 5 items"),
        ({"uniqueItems": True}, [1, 1.0], "items must be unique"),
        ({"uniqueItems": True}, [{"a": [1]}, {"a": [1.0]}], "items must be unique"),
        ({"prefixItems": [{}], "items": False}, [1, 2], "must have at most 1 item"),
        ({"contains": {"type": "string"}}, [1], "must contain 1 matching item"),
        ({"contains": {}, "minContains": 2}, [1], "must contain 2 matching items"),
        ({"contains": {}, "maxContains": 1}, [1, 2], "must contain at most 1 matching item"),
        ({"minProperties": 2}, {"a": 1}, "must have at least 2 properties"),
        ({"maxProperties": 1}, {"a": 1, "b": 2}, "must have at most 1 property"),
        (
            {"propertyNames": {"pattern": "^[a-z]+$"}},
            {"A": 1},
            "invalid property name 'A': must match pattern '^[a-z]+$'",
        ),
        ({"not": {"type": "null"}}, None, "value is not allowed"),
        (False, 1, "no value is allowed here"),
        (
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
            3,
            "does not match any allowed type (expected string or null)",
        ),
        (
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            1,
            "matches more than one alternative",
        ),
        (
            {"oneOf": [{"enum": ["a"]}, {"type": "boolean"}]},
            1,
            "does not match any allowed type (expected string or boolean)",
        ),
        (
            {"anyOf": [{"minimum": 5}, {"maximum": 1}]},
            3,
            "does not match any of the allowed alternatives",
        ),
    ],
)
def test_messages(schema: Any, instance: Any, message: str) -> None:
    assert problems(schema, instance) == [("(root)", message)]


def test_messages_never_carry_a_long_value() -> None:
    [(_, message)] = problems({"enum": ["a"]}, "y" * 1000)
    assert message == "'" + "y" * 60 + "...' is not one of 'a'"
    [(_, message)] = problems({"const": "x"}, list(range(1000)))
    assert message == "must be 'x'"
    [(_, message)] = problems({"enum": [1]}, list(range(1000)))
    assert len(message) < 100
    assert problems({"required": ["it's"]}, {}) == [
        ("(root)", "missing required property 'it\\'s'")
    ]


def test_nested_paths() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["name"],
                },
            }
        },
    }
    instance = {"items": [{"name": 1}, {"tags": ["a", 2]}, {"name": "ok"}]}
    assert problems(schema, instance) == [
        ("items[0].name", "expected string, got integer"),
        ("items[1]", "missing required property 'name'"),
        ("items[1].tags[1]", "expected string, got integer"),
    ]
    paths = [p.path for p in Validator(schema).validate(instance)]
    assert paths == [("items", 0, "name"), ("items", 1), ("items", 1, "tags", 1)]


def test_prefix_items_additional_and_pattern_properties() -> None:
    pair = {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": {"type": "null"},
    }
    assert problems(pair, ["a", "b", None, 0]) == [
        ("[1]", "expected integer, got string"),
        ("[3]", "expected null, got integer"),
    ]
    mapping = {
        "type": "object",
        "patternProperties": {"^x_": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    }
    assert problems(mapping, {"x_a": "1", "b": 2, "x_c": 3, "d": "ok"}) == [
        ("x_a", "expected integer, got string"),
        ("b", "expected string, got integer"),
    ]
    closed = {
        "properties": {"a": {}},
        "patternProperties": {"^x": {}},
        "additionalProperties": False,
    }
    assert problems(closed, {"a": 1, "xy": 2, "y": 3}) == [("(root)", "unexpected property 'y'")]
    assert problems({"properties": {"a": False}}, {"a": 1}) == [("a", "no value is allowed here")]


def test_any_of_reports_the_alternative_of_the_right_type() -> None:
    optional = {"anyOf": [{"type": "string", "minLength": 3}, {"type": "null"}]}
    assert problems(optional, "ab") == [("(root)", "must have at least 3 characters")]
    assert Validator(optional).is_valid(None)
    model = {
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
        },
        "anyOf": [{"$ref": "#/$defs/Point", "description": "a point"}, {"type": "null"}],
    }
    assert problems(model, {"x": "1"}) == [("x", "expected number, got string")]
    assert problems(model, 3) == [
        ("(root)", "does not match any allowed type (expected object or null)")
    ]
    assert problems({"allOf": [{"minimum": 2}, {"multipleOf": 2}]}, 1) == [
        ("(root)", "must be >= 2"),
        ("(root)", "must be a multiple of 2"),
    ]


def test_recursive_schema_through_ref() -> None:
    tree = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["value"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/Node",
    }
    validator = Validator(tree)
    good = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert validator.validate(good) == []
    bad = {"value": 1, "children": [{"value": 2, "children": [{"value": "3", "x": 0}]}]}
    assert [(p.location(), p.message) for p in validator.validate(bad)] == [
        ("children[0].children[0].value", "expected integer, got string"),
        ("children[0].children[0]", "unexpected property 'x'"),
    ]
    root_ref = {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}}
    assert Validator(root_ref).is_valid([1, [2, [3, []]]])
    assert not Validator(root_ref).is_valid([1, [2, ["3"]]])


def test_deep_nesting_is_a_problem_not_a_crash() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    validator = Validator(
        {"$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}}, "$ref": "#/$defs/L"}
    )
    assert validator.validate(deep) == [Problem((), "value is nested too deeply")]
    assert validator.is_valid(deep) is False
    assert validator.coerce(deep) is deep


def test_an_array_of_bad_items_is_checked_with_bounded_work() -> None:
    validator = Validator({"type": "array", "items": {"type": "integer"}})
    problems = validator.validate(["a"] * 50_000)
    assert len(problems) == MAX_ITEM_PROBLEMS + 1
    assert problems[-1].message == "(items after this one were not checked)"
    assert not validator.is_valid(["a"] * 50_000)


def test_json_pointer_refs() -> None:
    schema = {"properties": {"a/b": {"type": "integer"}, "c": {"$ref": "#/properties/a~1b"}}}
    assert problems(schema, {"c": "x"}) == [("c", "expected integer, got string")]
    assert Validator({"definitions": {"X": {"type": "null"}}, "$ref": "#/definitions/X"}).is_valid(
        None
    )


def test_json_semantics_of_equality_and_types() -> None:
    assert Validator({"const": 1}).is_valid(1.0)
    assert not Validator({"const": 1}).is_valid(True)
    assert not Validator({"enum": [False]}).is_valid(0)
    assert Validator({"const": [1, {"a": 2}]}).is_valid([1.0, {"a": 2.0}])
    assert not Validator({"const": [1]}).is_valid([True])
    assert not Validator({"const": [1]}).is_valid((1,))  # only a list is a JSON array
    assert Validator({"uniqueItems": True}).is_valid([1, True, 0, False, "1", [1], [True]])
    assert not Validator({"uniqueItems": True}).is_valid([[1, 2], [1, 2.0]])
    assert Validator({"type": "integer"}).is_valid(10**30)
    assert Validator({"type": "integer"}).is_valid(1e300)
    assert not Validator({"type": "integer"}).is_valid(float("inf"))
    assert not Validator({"type": "number"}).is_valid({1})
    assert Validator({"minLength": 2, "maxLength": 2}).is_valid("😀é")  # code points


def test_annotations_and_unknown_keys_are_ignored() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.com/tool",
        "$comment": "c",
        "title": "T",
        "type": "string",
        "format": "email",
        "deprecated": True,
        "readOnly": False,
        "writeOnly": False,
        "examples": ["a"],
        "contentMediaType": "text/plain",
        "x-vendor": {"type": "integer"},
    }
    assert Validator(schema).is_valid("not an email")


def test_unsupported_keywords_fall_back_to_jsonschema() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "if": {"required": ["a"]},
        "then": {"required": ["b"]},
        "additionalProperties": False,
    }
    validator = Validator(schema)
    assert validator.is_valid({"a": 1, "b": 2}) is False  # b is not a declared property
    assert [(p.location(), p.message) for p in validator.validate({"a": "1", "c": 2})] == [
        ("a", "expected integer, got string"),
        ("(root)", "missing required property 'b'"),  # our words for jsonschema's error
        ("(root)", "unexpected property 'c'"),
    ]
    assert validator.validate({}) == [Problem((), "missing required property 'a'")]
    conditional = {"if": {"properties": {"k": {"const": "n"}}}, "then": {"required": ["n"]}}
    assert Validator(conditional).validate({"k": "n"}) == [
        Problem((), "missing required property 'n'")
    ]
    assert Validator(conditional).is_valid({"k": "m"})
    remote = Validator({"properties": {"a": {"$ref": "https://example.com/a.json"}}})
    assert remote.validate({"a": 1}) == [
        Problem((), "value could not be checked against the schema")
    ]


@pytest.mark.parametrize(
    ("schema", "instance", "message"),
    [
        ({"type": ["string", "null"]}, 1, "expected string or null, got integer"),
        ({"enum": ["c", "f"]}, "x", "'x' is not one of 'c', 'f'"),
        ({"const": 1}, True, "must be 1"),
        ({"exclusiveMaximum": 10}, 10, "must be < 10"),
        ({"multipleOf": 5}, 7, "must be a multiple of 5"),
        ({"maxLength": 2}, "abc", "must have at most 2 characters"),
        ({"pattern": "^a"}, "b", "must match pattern '^a'"),
        ({"minItems": 1}, [], "must have at least 1 item"),
        ({"prefixItems": [{}], "items": False}, [1, 2], "must have at most 1 item"),
        ({"uniqueItems": True}, [1, 1], "items must be unique"),
        ({"contains": {"type": "null"}, "minContains": 2}, [None], "must contain 2 matching items"),
        ({"maxProperties": 0}, {"a": 1}, "must have at most 0 properties"),
        (
            {"properties": {"a": {}}, "additionalProperties": False},
            {"a": 1, "b": 2},
            "unexpected property 'b'",
        ),
        ({"required": ["a", "b"]}, {}, "missing required property 'a'"),
        ({"not": {}}, 1, "value is not allowed"),
        (False, 1, "no value is allowed here"),
        ({"anyOf": [{"type": "null"}]}, 1, "does not match any of the allowed alternatives"),
        ({"oneOf": [{}, {}]}, 1, "matches more than one alternative"),
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "missing property 'b', required with 'a'"),
        (
            {"dependentSchemas": {"a": {"required": ["b"]}}},
            {"a": 1},
            "missing required property 'b'",
        ),
        (
            {"unevaluatedProperties": False},  # jsonschema's own words, cut
            {"b" * 200: 1},
            "Unevaluated properties are not allowed ('" + "b" * 56 + "...",
        ),
    ],
)
def test_fallback_messages(schema: Any, instance: Any, message: str) -> None:
    """Through jsonschema, the messages are ours wherever we have one."""
    found = problems({"if": True, "then": schema}, instance)
    assert found[0] == ("(root)", message)


def test_import_stays_light() -> None:
    code = (
        "import sys; from toolreg.validation.validator import Validator; "
        "schema = {'type': 'object', 'properties': {'a': {'anyOf': [{'$ref': '#'}]}}}; "
        "Validator(schema).validate({'a': 1}); "
        "assert 'jsonschema' not in sys.modules, 'jsonschema imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integr"},
        {"pattern": "("},
        {"$ref": "#/$defs/Missing"},
        {"minimum": "1"},
        {"multipleOf": 0},
        {"required": "a"},
        {"enum": 3},
        {"anyOf": []},
        {"properties": {"a": 3}},
    ],
)
def test_invalid_schemas_fail_loud(schema: Any) -> None:
    with pytest.raises(ValueError, match=r"\w"):
        Validator(schema)


def test_schema_is_copied() -> None:
    schema = copy.deepcopy(WEATHER)
    validator = Validator(schema)
    schema["properties"]["city"]["type"] = "integer"
    assert validator.is_valid({"city": "x"})


# --- coerce -----------------------------------------------------------------------------

INT, NUM, BOOL = {"type": "integer"}, {"type": "number"}, {"type": "boolean"}


@pytest.mark.parametrize(
    ("schema", "value", "result"),
    [
        (INT, "42", 42),
        (INT, " 42 ", 42),
        (INT, "-3", -3),
        (INT, "007", 7),
        (NUM, "3.5", 3.5),
        (NUM, "2", 2),
        (NUM, "-0.25", -0.25),
        (NUM, "1e-3", 0.001),
        (NUM, "1E3", 1000.0),
        (BOOL, "true", True),
        (BOOL, "FALSE", False),
        (BOOL, " True ", True),
        ({"type": "array", "items": INT}, '[1, "2"]', [1, 2]),
        ({"type": "object", "properties": {"a": INT}}, '{"a": "5"}', {"a": 5}),
        ({"type": ["integer", "null"]}, "5", 5),
        ({"type": ["boolean", "integer"]}, "1", 1),
        ({"anyOf": [INT, {"type": "null"}]}, "5", 5),
        ({"anyOf": [{"type": "array", "items": NUM}, {"type": "null"}]}, '["1.5"]', [1.5]),
        ({"oneOf": [BOOL, INT]}, "true", True),
        ({"allOf": [INT]}, "9", 9),
        ({"prefixItems": [INT, BOOL], "items": NUM}, ["1", "true", "2.5"], [1, True, 2.5]),
        ({"additionalProperties": INT}, {"a": "1"}, {"a": 1}),
        ({"patternProperties": {"^n": INT}}, {"n1": "1", "s": "1"}, {"n1": 1, "s": "1"}),
        ({"$defs": {"I": INT}, "properties": {"a": {"$ref": "#/$defs/I"}}}, {"a": "3"}, {"a": 3}),
    ],
)
def test_coerce_rules(schema: Any, value: Any, result: Any) -> None:
    validator = Validator(schema)
    coerced = validator.coerce(value)
    assert coerced == result
    assert type(coerced) is type(result)
    assert validator.is_valid(coerced)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (INT, "4.5"),
        (INT, "4.0"),
        (INT, "1e3"),
        (INT, "0x10"),
        (INT, "1_000"),
        (INT, "+3"),
        (INT, "٣"),
        (INT, ""),
        (INT, "1" * 101),
        (NUM, "nan"),
        (NUM, "inf"),
        (NUM, "Infinity"),
        (NUM, "-Infinity"),
        (NUM, ".5"),
        (NUM, "5."),
        (NUM, "1e999"),
        (BOOL, "1"),
        (BOOL, "yes"),
        ({"type": "null"}, "null"),
        ({"type": ["string", "integer"], "maxLength": 1}, "42"),
        ({"type": "array"}, '{"a": 1}'),
        ({"type": "array"}, "[NaN]"),
        ({"type": "array"}, "[1,"),
        ({"type": "object"}, "[1]"),
        ({"enum": [1, 2]}, "1"),
        (INT, 4.5),
        (INT, True),
    ],
)
def test_coerce_leaves_other_values_alone(schema: Any, value: Any) -> None:
    assert Validator(schema).coerce(value) is value


def test_coerce_returns_new_values_and_never_mutates() -> None:
    schema = {
        "type": "object",
        "properties": {"n": INT, "xs": {"type": "array", "items": INT}, "s": {"type": "string"}},
    }
    value = {"n": "1", "xs": ["2", 3], "s": "4"}
    snapshot = copy.deepcopy(value)
    assert Validator(schema).coerce(value) == {"n": 1, "xs": [2, 3], "s": "4"}
    assert value == snapshot
    valid = {"n": 1, "xs": [], "s": "4"}
    assert Validator(schema).coerce(valid) is valid


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(
        ["1", " -2 ", "2.5", "1e3", "true", "False", "[1]", '{"n": "3"}', "[", "nan"]
    ),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["n", "xs", "b", "o"]), inner, max_size=4)
    ),
    max_leaves=10,
)
COERCE_SCHEMA = {
    "$defs": {"Num": {"type": ["number", "null"]}},
    "type": "object",
    "properties": {
        "n": INT,
        "xs": {"type": "array", "items": {"$ref": "#/$defs/Num"}},
        "b": {"anyOf": [BOOL, {"type": "array", "items": INT}]},
        "o": {"$ref": "#"},
    },
    "additionalProperties": {"oneOf": [INT, BOOL]},
}


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=json_values)
def test_coerce_never_raises_never_mutates_and_keeps_valid_values(value: Any) -> None:
    validator = Validator(COERCE_SCHEMA)
    snapshot = json.dumps(value, sort_keys=True)
    coerced = validator.coerce(value)
    assert json.dumps(value, sort_keys=True) == snapshot
    if validator.is_valid(value):
        assert coerced is value
    json.dumps(coerced, allow_nan=False)  # still plain JSON: no NaN, no infinity, no set


def test_coerce_survives_hostile_input() -> None:
    validator = Validator({"type": "array", "items": {"type": "array"}})
    assert validator.coerce(["[" * 100_000]) == ["[" * 100_000]
    odd = {"type": "object", "properties": {"a": INT}}
    assert Validator(odd).coerce({"a": {1, 2}}) == {"a": {1, 2}}
    loop = Validator({"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}, "$ref": "#/$defs/A"})
    assert loop.coerce("1") == "1"


def test_a_ref_loop_in_a_schema_jsonschema_checks_is_a_failed_check_not_a_crash() -> None:
    # `if` sends the schema to jsonschema; `$ref: "#"` then recurses until it gives up
    # (a RecursionError, or a panic of its Rust-backed maps, which is a BaseException)
    validator = Validator({"if": True, "$ref": "#"})
    assert validator.validate({"a": 1}) == [
        Problem((), "value could not be checked against the schema")
    ]
    assert validator.is_valid({"a": 1}) is False
