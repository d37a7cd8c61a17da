"""`$ref`s in an explicit schema: a cycle that would check one value forever, and a `$ref` to
nothing, fail at registration, naming the tool, where the `$ref` is and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.validation import Validator

DEFS_SELF = {"a": {"$ref": "#/$defs/a"}}
CYCLES: dict[str, tuple[dict[str, Any], str]] = {
    "itself": (
        {"properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": DEFS_SELF},
        "#/$defs/a -> #/$defs/a",
    ),
    "through allOf": (
        {
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
        },
        "#/$defs/a -> #/$defs/b -> #/$defs/b/allOf/0 -> #/$defs/a",
    ),
    "the root": ({"allOf": [{"$ref": "#"}]}, "# -> #/allOf/0 -> #"),
    "an alternative": (
        {
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}},
        },
        "#/$defs/a -> #/$defs/a/anyOf/1 -> #/$defs/a",
    ),
    "not": (
        {
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"not": {"$ref": "#/$defs/a"}}},
        },
        "#/$defs/a -> #/$defs/a/not -> #/$defs/a",
    ),
    "a keyword jsonschema checks": (  # `if` is not compiled: jsonschema would recurse
        {"properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"if": {"$ref": "#/$defs/a"}}}},
        "#/$defs/a -> #/$defs/a/if -> #/$defs/a",
    ),
}


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return reg


@pytest.mark.parametrize("case", list(CYCLES))
def test_a_ref_cycle_fails_at_registration(registry: ToolRegistry, case: str) -> None:
    schema, chain = CYCLES[case]
    with pytest.raises(ToolDefinitionError) as raised:
        registry.register_schema("loop", {"type": "object", **schema}, lambda **kw: "ran")
    error = raised.value
    assert f"the parameters schema of tool 'loop' cannot be validated: $ref cycle {chain}" in (
        error.problem
    )
    assert "properties, items" in (error.fix or "")
    assert "loop" not in registry
    assert registry.dispatch_tool("add", {"a": 2, "b": 3}).content == "5"  # the rest works
    assert [t["function"]["name"] for t in registry.get_tools()] == ["add"]
    assert not Validator({"type": "object", **schema}).is_valid({"x": 1})  # no RecursionError


def test_a_ref_back_into_a_value_is_a_tree_not_a_cycle(registry: ToolRegistry) -> None:
    tree = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "kids": {"items": {"$ref": "#/$defs/node"}},
                },
                "additionalProperties": False,
            }
        },
    }
    registry.register_schema("tree", tree, lambda node: node["label"])
    deep: dict[str, Any] = {"label": "leaf"}
    for _ in range(20):
        deep = {"label": "x", "kids": [deep]}
    assert registry.dispatch_tool("tree", {"node": deep}).content == "x"
    bad = registry.dispatch_tool("tree", {"node": {"label": "x", "kids": [{"label": 1}]}})
    assert bad.error_kind == "invalid_arguments"
    assert "node.kids[0].label" in bad.content
    nested: dict[str, Any] = {"label": "leaf"}
    for _ in range(200):  # deeper than max_depth: refused, no RecursionError
        nested = {"label": "x", "kids": [nested]}
    assert registry.dispatch_tool("tree", {"node": nested}).error_kind == "invalid_arguments"


def test_a_ref_to_nothing_is_named_where_it_is(registry: ToolRegistry) -> None:
    schema = {
        "type": "object",
        "properties": {"x": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Gone"}]}},
    }
    with pytest.raises(ToolDefinitionError) as raised:
        registry.register_schema("lookup", schema, lambda **kw: "ran")
    assert "the $ref '#/$defs/Gone' at #/properties/x/anyOf/1/$ref points to nothing" in str(
        raised.value
    )
    assert "#/$defs/Gone" in (raised.value.fix or "")
    assert "lookup" not in registry
