"""Strict mode (OpenAI structured outputs): the transform, its errors, and null -> default."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Annotated, Any, Optional

import jsonschema
import pytest
from typing_extensions import NotRequired, TypedDict

from toolreg import Param, ToolDefinitionError, ToolRegistry

NULL = {"type": "null"}


class Filters(TypedDict):
    """Search filters."""

    language: Annotated[str, "ISO code"]
    year: NotRequired[int]


@dataclasses.dataclass
class Page:
    size: int
    cursor: Optional[str] = None
    sort: str = "relevance"


def search(
    query: Annotated[str, Param(description="Words to look for", min_length=1)],
    filters: Filters,
    page: Page,
    limit: Annotated[int, "How many results"] = 10,
    exact: bool = False,
    note: Optional[str] = None,
) -> dict[str, Any]:
    """Search the index."""
    return {
        "query": query,
        "filters": filters,
        "page": dataclasses.asdict(page),
        "limit": limit,
        "exact": exact,
        "note": note,
    }


@pytest.fixture
def reg() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register_tool(search)
    return registry


def _objects(node: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema in `node`, with where it is."""
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            yield path, node
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                yield from _objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _objects(item, f"{path}[{i}]")


def _accepts_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or NULL in schema.get("anyOf", [])


def _strict_parameters(reg: ToolRegistry, **kwargs: Any) -> dict[str, Any]:
    (entry,) = reg.get_tools("openai", **kwargs)
    assert entry["function"]["strict"] is True
    parameters: dict[str, Any] = entry["function"]["parameters"]
    return parameters


def test_every_object_is_closed_and_lists_every_property(reg: ToolRegistry) -> None:
    parameters = _strict_parameters(reg, strict=True)
    objects = list(_objects(parameters))
    paths = [p for p, _ in objects]
    assert "$" in paths
    assert "$.$defs.Filters" in paths
    assert "$.$defs.Page" in paths
    for path, obj in objects:
        assert obj["additionalProperties"] is False, path
        assert obj["required"] == list(obj["properties"]), path


def test_defaults_become_nullable_and_required_ones_do_not(reg: ToolRegistry) -> None:
    parameters = _strict_parameters(reg, strict=True)
    props = parameters["properties"]
    assert props["query"] == {"type": "string", "description": "Words to look for", "minLength": 1}
    assert props["filters"] == {"$ref": "#/$defs/Filters"}
    assert props["page"] == {"$ref": "#/$defs/Page"}
    for name in ("limit", "exact", "note"):
        assert _accepts_null(props[name]), name
    assert {"type": "integer"} in props["limit"]["anyOf"]
    assert {"type": "boolean"} in props["exact"]["anyOf"]
    # kept, outside the anyOf; strict schemas carry no `default`, so it is said in words
    assert props["limit"]["description"] == (
        "How many results. Default: 10 (send null for the default)."
    )
    assert "default" not in json.dumps(props["limit"]).replace("the default", "")

    filters = parameters["$defs"]["Filters"]
    assert filters["description"] == "Search filters."
    assert filters["properties"]["language"] == {"type": "string", "description": "ISO code"}
    assert _accepts_null(filters["properties"]["year"])  # NotRequired -> nullable
    page = parameters["$defs"]["Page"]
    assert page["properties"]["size"] == {"type": "integer"}
    assert _accepts_null(page["properties"]["cursor"])
    assert _accepts_null(page["properties"]["sort"])


def test_strict_schema_is_valid_json_schema(reg: ToolRegistry) -> None:
    parameters = _strict_parameters(reg, strict=True)
    jsonschema.Draft202012Validator.check_schema(parameters)
    validator = jsonschema.Draft202012Validator(parameters)
    full = {
        "query": "q",
        "filters": {"language": "en", "year": None},
        "page": {"size": 5, "cursor": None, "sort": None},
        "limit": None,
        "exact": None,
        "note": None,
    }
    assert list(validator.iter_errors(full)) == []
    assert list(validator.iter_errors({**full, "surprise": 1}))
    assert list(validator.iter_errors({k: v for k, v in full.items() if k != "limit"}))


def test_the_tool_schema_itself_is_unchanged(reg: ToolRegistry) -> None:
    before = reg["search"].parameters
    reg.get_tools(strict=True)
    assert reg["search"].parameters is before
    assert reg["search"].parameters["required"] == ["query", "filters", "page"]
    assert reg["search"].parameters["properties"]["limit"] == {
        "type": "integer",
        "description": "How many results",
        "default": 10,
    }


def test_per_tool_strict_flag() -> None:
    reg = ToolRegistry()
    reg.register_tool(strict=True)(search)

    @reg.register_tool
    def loose(meta: dict[str, int]) -> None:
        """Open dicts are fine without strict."""

    strict_entry, loose_entry = reg.get_tools()
    assert strict_entry["function"]["strict"] is True
    assert "strict" not in loose_entry["function"]
    required = strict_entry["function"]["parameters"]["required"]
    assert required == ["query", "filters", "page", "limit", "exact", "note"]
    # the export option overrides the flag both ways
    (plain,) = reg.get_tools(names=["search"], strict=False)
    assert "strict" not in plain["function"]
    assert plain["function"]["parameters"] == reg["search"].parameters
    with pytest.raises(ToolDefinitionError):
        reg.get_tools(strict=True)  # `loose` cannot be strict
    (flat,) = reg.get_tools("responses", names=["search"])
    assert flat["strict"] is True


def test_strict_export_matches_per_tool_strict(reg: ToolRegistry) -> None:
    other = ToolRegistry()
    other.register_tool(strict=True)(search)
    assert other.get_tools() == reg.get_tools(strict=True)


# -- schemas that cannot be strict -----------------------------------------------------------


class WithOpenDict(TypedDict):
    labels: dict[str, str]


def open_dict(meta: dict[str, int]) -> None:
    """Open dict."""


def any_value(value: Any) -> None:
    """Any."""


def untyped_list(items: list) -> None:  # type: ignore[type-arg]
    """A bare list."""


def var_keywords(**extra: int) -> None:
    """**kwargs."""


def nested_open_dict(config: WithOpenDict) -> None:
    """A TypedDict with an open dict inside."""


NOT_STRICT: list[tuple[Any, str | None, str]] = [
    (open_dict, "meta", "open object"),
    (any_value, "value", "Any"),
    (untyped_list, "items", "array of Any"),
    (var_keywords, None, "kwargs"),
    (nested_open_dict, None, "$defs.WithOpenDict.properties.labels"),
]


@pytest.mark.parametrize(
    ("fn", "parameter", "why"), NOT_STRICT, ids=[c[0].__name__ for c in NOT_STRICT]
)
def test_cannot_be_strict_at_export(fn: Any, parameter: str | None, why: str) -> None:
    reg = ToolRegistry()
    reg.register_tool(fn)
    reg.get_tools()  # fine without strict
    with pytest.raises(ToolDefinitionError) as info:
        reg.get_tools(strict=True)
    err = info.value
    assert err.function == fn.__name__
    assert err.parameter == parameter
    assert "cannot be strict" in err.problem
    assert why in str(err)
    assert err.fix
    if parameter is not None:
        assert f"parameter '{parameter}'" in str(err)


@pytest.mark.parametrize(
    ("fn", "parameter", "why"), NOT_STRICT, ids=[c[0].__name__ for c in NOT_STRICT]
)
def test_cannot_be_strict_at_registration(fn: Any, parameter: str | None, why: str) -> None:
    reg = ToolRegistry()
    with pytest.raises(ToolDefinitionError) as info:
        reg.register_tool(strict=True)(fn)
    assert info.value.parameter == parameter
    assert why in str(info.value)
    assert len(reg) == 0


# -- dispatch: null means "use the default" --------------------------------------------------


def test_null_for_a_defaulted_parameter_uses_the_default() -> None:
    reg = ToolRegistry()
    seen: list[tuple[int, int]] = []

    @reg.register_tool(strict=True)
    def f(a: int, b: int = 5) -> int:
        seen.append((a, b))
        return a + b

    result = reg.dispatch_tool("f", '{"a": 1, "b": null}')
    assert result.ok, result.content
    assert seen == [(1, 5)]
    assert result.content == "6"
    assert reg.dispatch_tool("f", '{"a": 1, "b": 2}').content == "3"


def test_null_for_a_required_parameter_is_still_an_error() -> None:
    reg = ToolRegistry()

    @reg.register_tool(strict=True)
    def f(a: int, b: int = 5) -> int:
        return a + b

    result = reg.dispatch_tool("f", '{"a": null, "b": 1}')
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert "a" in result.content


def test_strict_call_with_every_key_reaches_the_function(reg: ToolRegistry) -> None:
    arguments = (
        '{"query": "tea", "filters": {"language": "en", "year": null},'
        ' "page": {"size": 3, "cursor": null, "sort": null},'
        ' "limit": null, "exact": true, "note": null}'
    )
    result = reg.dispatch_tool("search", arguments)
    assert result.ok, result.content
    assert result.value == {
        "query": "tea",
        "filters": {"language": "en"},
        "page": {"size": 3, "cursor": None, "sort": "relevance"},
        "limit": 10,
        "exact": True,
        "note": None,
    }


def test_strict_null_for_a_chatglm3_optional_parameter_means_absent() -> None:
    reg = ToolRegistry()

    @reg.register_tool(strict=True)
    def find(city: Annotated[str, "City name", False]) -> str:
        """Find shops in a city."""
        return repr(city)

    params = reg.get_tools()[0]["function"]["parameters"]
    assert params["required"] == ["city"]
    assert {"type": "null"} in params["properties"]["city"]["anyOf"]
    assert reg.dispatch_tool("find", '{"city": null}').content == "None"
    assert reg.dispatch_tool("find", '{"city": "Paris"}').content == "'Paris'"


def test_null_for_an_optional_property_of_an_explicit_schema() -> None:
    reg = ToolRegistry()
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": False,
    }
    reg.register_schema("s", schema, lambda a=3: a, strict=True)
    (entry,) = reg.get_tools()
    assert _accepts_null(entry["function"]["parameters"]["properties"]["a"])
    assert reg.dispatch_tool("s", '{"a": null}').content == "3"
