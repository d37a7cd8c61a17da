"""`ToolOptions`: every tool option declared once, checked when made; `OPTIONS`, the `Tool`'s
option attributes and `register_tool`'s typed overload are read from it or held to it."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import Tool, ToolDefinitionError, ToolOptions, ToolRegistry
from toolreg.tool import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {f.name: f for f in dataclasses.fields(ToolOptions)}


def weather(city: str, days: int = 1) -> dict[str, Any]:
    """Get the weather of a city."""
    return {"city": city, "days": days}


class Forecast(TypedDict):
    city: str
    celsius: float


def forecast(city: str) -> Forecast:
    """Forecast for a city."""
    return {"city": city, "celsius": 18.0}


def _overload_keywords() -> dict[str, Any]:
    """The keywords of `ToolRegistry.register_tool`'s typed overload (the one with options),
    with their defaults, read from the source as the type checker reads it."""
    source = (ROOT / "toolreg" / "registry.py").read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.FunctionDef)
            and node.name == "register_tool"
            and any(ast.unparse(d) == "overload" for d in node.decorator_list)
            and node.args.kwonlyargs
        ):
            return {
                a.arg: ast.literal_eval(d)  # a default is a literal: None, False, ()
                for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)
                if d is not None
            }
    raise AssertionError("register_tool has no typed overload with options")


def test_options_is_the_records_fields() -> None:
    assert frozenset(FIELDS) == OPTIONS


def test_the_typed_overload_takes_exactly_the_records_options_with_its_defaults() -> None:
    keywords = _overload_keywords()
    options = {k: v for k, v in keywords.items() if k not in ("name", "description", "replace")}
    assert list(options) == list(FIELDS)
    assert ToolOptions(**options) == ToolOptions()  # the overload's defaults are the record's
    for name, default in options.items():
        held = getattr(ToolOptions(**{name: default}), name)
        assert held == FIELDS[name].default, name


def test_a_tool_has_every_option_as_an_attribute_read_from_its_record() -> None:
    tool_fields = {f.name: f for f in dataclasses.fields(Tool)}
    for name, field in FIELDS.items():
        assert name in tool_fields, f"Tool has no attribute {name}"
        assert not tool_fields[name].init, f"Tool({name}=...) would be a second way to set it"
        assert tool_fields[name].type == field.type, name
    registry = ToolRegistry()
    registry.register_tool(
        read_only=True, timeout=5, tags=["weather"], examples=[{"city": "Paris"}], version=2
    )(weather)
    tool = registry["weather"]
    assert tool.options == ToolOptions(
        read_only=True,
        timeout=5,
        tags=frozenset({"weather"}),
        examples=({"city": "Paris"},),
        version="2",
    )
    for name in FIELDS:
        assert getattr(tool, name) == getattr(tool.options, name), name
    renamed = dataclasses.replace(tool, name="weather_now")  # a view renames: options follow
    assert (renamed.options, renamed.timeout, renamed.tags) == (tool.options, 5, tool.tags)


def test_the_record_checks_itself() -> None:
    with pytest.raises(ToolDefinitionError, match="timeout=0 must be a positive number"):
        ToolOptions(timeout=0)
    with pytest.raises(ToolDefinitionError, match="tags must be a collection of strings"):
        ToolOptions(tags="admin")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="on_worker_lost= applies to a tool run as"):
        ToolOptions(on_worker_lost="fail")
    with pytest.raises(ToolDefinitionError, match="eager=True: a tool that needs confirmation"):
        ToolOptions(eager=True, destructive=True)
    with pytest.raises(ToolDefinitionError, match="output_schema=True is derived"):
        ToolOptions(output_schema=True)  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="output_schema must describe a closed object"):
        ToolOptions(output_schema={"type": "object"})


def test_the_record_holds_each_value_in_one_form() -> None:
    options = ToolOptions(
        tags=["a", "b", "a"],  # type: ignore[arg-type]
        scopes={"orders:read"},  # type: ignore[arg-type]
        input_guardrails=len,  # type: ignore[arg-type]
        allowed_callers=["programmatic"],  # type: ignore[list-item]
        examples=[{"city": "Paris"}],  # type: ignore[arg-type]
        version=3,  # type: ignore[arg-type]
        output_schema={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "additionalProperties": False,
        },
    )
    assert options.tags == frozenset({"a", "b"})
    assert options.scopes == frozenset({"orders:read"})
    assert options.input_guardrails == (len,)
    assert options.allowed_callers == ("programmatic",)
    assert options.examples == ({"city": "Paris"},)
    assert options.version == "3"
    assert options.output_schema is not None
    assert options.output_schema["required"] == ["n"]  # made strict
    assert dataclasses.replace(options) == options  # checking it again changes nothing


def test_a_registration_error_names_the_function() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry().register_tool(retries=-1)(weather)
    assert info.value.function is not None
    assert info.value.function.endswith("weather")
    assert "retries=-1 must be a whole number >= 0" in str(info.value)


def test_output_schema_true_is_derived_from_the_function() -> None:
    registry = ToolRegistry()
    registry.register_tool(output_schema=True)(forecast)
    schema = registry["forecast"].options.output_schema
    assert schema is not None
    assert set(schema["properties"]) == {"city", "celsius"}
    with pytest.raises(ToolDefinitionError, match="open object"):
        registry.register_tool(output_schema=True, name="w")(weather)


def test_examples_must_fit_the_tools_parameters() -> None:
    with pytest.raises(ToolDefinitionError, match="example 1 does not fit the parameters"):
        ToolRegistry().register_tool(examples=[{"days": 2}])(weather)  # no city


_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "strict": st.booleans(),
    "read_only": st.booleans(),
    "requires_confirmation": st.booleans(),
    "timeout": st.floats(min_value=0.001, max_value=1e6) | st.integers(1, 10**6),
    "return_direct": st.booleans(),
    "max_result_chars": st.integers(1, 10**7),
    "max_result_bytes": st.integers(1, 10**9),
    "tags": st.lists(st.text(min_size=1, max_size=5), max_size=4),
    "coerce": st.none() | st.booleans(),
    "title": st.none() | st.text(min_size=1, max_size=10).filter(str.strip),
    "idempotent": st.booleans(),
    "defer_loading": st.booleans(),
    "examples": st.lists(st.builds(lambda c: {"city": c}, st.text(max_size=8)), max_size=3),
    "scopes": st.lists(st.from_regex(r"[a-z:]{1,8}", fullmatch=True), max_size=3),
    "retries": st.none() | st.integers(0, 10),
    "allowed_callers": st.sampled_from([(), ["direct"], ["programmatic", "direct"]]),
    "lock": st.none() | st.sampled_from(["ledger", "db"]),
    "version": st.none() | st.integers(1, 99).map(str),
}


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({}, optional=_VALUES))
def test_any_valid_options_register_as_the_record_holds_them(given_options: dict[str, Any]) -> None:
    registry = ToolRegistry()
    registry.register_tool(**given_options)(weather)
    tool = registry["weather"]
    assert tool.options == ToolOptions(**given_options)
    for name in FIELDS:
        assert getattr(tool, name) == getattr(tool.options, name), name
    again = ToolRegistry()
    again.register_tool(**tool.options.given())(weather)  # given() round-trips
    assert again["weather"].options == tool.options


def test_the_record_is_public_and_typed() -> None:
    hints = typing.get_type_hints(ToolOptions)
    assert set(hints) == set(FIELDS)
    assert inspect.getdoc(ToolOptions)
