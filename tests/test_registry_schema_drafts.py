"""`register_schema` with an older JSON Schema draft: taken, rewritten as 2020-12, validated
as its author meant, exported to every provider; `Tool.schema_changes` and `toolreg lint`
say what changed; what cannot be rewritten is a `ToolDefinitionError` naming the tool and
the keyword."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.cli.lint import lint_registry

DRAFT4_PAGE = {  # OpenAPI 3.0 and pydantic v1 wrote draft 4's boolean bounds
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "object",
    "properties": {
        "page": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
        "size": {"type": "integer", "maximum": 100, "exclusiveMaximum": False},
    },
    "required": ["page"],
}

DRAFT7_SEARCH = {  # as zod-to-json-schema writes it
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"sort": {"type": "string", "enum": ["stars", "updated"]}},
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "sort": {"$ref": "#/definitions/sort", "description": "How to sort the results."},
        "order": {"type": "string", "enum": ["asc", "desc"]},
        "range": {"type": "array", "items": [{"type": "integer"}, {"type": "integer"}]},
    },
    "dependencies": {"order": ["sort"]},
    "required": ["query"],
    "additionalProperties": False,
}


def echo(**arguments: Any) -> dict[str, Any]:
    return arguments


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register_schema("list_items", DRAFT4_PAGE, echo, description="List items, a page.")
    reg.register_schema("search", DRAFT7_SEARCH, echo, description="Search the repositories.")
    return reg


def test_a_draft_4_boolean_bound_is_taken_and_enforced(registry: ToolRegistry) -> None:
    tool = registry["list_items"]
    assert tool.parameters["properties"]["page"] == {"type": "integer", "exclusiveMinimum": 0}
    assert tool.parameters["properties"]["size"] == {"type": "integer", "maximum": 100}
    assert tool.schema_changes == (
        "#: $schema: draft-04 -> 2020-12",
        "#/properties/page: exclusiveMinimum: true with minimum: 0 -> exclusiveMinimum: 0",
        "#/properties/size: exclusiveMaximum: false has no effect: dropped",
    )
    assert registry.dispatch_tool("list_items", {"page": 1}).ok
    refused = registry.dispatch_tool("list_items", {"page": 0})
    assert refused.error_kind == "invalid_arguments"
    assert "must be > 0" in refused.content
    assert registry.dispatch_tool("list_items", {"page": 1, "size": 100}).ok


def test_a_draft_7_schema_is_validated_as_its_author_meant(registry: ToolRegistry) -> None:
    tool = registry["search"]
    assert tool.parameters["$defs"] == {"sort": {"type": "string", "enum": ["stars", "updated"]}}
    assert tool.parameters["properties"]["sort"]["$ref"] == "#/$defs/sort"
    assert tool.parameters["dependentRequired"] == {"order": ["sort"]}
    ok = registry.dispatch_tool("search", {"query": "x", "sort": "stars", "range": [1, 2]})
    assert ok.ok, ok.content
    for wrong, said in [
        ({"query": "x", "sort": "size"}, "'size' is not one of 'stars', 'updated'"),
        ({"query": "x", "order": "asc"}, "missing property 'sort', required with 'order'"),
        ({"query": "x", "range": ["a"]}, "expected integer, got string"),
    ]:
        result = registry.dispatch_tool("search", wrong)
        assert result.error_kind == "invalid_arguments"
        assert said in result.content


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "gemini", "mcp"])
def test_every_format_exports_the_rewritten_schema(registry: ToolRegistry, fmt: str) -> None:
    exported = registry.get_tools(fmt)
    assert len(exported) == 2
    assert "definitions" not in str(exported)  # Gemini inlines $defs only; all read 2020-12


def test_lint_says_what_was_rewritten(registry: ToolRegistry) -> None:
    findings = {(f.tool, f.code): f for f in lint_registry(registry)}
    found = findings[("list_items", "older-draft")]
    assert found.severity == "info"
    assert "exclusiveMinimum: true with minimum: 0 -> exclusiveMinimum: 0" in found.message
    assert ("search", "older-draft") in findings


def test_a_schema_of_2020_12_has_no_changes_to_tell() -> None:
    reg = ToolRegistry()
    tool = reg.register_schema("ok", {"type": "object", "properties": {}}, echo)
    assert tool.schema_changes == ()
    assert not [f for f in lint_registry(reg) if f.code == "older-draft"]


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "required": True}}},
            "tool 'old' uses 'required' at #/properties/a, which toolreg cannot rewrite as "
            "JSON Schema 2020-12: a boolean required is draft 3's",
        ),
        (
            {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"},
            "tool 'old' uses '$schema' at #, which toolreg cannot rewrite",
        ),
    ],
)
def test_what_cannot_be_rewritten_is_refused_naming_tool_and_keyword(
    schema: dict[str, Any], said: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        ToolRegistry().register_schema("old", schema, echo)
    assert said in str(caught.value)
    assert "JSON Schema 2020-12" in str(caught.value)


def test_the_given_schema_is_left_as_it_was() -> None:
    import copy

    given = copy.deepcopy(DRAFT7_SEARCH)
    ToolRegistry().register_schema("search", given, echo)
    assert given == DRAFT7_SEARCH
