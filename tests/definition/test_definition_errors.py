"""Registration errors: loud, at registration, naming the function, the parameter and the fix.

Every case asserts the exception's class (exactly), `function`, `parameter`, a fragment of
the problem and of `fix`, and that the registry was left unchanged.
"""

import dataclasses
import enum
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional, TypeVar

import _future_tools
import annotated_types as at
import pytest
from typing_extensions import TypedDict

from toolreg import (
    DuplicateToolError,
    Param,
    Tool,
    ToolDefinitionError,
    ToolRegistry,
    UnsupportedTypeError,
)

T = TypeVar("T")


class Unknown:
    """An arbitrary class: toolreg must not guess it is an object."""


class Empty(enum.Enum):
    pass


class OddValues(enum.Enum):
    A = object()


class WithUnknown(TypedDict):
    ok: str
    bad: Unknown


@dataclasses.dataclass
class Settings:
    level: Annotated[int, Param(ge=1)] = 0


@dataclasses.dataclass
class Window:
    width: int


class Shop:
    def price(self, item: str) -> float:
        raise NotImplementedError

    @classmethod
    def create(cls, name: str) -> "Shop":
        raise NotImplementedError


def qualname(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def raised_by(fn: Callable[..., Any], **options: Any) -> ToolDefinitionError:
    reg = ToolRegistry()
    with pytest.raises(ToolDefinitionError) as info:
        reg.register_tool(fn, **options)
    assert len(reg) == 0, "a failed registration must leave the registry unchanged"
    error = info.value
    assert isinstance(error, TypeError)  # ToolDefinitionError is also a TypeError
    assert error.problem in str(error)
    if error.fix:
        assert f"Fix: {error.fix}" in str(error)
    return error


# ----------------------------------------------------------------------------------------
# Unsupported types: UnsupportedTypeError, never a silent {"type": "object"}


def u_class(x: Unknown) -> None: ...
def u_bytes(data: bytes) -> None: ...
def u_int_keys(counts: dict[int, str]) -> None: ...
def u_typevar(item: T) -> None: ...  # type: ignore[valid-type]
def u_callable(callback: Callable[[int], int]) -> None: ...
def u_in_list(items: list[Unknown]) -> None: ...
def u_in_optional(x: Optional[Unknown] = None) -> None: ...
def u_in_field(settings: WithUnknown) -> None: ...
def u_empty_enum(x: Empty) -> None: ...
def u_odd_enum(x: OddValues) -> None: ...
def u_bytes_literal(x: Literal[b"raw"]) -> None: ...
def u_type(cls: type[int]) -> None: ...


UNSUPPORTED = [
    # (function, parameter, fragment of the problem, fragment of the fix, the annotation)
    pytest.param(
        u_class,
        "x",
        "does not know how to describe this class (Unknown)",
        "TypedDict",
        Unknown,
        id="class",
    ),
    pytest.param(u_bytes, "data", "bytes cannot travel in JSON", "take a str", bytes, id="bytes"),
    pytest.param(
        u_int_keys,
        "counts",
        "JSON object keys are always plain strings",
        "dict[str, ...]",
        dict[int, str],
        id="dict-int-keys",
    ),
    pytest.param(u_typevar, "item", "a TypeVar has no schema", "concrete type", T, id="TypeVar"),
    pytest.param(
        u_callable,
        "callback",
        "no JSON Schema equivalent",
        "TypedDict",
        Callable[[int], int],
        id="Callable",
    ),
    pytest.param(u_in_list, "items", "(Unknown)", "dataclass", Unknown, id="inside-list"),
    pytest.param(u_in_optional, "x", "(Unknown)", "dataclass", Unknown, id="inside-Optional"),
    pytest.param(
        u_in_field, "settings.bad", "(Unknown)", "dataclass", Unknown, id="TypedDict-field"
    ),
    pytest.param(
        u_empty_enum, "x", "an Enum without members", "add members", Empty, id="empty-Enum"
    ),
    pytest.param(
        u_odd_enum,
        "x",
        "cannot be sent as JSON",
        "str or int values",
        OddValues,
        id="Enum-object-values",
    ),
    pytest.param(
        u_bytes_literal,
        "x",
        "b'raw' cannot be sent as JSON",
        "str, int",
        Literal[b"raw"],
        id="Literal-bytes",
    ),
    pytest.param(
        u_type,
        "cls",
        "no JSON Schema equivalent",
        "explicit JSON schema",
        type[int],
        id="type[int]",
    ),
]


@pytest.mark.parametrize(("fn", "parameter", "problem", "fix", "annotation"), UNSUPPORTED)
def test_unsupported_types(
    fn: Callable[..., Any], parameter: str, problem: str, fix: str, annotation: Any
) -> None:
    error = raised_by(fn)
    assert type(error) is UnsupportedTypeError
    assert error.function == qualname(fn)
    assert error.parameter == parameter
    assert problem in error.problem
    assert error.fix is not None
    assert fix in error.fix
    assert error.annotation == annotation
    assert f"parameter '{parameter}'" in str(error)


# ----------------------------------------------------------------------------------------
# Other definition errors: ToolDefinitionError itself


def e_no_annotation(city, days: int = 1) -> None: ...  # type: ignore[no-untyped-def]
def e_no_annotation_kwargs(**options) -> None: ...  # type: ignore[no-untyped-def]
def e_args(*cities: str) -> None: ...
def e_literal_default(unit: Literal["c", "f"] = "k") -> None: ...  # type: ignore[assignment]
def e_none_default(x: int = None) -> None: ...  # type: ignore[assignment]  # noqa: RUF013
def e_bool_default(x: int = True) -> None: ...
def e_bound_default(x: Annotated[int, Param(ge=1)] = 0) -> None: ...
def e_field_default(settings: Settings) -> None: ...
def e_ge_on_str(name: Annotated[str, Param(ge=1)]) -> None: ...
def e_at_gt_on_str(name: Annotated[str, at.Gt(0)]) -> None: ...
def e_pattern_on_int(n: Annotated[int, Param(pattern=r"\d+")]) -> None: ...
def e_length_on_int(n: Annotated[int, Param(min_length=1)]) -> None: ...
def e_format_on_int(n: Annotated[int, Param(format="email")]) -> None: ...
def e_ge_on_union(x: Annotated[int | str, Param(ge=1)]) -> None: ...
def e_length_on_class(s: Annotated[Window, Param(max_length=2)]) -> None: ...
def e_bad_regex(code: Annotated[str, Param(pattern="[a-z")]) -> None: ...
def e_multiple_of_zero(x: Annotated[int, Param(multiple_of=0)]) -> None: ...
def e_negative_length(x: Annotated[str, Param(min_length=-1)]) -> None: ...
def e_empty_range(x: Annotated[int, Param(ge=10, le=1)]) -> None: ...
def e_open_range(x: Annotated[float, Param(gt=1, lt=1)]) -> None: ...
def e_lengths(x: Annotated[str, Param(min_length=5, max_length=2)]) -> None: ...
def e_bound_not_number(x: Annotated[int, Param(ge="1")]) -> None: ...  # type: ignore[arg-type]
def e_examples(x: Annotated[str, Param(examples=[object()])]) -> None: ...


DEFINITION_ERRORS = [
    # (function, parameter, fragment of the problem, fragment of the fix)
    pytest.param(
        e_no_annotation, "city", "no type annotation", "city: str", id="missing-annotation"
    ),
    pytest.param(
        e_no_annotation_kwargs,
        "options",
        "no type annotation",
        "**options: Any",
        id="missing-annotation-kwargs",
    ),
    pytest.param(
        e_args, "cities", "*cities cannot be filled by a model", "cities: list[str]", id="*args"
    ),
    pytest.param(
        e_literal_default,
        "unit",
        "the default 'k' does not match",
        "change the default",
        id="Literal-default",
    ),
    pytest.param(
        e_none_default,
        "x",
        "the default None does not match",
        "int | None = None",
        id="None-default",
    ),
    pytest.param(
        e_bool_default,
        "x",
        "the default True does not match",
        "change the default",
        id="bool-default-for-int",
    ),
    pytest.param(
        e_bound_default,
        "x",
        "the default 0 does not match",
        "change the default",
        id="default-out-of-bounds",
    ),
    pytest.param(
        e_field_default,
        "settings.level",
        "the default 0 does not match",
        "change the default",
        id="dataclass-field-default",
    ),
    pytest.param(
        e_ge_on_str,
        "name",
        "ge applies to integer or number values, not to string values",
        "remove ge, or put it on an integer or number type",
        id="ge-on-str",
    ),
    pytest.param(
        e_at_gt_on_str,
        "name",
        "gt applies to integer or number values",
        "remove gt",
        id="annotated_types-on-str",
    ),
    pytest.param(
        e_pattern_on_int,
        "n",
        "pattern applies to string values, not to integer",
        "remove pattern",
        id="pattern-on-int",
    ),
    pytest.param(
        e_length_on_int,
        "n",
        "min_length/max_length applies to array or object or string values",
        "remove min_length/max_length, or put it on an array or object or string type",
        id="length-on-int",
    ),
    pytest.param(
        e_format_on_int,
        "n",
        "format applies to string values",
        "remove format, or put it on a string type",
        id="format-on-int",
    ),
    pytest.param(
        e_ge_on_union, "x", "not to a union of several types", "remove ge", id="ge-on-union"
    ),
    pytest.param(
        e_length_on_class,
        "s",
        "not to a class (Window)",
        "remove min_length",
        id="length-on-class",
    ),
    pytest.param(
        e_bad_regex,
        "code",
        "pattern '[a-z' is not a valid regular expression",
        "fix the regular expression",
        id="invalid-regex",
    ),
    pytest.param(
        e_multiple_of_zero, "x", "multiple_of must be > 0", "positive number", id="multiple_of-zero"
    ),
    pytest.param(
        e_negative_length,
        "x",
        "minLength must be a non-negative int",
        "min_length=1",
        id="negative-length",
    ),
    pytest.param(
        e_empty_range,
        "x",
        "the bounds leave no valid value (lower 10, upper 1)",
        "lower bound must be below",
        id="ge-above-le",
    ),
    pytest.param(
        e_open_range,
        "x",
        "the bounds leave no valid value (lower 1, upper 1)",
        "lower bound must be below",
        id="gt-equals-lt",
    ),
    pytest.param(
        e_lengths,
        "x",
        "min_length 5 is greater than max_length 2",
        "min_length <= max_length",
        id="min-above-max-length",
    ),
    pytest.param(
        e_bound_not_number, "x", "ge='1' must be a number", "ge=0", id="bound-not-a-number"
    ),
    pytest.param(
        e_examples, "x", "examples value <object object", "use str, int", id="examples-not-json"
    ),
]


@pytest.mark.parametrize(("fn", "parameter", "problem", "fix"), DEFINITION_ERRORS)
def test_definition_errors(fn: Callable[..., Any], parameter: str, problem: str, fix: str) -> None:
    error = raised_by(fn)
    assert type(error) is ToolDefinitionError
    assert error.function == qualname(fn)
    assert error.parameter == parameter
    assert problem in error.problem
    assert error.fix is not None
    assert fix in error.fix
    assert str(error).startswith(f"{qualname(fn)}, parameter '{parameter}': ")


def test_unknown_class_is_never_described_as_an_object() -> None:
    """The first cut's worst failure mode: an unknown class silently becoming {"type": "object"}."""
    for fn in (u_class, u_in_list, u_in_field):
        assert type(raised_by(fn)) is UnsupportedTypeError


# ----------------------------------------------------------------------------------------
# Methods


def test_method_registered_unbound_suggests_the_bound_method() -> None:
    error = raised_by(Shop.price)
    assert type(error) is ToolDefinitionError
    assert error.function == qualname(Shop.price)
    assert error.parameter == "self"
    assert "registered on the class (unbound)" in error.problem
    assert error.fix is not None
    assert "reg.register_tool(obj.method)" in error.fix


def test_decorating_a_method_in_the_class_body_fails_with_the_same_help() -> None:
    reg = ToolRegistry()
    with pytest.raises(ToolDefinitionError) as info:

        class Store:
            @reg.register_tool
            def stock(self, item: str) -> int:
                raise NotImplementedError

    assert info.value.parameter == "self"
    assert "bound method" in str(info.value.fix)


def test_bound_method_and_classmethod_register() -> None:
    reg = ToolRegistry()
    reg.register_tool(Shop().price)
    reg.register_tool(Shop.create)
    assert reg["price"].parameters["properties"] == {"item": {"type": "string"}}
    assert reg["create"].parameters["properties"] == {"name": {"type": "string"}}


# ----------------------------------------------------------------------------------------
# Forward references


def test_unresolvable_forward_reference_names_the_parameter() -> None:
    error = raised_by(_future_tools.broken)
    assert type(error) is ToolDefinitionError
    assert error.function == "_future_tools.broken"
    assert error.parameter == "x"
    assert "cannot resolve the type hint 'MissingType'" in error.problem
    assert error.fix == "define or import MissingType at module level before registering"


def test_unresolvable_forward_reference_in_a_field() -> None:
    error = raised_by(_future_tools.broken_field)
    assert error.function == "_future_tools.broken_field"
    assert error.parameter == "order.item"
    assert "'MissingItem'" in error.problem
    assert error.fix is not None
    assert "MissingItem" in error.fix


def test_forward_reference_to_a_local_class() -> None:
    def make() -> Callable[..., Any]:
        class Local:
            pass

        def f(x: "Local") -> None:
            raise NotImplementedError

        return f

    fn = make()
    error = raised_by(fn)
    assert error.parameter == "x"
    assert "'Local'" in error.problem
    assert "local name" in error.problem


# ----------------------------------------------------------------------------------------
# Names and duplicates


def weather(city: str) -> str:
    raise NotImplementedError


def other_weather(city: str) -> str:
    raise NotImplementedError


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("has space", id="space"),
        pytest.param("", id="empty"),
        pytest.param("x" * 129, id="too-long-for-everyone"),
        pytest.param("tab\tname", id="tab"),
    ],
)
def test_name_no_provider_accepts(name: str) -> None:
    error = raised_by(weather, name=name)
    assert type(error) is ToolDefinitionError
    assert error.function == qualname(weather)
    assert error.parameter is None
    assert f"the tool name {name!r} is accepted by no provider" in error.problem
    assert "openai: 1-64 of a-z A-Z 0-9 _ -" in error.problem  # the rules are cited
    assert error.fix is not None
    assert "name=" in error.fix


def test_lambda_has_no_usable_name() -> None:
    fn = lambda: None  # noqa: E731
    error = raised_by(fn)
    assert type(error) is ToolDefinitionError
    assert error.function == qualname(fn)
    assert "lambda" in error.problem
    assert error.fix is not None
    assert "name=" in error.fix
    reg = ToolRegistry()
    reg.register_tool(fn, name="noop")  # with a name it is fine
    assert reg.names() == ["noop"]


def test_duplicate_name_in_one_registry() -> None:
    reg = ToolRegistry()
    reg.register_tool(weather)
    with pytest.raises(DuplicateToolError) as info:
        reg.register_tool(other_weather, name="weather")
    error = info.value
    assert isinstance(error, ToolDefinitionError)
    assert error.name == "weather"
    assert error.function == qualname(other_weather)
    assert error.existing == qualname(weather)
    assert error.parameter is None
    assert error.fix is not None
    assert "replace=True" in error.fix
    assert reg["weather"].function is weather  # the first one is kept, not silently replaced


def test_the_same_function_registered_again_replaces_it_with_a_warning() -> None:
    # as a notebook cell run again does (tests/test_registry_redefinition.py); add() and
    # register_schema() of a taken name stay errors
    reg = ToolRegistry()
    reg.register_tool(weather)
    with pytest.warns(UserWarning, match="registered again from the same place"):
        reg.register_tool(weather)
    assert reg.names() == ["weather"]
    with pytest.raises(DuplicateToolError):
        reg.add(Tool.from_function(weather))


def test_replace_true_replaces() -> None:
    reg = ToolRegistry()
    reg.register_tool(weather)
    reg.register_tool(other_weather, name="weather", replace=True)
    assert reg.names() == ["weather"]
    assert reg["weather"].function is other_weather


def test_same_name_in_two_registries_is_fine() -> None:
    first, second = ToolRegistry(), ToolRegistry()
    first.register_tool(weather)
    second.register_tool(other_weather, name="weather")
    assert first["weather"].function is weather
    assert second["weather"].function is other_weather


# ----------------------------------------------------------------------------------------
# strict=True: schemas that cannot be strict are rejected at registration


def s_open_dict(counts: dict[str, int]) -> None: ...
def s_any(payload: Any) -> None: ...
def s_bare_list(items: list) -> None: ...  # type: ignore[type-arg]
def s_kwargs(query: str, **filters: str) -> None: ...


class Bag(TypedDict):
    label: str
    extra: dict[str, str]


def s_nested_open_dict(bag: Bag) -> None: ...


STRICT_ERRORS = [
    # (function, parameter, fragment of the problem, fragment of the fix)
    pytest.param(
        s_open_dict,
        "counts",
        "an open object (a dict) lets the model send undeclared keys (at properties.counts)",
        "TypedDict",
        id="dict",
    ),
    pytest.param(
        s_any,
        "payload",
        "Any accepts values no schema describes (at properties.payload)",
        "concrete type",
        id="Any",
    ),
    pytest.param(
        s_bare_list, "items", "an array of Any (at properties.items)", "list[str]", id="bare-list"
    ),
    pytest.param(s_kwargs, None, "the function takes **kwargs", "instead of **kwargs", id="kwargs"),
    pytest.param(
        s_nested_open_dict,
        None,
        "(at $defs.Bag.properties.extra)",
        "TypedDict",
        id="dict-in-TypedDict",
    ),
]


@pytest.mark.parametrize(("fn", "parameter", "problem", "fix"), STRICT_ERRORS)
def test_strict_rejects_what_cannot_be_strict(
    fn: Callable[..., Any], parameter: str | None, problem: str, fix: str
) -> None:
    error = raised_by(fn, strict=True)
    assert type(error) is ToolDefinitionError
    assert error.function == fn.__name__  # the tool's name
    assert error.parameter == parameter
    assert error.problem.startswith("cannot be strict: ")
    assert problem in error.problem
    assert error.fix is not None
    assert fix in error.fix
    ToolRegistry().register_tool(fn)  # without strict the same function is fine


# ----------------------------------------------------------------------------------------
# Tool.from_schema / register_schema: the schema is checked against the metaschema


def handler(**kwargs: Any) -> Any:
    return kwargs


BAD_SCHEMAS = [
    # (schema, fragment of the problem)
    pytest.param(
        {"type": "object", "properties": {"a": {"type": "strin"}}},
        "not valid JSON Schema at properties/a/type: 'strin' is not valid under any",
        id="unknown-type",
    ),
    pytest.param(
        {"type": "object", "required": "a"},
        "not valid JSON Schema at required: 'a' is not of type 'array'",
        id="required-not-a-list",
    ),
    pytest.param(
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": "0"}}},
        "not valid JSON Schema at properties/n/minimum: '0' is not of type 'number'",
        id="minimum-not-a-number",
    ),
    pytest.param(
        {"type": "object", "properties": []},
        "not valid JSON Schema at properties: [] is not of type 'object'",
        id="properties-not-an-object",
    ),
    pytest.param(
        {"type": "string"}, 'must be a JSON object schema with "type": "object"', id="string"
    ),
    pytest.param({"properties": {"a": {}}}, 'with "type": "object"', id="no-type"),
    pytest.param({"type": "array", "items": {}}, 'with "type": "object"', id="array"),
    pytest.param(["not", "a", "schema"], 'with "type": "object"', id="not-a-mapping"),
]


@pytest.mark.parametrize(("schema", "problem"), BAD_SCHEMAS)
def test_from_schema_rejects_invalid_schemas(schema: Any, problem: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Tool.from_schema("lookup", schema, handler)
    error = info.value
    assert type(error) is ToolDefinitionError
    assert error.function == qualname(handler)
    assert problem in error.problem
    assert error.fix is not None
    assert error.fix

    reg = ToolRegistry()
    with pytest.raises(ToolDefinitionError, match=re.escape(problem)):
        reg.register_schema("lookup", schema, handler)
    assert len(reg) == 0


def test_from_schema_accepts_a_valid_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City"}},
        "required": ["city"],
    }
    reg = ToolRegistry()
    tool = reg.register_schema("lookup", schema, handler, description="Look up a city.")
    assert tool.parameters == schema
    assert (tool.description, tool.description_source) == ("Look up a city.", "argument")


def test_from_schema_name_is_checked_too() -> None:
    schema = {"type": "object", "properties": {}}
    with pytest.raises(ToolDefinitionError, match="accepted by no provider"):
        Tool.from_schema("bad name", schema, handler)


def test_explicit_schema_that_cannot_be_compiled_fails_at_registration() -> None:
    reg = ToolRegistry()
    schema = {"type": "object", "properties": {"code": {"$ref": "#/$defs/Missing"}}}
    with pytest.raises(ToolDefinitionError) as info:
        reg.register_schema("lookup", schema, lambda code: code)
    problem = info.value.problem
    assert problem.startswith("the parameters schema of tool 'lookup' cannot be validated: ")
    assert "'#/$defs/Missing' at #/properties/code/$ref points to nothing" in problem
    assert "lookup" not in reg


def test_an_open_schema_cannot_be_strict_and_the_error_names_the_schema() -> None:
    open_schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    with pytest.raises(ToolDefinitionError) as caught:
        ToolRegistry().register_schema("lookup", open_schema, handler, strict=True)
    assert "**kwargs" not in str(caught.value)
    assert "its schema does not set additionalProperties: false" in caught.value.problem
    assert caught.value.fix is not None
    assert "additionalProperties: false in the tool's schema" in caught.value.fix
    reg = ToolRegistry()
    reg.register_schema("lookup", open_schema, handler)
    with pytest.raises(ToolDefinitionError, match="additionalProperties: false") as exported:
        reg.get_tools(strict=True)
    assert "**kwargs" not in str(exported.value)


def test_from_schema_context_parameter_gets_the_calls_tool_context() -> None:
    from toolreg import ToolContext

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}

    def handler(**arguments: Any) -> str:
        ctx = arguments.pop("ctx")
        assert isinstance(ctx, ToolContext)
        return f"{ctx.tool_name} {ctx.deps} {arguments}"

    registry = ToolRegistry()
    registry.add(Tool.from_schema("lookup", schema, handler, context_parameter="ctx"))
    assert "ctx" not in registry.get("lookup").parameters["properties"]  # type: ignore[union-attr]
    done = registry.dispatch_tool("lookup", {"q": "x"}, context="deps")
    assert done.content == "lookup deps {'q': 'x'}"
    sent = registry.dispatch_tool("lookup", {"q": "x", "ctx": "mine"})  # the model cannot set it
    assert not sent.ok
    with pytest.raises(ToolDefinitionError, match="also a property of the parameters schema"):
        Tool.from_schema("lookup", schema, handler, context_parameter="q")
    with pytest.raises(ToolDefinitionError, match="is not a parameter name"):
        Tool.from_schema("lookup", schema, handler, context_parameter="not a name")
