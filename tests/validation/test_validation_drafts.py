"""Older JSON Schema drafts (4, 6, 7, 2019-09) rewritten as 2020-12 (`normalize_schema`):
each rule, what cannot be rewritten, and property tests that a rewritten schema accepts and
refuses exactly what the original does under jsonschema's validator for its draft."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from toolreg.validation import Validator
from toolreg.validation.drafts import LATEST, DraftError, normalize_schema
from toolreg.validation.metaschema import conforms
from toolreg.validation.refs import RefError, check_refs

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT6 = "http://json-schema.org/draft-06/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2019 = "https://json-schema.org/draft/2019-09/schema"
CORPUS = Path(__file__).parents[2] / "benchmarks" / "data" / "search_corpus.json"


# -- the rules, one by one ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected", "changes"),
    [
        pytest.param(
            {"minimum": 0, "exclusiveMinimum": True, "maximum": 9, "exclusiveMaximum": False},
            {"exclusiveMinimum": 0, "maximum": 9},
            [
                "#: exclusiveMinimum: true with minimum: 0 -> exclusiveMinimum: 0",
                "#: exclusiveMaximum: false has no effect: dropped",
            ],
            id="boolean bounds",
        ),
        pytest.param(
            {"exclusiveMaximum": True},
            {},
            ["#: exclusiveMaximum: true without maximum has no effect: dropped"],
            id="a boolean bound without its bound",
        ),
        pytest.param(
            {"definitions": {"A": {"type": "string"}}, "$ref": "#/definitions/A"},
            {"$defs": {"A": {"type": "string"}}, "$ref": "#/$defs/A"},
            [
                "#: definitions -> $defs",
                "1 $ref(s) follow their targets: #/definitions/A -> #/$defs/A",
            ],
            id="definitions",
        ),
        pytest.param(
            {"dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
            {"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}},
            ["#: dependencies -> dependentRequired (a) and dependentSchemas (c)"],
            id="dependencies",
        ),
        pytest.param(
            {"items": [{"type": "string"}, True], "additionalItems": {"type": "integer"}},
            {"prefixItems": [{"type": "string"}, True], "items": {"type": "integer"}},
            ["#: items: [...] -> prefixItems, additionalItems -> items"],
            id="tuple items",
        ),
        pytest.param(
            {"items": {"type": "string"}, "additionalItems": False},
            {"items": {"type": "string"}},
            ["#: additionalItems without an items array has no effect: dropped"],
            id="additionalItems beside one items schema",
        ),
        pytest.param(
            {"id": "https://example.com/s.json", "properties": {"a": {"id": "#a"}}},
            {"$id": "https://example.com/s.json", "properties": {"a": {"id": "#a"}}},
            ["#: id -> $id"],
            id="a root id; below the root, id is not a keyword after draft 4",
        ),
        pytest.param(
            {"properties": {"a": {"$id": "#a"}}},
            {"properties": {"a": {"$anchor": "a"}}},
            ["#/properties/a: $id: '#a' -> $anchor: 'a'"],
            id="a fragment $id",
        ),
        pytest.param(
            {"$id": "https://x/s", "properties": {"a": {"$ref": "https://x/s#/definitions/A"}}},
            {"$id": "https://x/s", "properties": {"a": {"$ref": "#/definitions/A"}}},
            ["1 $ref(s) follow their targets: https://x/s#/definitions/A -> #/definitions/A"],
            id="a $ref by the root's own $id",
        ),
        pytest.param(
            {"anyOf": [{"type": "null"}, {"$recursiveRef": "#"}], "$recursiveAnchor": True},
            {"anyOf": [{"type": "null"}, {"$ref": "#"}]},
            [
                "#: $recursiveAnchor: True changes nothing here: dropped",
                "#/anyOf/1: $recursiveRef: '#' -> $ref: '#'",
            ],
            id="2019-09 recursion",
        ),
    ],
)
def test_each_rule(given: dict[str, Any], expected: dict[str, Any], changes: list[str]) -> None:
    before = json.dumps(given)
    normalized = normalize_schema(given)
    assert normalized.schema == expected
    assert sorted(normalized.changes) == sorted(changes)
    assert json.dumps(given) == before  # the given schema is left as it was
    assert normalized.draft is None


def test_a_draft_named_by_schema_drops_what_it_ignores_beside_a_ref() -> None:
    given = {
        "$schema": DRAFT7,
        "definitions": {"Color": {"enum": ["red", "blue"]}},
        "type": "object",
        "properties": {
            "color": {"$ref": "#/definitions/Color", "type": "integer", "description": "kept"}
        },
    }
    normalized = normalize_schema(given)
    assert normalized.draft == "draft-07"
    assert normalized.schema == {
        "$schema": LATEST,
        "$defs": {"Color": {"enum": ["red", "blue"]}},
        "type": "object",
        "properties": {"color": {"$ref": "#/$defs/Color", "description": "kept"}},
    }
    assert "#/properties/color: type beside $ref: ignored by draft-07, dropped" in (
        normalized.changes
    )
    assert "#: $schema: draft-07 -> 2020-12" in normalized.changes
    # without a $schema, 2020-12's rule: what is beside a $ref applies too
    unnamed = normalize_schema({k: v for k, v in given.items() if k != "$schema"})
    assert unnamed.schema["properties"]["color"]["type"] == "integer"


def test_draft_4_id_below_the_root_and_its_anchors() -> None:
    given = {
        "$schema": DRAFT4,
        "definitions": {"A": {"id": "#a", "type": "string"}},
        "properties": {"a": {"$ref": "#a"}, "id": {"type": "string"}},
    }
    schema = normalize_schema(given).schema
    assert schema["$defs"]["A"] == {"$anchor": "a", "type": "string"}
    assert schema["properties"] == {"a": {"$ref": "#a"}, "id": {"type": "string"}}
    assert jsonschema.Draft202012Validator(schema).is_valid({"a": "x"})
    assert not jsonschema.Draft202012Validator(schema).is_valid({"a": 1})


def test_refs_follow_every_moved_subschema() -> None:
    given = {
        "$schema": DRAFT7,
        "type": "object",
        "dependencies": {"a": {"properties": {"b": {"type": "integer"}}}},
        "properties": {
            "pair": {"items": [{"type": "string"}], "additionalItems": {"type": "boolean"}},
            "first": {"$ref": "#/properties/pair/items/0"},
            "rest": {"$ref": "#/properties/pair/additionalItems"},
            "b": {"$ref": "#/dependencies/a/properties/b"},
        },
    }
    schema = normalize_schema(given).schema
    assert [schema["properties"][k]["$ref"] for k in ("first", "rest", "b")] == [
        "#/properties/pair/prefixItems/0",
        "#/properties/pair/items",
        "#/dependentSchemas/a/properties/b",
    ]
    validator = Validator(schema)
    assert validator.is_valid({"first": "x", "rest": True, "b": 1})
    assert not validator.is_valid({"first": 1})
    assert not validator.is_valid({"rest": "no"})


def test_a_schema_of_2020_12_is_returned_as_it_is() -> None:
    given = {
        "type": "object",
        "$defs": {"A": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/A", "minimum": 1}, "id": {"type": "string"}},
        "dependentRequired": {"a": ["id"]},
    }
    normalized = normalize_schema(given)
    assert normalized.schema is given
    assert normalized.changes == ()


@pytest.mark.slow
def test_the_real_corpus_is_2020_12_already() -> None:
    """524 real tool definitions (MCP servers, BFCL, OpenAPI routes): nothing to rewrite."""
    tools = json.loads(CORPUS.read_text(encoding="utf-8"))["tools"]
    for tool in tools:
        assert normalize_schema(tool["parameters"]).changes == (), tool["name"]


@pytest.mark.parametrize(
    ("given", "keyword", "where", "reason"),
    [
        ({"$schema": "http://json-schema.org/draft-03/schema#"}, "$schema", "#", "draft 3"),
        ({"properties": {"a": {"required": True}}}, "required", "#/properties/a", "draft 3"),
        (
            {"dependencies": {"a": "b"}},
            "dependencies",
            "#/dependencies/a",
            "neither a list of names nor a schema",
        ),
        (
            {"$schema": DRAFT4, "properties": {"a": {"id": "other.json", "type": "string"}}},
            "id",
            "#/properties/a",
            "embedded schema resource",
        ),
        (
            {"definitions": {"A": {}}, "$defs": {"A": {}}},
            "definitions",
            "#",
            "A is in both definitions and $defs",
        ),
        (
            {"items": [{}], "prefixItems": [{}]},
            "prefixItems",
            "#",
            "given twice",
        ),
        (
            {
                "$schema": DRAFT7,
                "definitions": {"A": {}},
                "properties": {
                    "a": {"$ref": "#/definitions/A", "items": {}},
                    "b": {"$ref": "#/properties/a/items"},
                },
            },
            "$ref",
            "#/properties/b",
            "points into items, which draft-07 ignores beside $ref",
        ),
        ({"$recursiveRef": "#/$defs/a"}, "$recursiveRef", "#", "only $recursiveRef: '#'"),
        ({"$recursiveRef": "#", "$ref": "#/$defs/a", "$defs": {"a": {}}}, "$ref", "#", "twice"),
        ({"properties": {"a": {"$id": "#1a"}}}, "$id", "#/properties/a", "not a name"),
    ],
)
def test_what_cannot_be_rewritten_is_refused_by_keyword_and_place(
    given: dict[str, Any], keyword: str, where: str, reason: str
) -> None:
    with pytest.raises(DraftError) as caught:
        normalize_schema(given)
    assert (caught.value.keyword, caught.value.where) == (keyword, where)
    assert reason in caught.value.reason


# -- property tests: the same instances accepted and refused --------------------------------

KEYS = ["a", "b", "c"]
numbers = st.sampled_from([-1, 0, 1, 2, 3, 0.5, 2.5, -1.5])
# draft 4's integer is not 2020-12's: 1.0 is one from draft 6 on (documented); not generated
draft4_scalars = st.one_of(
    st.none(), st.booleans(), numbers, st.sampled_from(["", "a", "ab", "b1", "abc"])
)
scalars = st.one_of(draft4_scalars, st.sampled_from([1.0, 2.0]))


def instances(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
        ),
        max_leaves=8,
    )


def leaves(draft: int) -> st.SearchStrategy[Any]:
    types = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
    options: list[st.SearchStrategy[Any]] = [
        types.map(lambda t: {"type": t}),
        st.lists(types, min_size=1, max_size=3, unique=True).map(lambda t: {"type": t}),
        st.lists(scalars if draft > 4 else draft4_scalars, min_size=1, max_size=3).map(
            lambda v: {"enum": v}
        ),
        st.sampled_from(["#/definitions/A", "#/definitions/B"]).map(lambda r: {"$ref": r}),
        st.fixed_dictionaries(
            {},
            optional={
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "pattern": st.sampled_from(["^a", "b", "[0-9]"]),
                "multipleOf": st.sampled_from([1, 2, 0.5]),
            },
        ),
    ]
    if draft == 4:
        bounds = st.fixed_dictionaries(
            {},
            optional={
                "minimum": numbers,
                "maximum": numbers,
                "exclusiveMinimum": st.booleans(),
                "exclusiveMaximum": st.booleans(),
            },
        )
    else:
        bounds = st.fixed_dictionaries(
            {},
            optional={
                "minimum": numbers,
                "maximum": numbers,
                "exclusiveMinimum": numbers,
                "exclusiveMaximum": numbers,
            },
        )
        options += [st.booleans(), scalars.map(lambda v: {"const": v})]
    if draft == 2019:
        options.append(st.just({"$recursiveRef": "#"}))
    return st.one_of(bounds, *options)


def containers(draft: int) -> Any:
    def build(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        names = st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True)
        objects: dict[str, st.SearchStrategy[Any]] = {
            "type": st.just("object"),
            "properties": st.dictionaries(st.sampled_from(KEYS), inner, max_size=2),
            "required": names,
            "additionalProperties": inner if draft > 4 else st.one_of(st.booleans(), inner),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "b"]), inner, max_size=1),
            "minProperties": st.integers(0, 2),
        }
        if draft == 2019:
            objects["dependentRequired"] = st.dictionaries(st.sampled_from(KEYS), names, max_size=2)
            objects["dependentSchemas"] = st.dictionaries(st.sampled_from(KEYS), inner, max_size=1)
        else:
            objects["dependencies"] = st.dictionaries(
                st.sampled_from(KEYS), st.one_of(names, inner), max_size=2
            )
        arrays: dict[str, st.SearchStrategy[Any]] = {
            "type": st.just("array"),
            "items": st.one_of(inner, st.lists(inner, min_size=1, max_size=2)),
            "additionalItems": inner if draft > 4 else st.one_of(st.booleans(), inner),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 3),
            "uniqueItems": st.booleans(),
        }
        if draft > 4:
            arrays["contains"] = inner
            objects["propertyNames"] = st.sampled_from([{"maxLength": 1}, {"enum": ["a", "b"]}])
        combined = [
            st.lists(inner, min_size=1, max_size=2).map(lambda s: {"anyOf": s}),
            st.lists(inner, min_size=1, max_size=2).map(lambda s: {"oneOf": s}),
            st.lists(inner, min_size=1, max_size=2).map(lambda s: {"allOf": s}),
            inner.map(lambda s: {"not": s}),
            # a $ref with siblings: drafts 4-7 ignore them, 2019-09 applies them
            st.tuples(st.sampled_from(["#/definitions/A", "#/definitions/B"]), inner).map(
                lambda p: {**(p[1] if isinstance(p[1], dict) else {}), "$ref": p[0]}
            ),
        ]
        if draft == 7:
            combined.append(
                st.fixed_dictionaries({"if": inner}, optional={"then": inner, "else": inner})
            )
        return st.one_of(
            st.fixed_dictionaries({}, optional=objects),
            st.fixed_dictionaries({}, optional=arrays),
            *combined,
        )

    return build


def documents(draft: int, uri: str) -> st.SearchStrategy[tuple[dict[str, Any], Any]]:
    schemas = st.recursive(leaves(draft), containers(draft), max_leaves=6)
    defs = st.fixed_dictionaries({"A": schemas, "B": schemas})
    root = st.tuples(defs, schemas).map(
        lambda p: {
            **(p[1] if isinstance(p[1], dict) else {"allOf": [p[1]]}),
            "$schema": uri,
            "definitions": p[0],
        }
    )
    leaf = draft4_scalars if draft == 4 else scalars
    return st.tuples(root, instances(leaf))


VALIDATORS = {
    4: (jsonschema.Draft4Validator, DRAFT4),
    6: (jsonschema.Draft6Validator, DRAFT6),
    7: (jsonschema.Draft7Validator, DRAFT7),
    2019: (jsonschema.Draft201909Validator, DRAFT2019),
}


def _jsonschema_crash(schema: dict[str, Any]) -> bool:
    """jsonschema's legacy `additionalItems` takes len() of a boolean `items` (a crash of
    its own, not a meaning): such schemas are left out."""
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("items"), bool) and "additionalItems" in node:
                return True
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return False


def check_same_verdicts(draft: int, case: tuple[dict[str, Any], Any]) -> None:
    schema, instance = case
    cls, _ = VALIDATORS[draft]
    if _jsonschema_crash(schema):
        reject()
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        reject()  # not a schema of that draft
    try:
        normalized = normalize_schema(schema)
    except DraftError as exc:  # only: a $ref into what the draft ignores beside a $ref
        refused = exc
    else:
        refused = None
    if refused is not None:
        assert refused.keyword == "$ref", refused
        reject()
    rewritten = normalized.schema
    assert normalize_schema(rewritten).changes == ()  # once is enough
    try:
        check_refs(rewritten)  # the same $ref loops as the original's
    except RefError:
        reject()  # a value checked against itself for ever: no verdict to compare
    before = cls(schema).is_valid(instance)
    assert conforms(rewritten), rewritten  # valid 2020-12
    assert jsonschema.Draft202012Validator(rewritten).is_valid(instance) == before
    try:
        ours = Validator(rewritten).is_valid(instance)
    except RecursionError:
        return
    assert ours == before


@pytest.mark.slow
@pytest.mark.parametrize("draft", [4, 6, 7, 2019])
def test_a_rewritten_schema_accepts_and_refuses_what_the_original_does(draft: int) -> None:
    @settings(
        max_examples=300,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(documents(draft, VALIDATORS[draft][1]))
    def check(case: tuple[dict[str, Any], Any]) -> None:
        check_same_verdicts(draft, case)

    check()


# -- hostile: any JSON at all -----------------------------------------------------------------

KEYWORDS = [
    *("definitions", "dependencies", "items", "additionalItems", "id", "$id", "$ref"),
    *("exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum", "$recursiveRef"),
    *("$recursiveAnchor", "required", "properties", "prefixItems", "$defs", "allOf", "not"),
    *("$schema", "dependentRequired", "dependentSchemas", "type", "enum"),
]
REFS = ["#", "#/definitions/a", "#/items/0", "#/items/x", "#/dependencies", "#/%7e", "#a", "x#/a"]
anything = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=4),
        st.sampled_from([*REFS, DRAFT4, DRAFT7, DRAFT2019]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from([*KEYWORDS, "a", "0"]), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anything)
def test_any_json_is_rewritten_or_refused_with_a_draft_error_never_a_crash(value: Any) -> None:
    before = json.dumps(value)
    try:
        normalized = normalize_schema(value)
    except DraftError as exc:
        refused: DraftError | None = exc
    else:
        refused = None
    if refused is not None:
        assert refused.keyword
        assert refused.where.startswith("#")
        return
    assert json.dumps(value) == before  # the given value is left as it was
    assert normalize_schema(normalized.schema).changes == ()


def test_a_schema_deeper_than_the_stack_is_refused_not_a_crash() -> None:
    schema: dict[str, Any] = {"definitions": {}}
    for _ in range(5_000):
        schema = {"not": schema}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)  # Python's default: a test run before may have raised it
    try:
        with pytest.raises(DraftError, match="nests too deeply"):
            normalize_schema(schema)
    finally:
        sys.setrecursionlimit(limit)
