"""Export formats: full shapes, the OpenAI SDK's TypedDicts, provider rules, selection, cache."""

from __future__ import annotations

import copy
import dataclasses
import enum
import typing
from typing import Annotated, Any, Literal, Optional

import pytest
from _sdk_shapes import conforms
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from openai.types.shared_params import FunctionDefinition

from toolreg import Param, ToolDefinitionError, ToolRegistry, UsageError
from toolreg.formats import FORMATS

SIX = ("openai", "responses", "anthropic", "gemini", "mcp", "chatglm3")


def get_weather(
    city: Annotated[str, "City name, e.g. Beijing"], unit: Literal["c", "f"] = "c"
) -> dict[str, Any]:
    """Get the current weather of a city."""
    return {"city": city, "unit": unit, "temp": 18}


PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name, e.g. Beijing"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
    },
    "required": ["city"],
    "additionalProperties": False,
}
DESCRIPTION = "Get the current weather of a city."

EXPECTED: dict[str, dict[str, Any]] = {
    "openai": {
        "type": "function",
        "function": {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMETERS},
    },
    "responses": {
        "type": "function",
        "name": "get_weather",
        "description": DESCRIPTION,
        "parameters": PARAMETERS,
        "strict": False,
    },
    "anthropic": {"name": "get_weather", "description": DESCRIPTION, "input_schema": PARAMETERS},
    "gemini": {
        "name": "get_weather",
        "description": DESCRIPTION,
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING", "description": "City name, e.g. Beijing"},
                "unit": {"type": "STRING", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    },
    "mcp": {
        "name": "get_weather",
        "description": DESCRIPTION,
        "inputSchema": PARAMETERS,
        "annotations": {"readOnlyHint": True},
    },
    "chatglm3": {"name": "get_weather", "description": DESCRIPTION, "parameters": PARAMETERS},
}


@pytest.fixture
def reg() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register_tool(read_only=True, tags=["weather"])(get_weather)
    return registry


# -- shapes ----------------------------------------------------------------------------------


def test_parameters_schema(reg: ToolRegistry) -> None:
    assert reg["get_weather"].parameters == PARAMETERS


@pytest.mark.parametrize("fmt", SIX)
def test_full_shape(reg: ToolRegistry, fmt: str) -> None:
    assert reg.get_tools(fmt) == [EXPECTED[fmt]]


def test_openai_is_the_default_format(reg: ToolRegistry) -> None:
    assert reg.get_tools() == reg.get_tools("openai")


def test_every_format_names_the_tool(reg: ToolRegistry) -> None:
    for fmt in FORMATS:
        (definition,) = reg.get_tools(fmt)
        assert "get_weather" in repr(definition), fmt


def test_strict_flag_in_the_openai_and_anthropic_shapes(reg: ToolRegistry) -> None:
    (chat,) = reg.get_tools("openai", strict=True)
    assert chat["function"]["strict"] is True
    (flat,) = reg.get_tools("responses", strict=True)
    assert flat["strict"] is True
    (claude,) = reg.get_tools("anthropic", strict=True)
    assert claude["strict"] is True
    assert chat["function"]["parameters"] == flat["parameters"] == claude["input_schema"]


def test_no_description_is_left_out_where_optional() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def ping() -> str:
        return "pong"

    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    assert reg.get_tools("openai") == [
        {"type": "function", "function": {"name": "ping", "parameters": empty}}
    ]
    assert reg.get_tools("responses") == [
        {"type": "function", "name": "ping", "parameters": empty, "strict": False}
    ]
    assert reg.get_tools("anthropic") == [{"name": "ping", "input_schema": empty}]
    assert reg.get_tools("mcp") == [
        {
            "name": "ping",
            "inputSchema": empty,
            "annotations": {"readOnlyHint": False, "destructiveHint": False},
        }
    ]
    assert reg.get_tools("chatglm3") == [{"name": "ping", "description": "", "parameters": empty}]
    assert reg.get_tools("gemini") == [{"name": "ping", "description": ""}]


# -- the OpenAI SDK's own TypedDicts (checked by tests/_sdk_shapes.py) -------------------


def test_the_checker_catches_problems() -> None:
    assert conforms({"type": "function"}, ChatCompletionFunctionToolParam)  # no "function"
    assert conforms(
        {"type": "function", "function": {"name": "x", "paramz": {}}}, ChatCompletionToolParam
    )
    assert conforms({"type": "function", "name": "x", "parameters": {}}, FunctionToolParam)
    assert conforms({"name": 3}, FunctionDefinition)


@pytest.mark.parametrize("strict", [None, False, True])
def test_chat_completions_shape_matches_the_sdk(reg: ToolRegistry, strict: bool | None) -> None:
    for entry in reg.get_tools("openai", strict=strict):
        assert conforms(entry, ChatCompletionFunctionToolParam) == []
        assert conforms(entry, ChatCompletionToolParam) == []
        assert conforms(entry["function"], FunctionDefinition) == []


@pytest.mark.parametrize("strict", [None, False, True])
def test_responses_shape_matches_the_sdk(reg: ToolRegistry, strict: bool | None) -> None:
    for entry in reg.get_tools("responses", strict=strict):
        assert conforms(entry, FunctionToolParam) == []


def test_sdk_shapes_for_a_tool_without_description_or_parameters() -> None:
    reg = ToolRegistry()
    reg.register_tool(name="noop")(lambda: None)
    (chat,) = reg.get_tools("openai")
    assert conforms(chat, ChatCompletionFunctionToolParam) == []
    (flat,) = reg.get_tools("responses")
    assert conforms(flat, FunctionToolParam) == []


# -- provider rules ----------------------------------------------------------------------------

NAME_CASES: list[tuple[str, set[str]]] = [
    # name, the formats that accept it (of the six)
    ("a.b", {"gemini", "mcp", "chatglm3"}),
    ("1st_tool", {"openai", "responses", "anthropic", "mcp", "chatglm3"}),
    ("x" * 65, {"mcp", "chatglm3"}),
    ("天气", {"chatglm3"}),
    ("ns:tool", {"gemini", "chatglm3"}),
    ("get-weather_2", set(SIX)),
]


@pytest.mark.parametrize(("name", "accepted"), NAME_CASES, ids=[c[0][:12] for c in NAME_CASES])
def test_names_are_checked_per_provider(name: str, accepted: set[str]) -> None:
    reg = ToolRegistry()
    reg.register_tool(name=name)(get_weather)
    for fmt in SIX:
        if fmt in accepted:
            assert len(reg.get_tools(fmt)) == 1
        else:
            with pytest.raises(ToolDefinitionError) as info:
                reg.get_tools(fmt)
            assert repr(name) in str(info.value)
            assert fmt in info.value.problem
            assert info.value.fix


def test_dotted_name_rejected_by_openai_with_the_rule() -> None:
    reg = ToolRegistry()
    reg.register_tool(name="a.b")(get_weather)
    assert reg.get_tools("mcp")[0]["name"] == "a.b"
    with pytest.raises(ToolDefinitionError, match=r"'a\.b' is not valid for openai") as info:
        reg.get_tools("openai")
    assert "a-z A-Z 0-9 _ -" in str(info.value)
    assert info.value.function == "a.b"


# -- selection -----------------------------------------------------------------------------------


def _three() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool(tags=["math"])
    def add(a: int, b: int) -> int:
        return a + b

    @reg.register_tool(tags=["text"])
    def upper(s: str) -> str:
        return s.upper()

    @reg.register_tool(tags=["math", "text"])
    def count(s: str) -> int:
        return len(s)

    return reg


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def test_names_selection_keeps_the_given_order() -> None:
    reg = _three()
    assert _names(reg.get_tools()) == ["add", "upper", "count"]
    assert _names(reg.get_tools(names=["count", "add"])) == ["count", "add"]
    assert _names(reg.get_tools(names=("upper",))) == ["upper"]
    assert _names(reg.get_tools(names=iter(["upper", "add"]))) == ["upper", "add"]  # type: ignore[arg-type]
    assert _names(reg.get_tools(names="upper")) == ["upper"]  # one name, not its letters
    assert reg.get_tools(names=[]) == []


def test_unknown_names_are_a_key_error() -> None:
    reg = _three()
    with pytest.raises(KeyError, match="nope"):
        reg.get_tools(names=["add", "nope"])


def test_tags_selection() -> None:
    reg = _three()
    assert _names(reg.get_tools(tags=["math"])) == ["add", "count"]
    assert _names(reg.get_tools(tags="text")) == ["upper", "count"]
    assert _names(reg.get_tools(tags=iter(["text"]))) == ["upper", "count"]
    assert reg.get_tools(tags=["nothing"]) == []
    assert _names(reg.get_tools(names=["count", "upper", "add"], tags=["math"])) == [
        "count",
        "add",
    ]


def test_unknown_format_lists_the_formats(reg: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="unknown format 'openapi'") as info:
        reg.get_tools("openapi")
    for fmt in FORMATS:
        assert fmt in str(info.value)


# -- cache -----------------------------------------------------------------------------------------


def _many(n: int) -> ToolRegistry:
    reg = ToolRegistry()
    for i in range(n):
        reg.register_tool(name=f"tool_{i}")(get_weather)
    return reg


def test_two_calls_return_equal_lists() -> None:
    reg = _many(3)
    first, second = reg.get_tools(), reg.get_tools()
    assert first == second
    assert first is not second  # the caller's list is its own
    first.append({"junk": True})
    assert len(reg.get_tools()) == 3


def test_cached_export_is_reused_for_many_tools() -> None:
    reg = _many(200)
    first, second = reg.get_tools("anthropic"), reg.get_tools("anthropic")
    assert len(first) == 200
    assert all(a is b for a, b in zip(first, second))
    assert reg.get_tools("anthropic", names=["tool_1"])[0] == first[1]


def test_cache_is_per_option() -> None:
    reg = _many(2)
    plain, strict = reg.get_tools(), reg.get_tools(strict=True)
    assert plain != strict
    assert reg.get_tools()[0] is plain[0]
    assert reg.get_tools(strict=True)[0] is strict[0]
    assert reg.get_tools("mcp") != plain


def test_cache_stays_bounded_for_many_selections() -> None:
    reg = _many(30)
    names = reg.names()
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            reg.get_tools(names=[names[i], names[j]])  # 435 distinct selections
    assert len(reg._exports) <= 256
    assert [t["function"]["name"] for t in reg.get_tools(names=["tool_3", "tool_1"])] == [
        "tool_3",
        "tool_1",
    ]


def test_registering_invalidates_the_cache() -> None:
    reg = _many(2)
    before = reg.get_tools()
    reg.register_tool(name="late")(get_weather)
    after = reg.get_tools()
    assert [t["function"]["name"] for t in after] == ["tool_0", "tool_1", "late"]
    assert after[0] == before[0]


def test_unregistering_invalidates_the_cache() -> None:
    reg = _many(2)
    reg.get_tools(tags=None)
    reg.unregister("tool_0")
    assert [t["function"]["name"] for t in reg.get_tools()] == ["tool_1"]


def test_replacing_invalidates_the_cache() -> None:
    reg = _many(1)
    reg.get_tools()
    reg.register_tool(name="tool_0", description="Replaced.", replace=True)(get_weather)
    assert reg.get_tools()[0]["function"]["description"] == "Replaced."


def test_editing_an_export_does_not_change_the_tool() -> None:
    reg = _many(1)
    exported = reg.get_tools()[0]["function"]["parameters"]
    exported["required"].clear()
    exported.pop("additionalProperties")
    exported["properties"]["city"]["type"] = "integer"
    assert reg["tool_0"].parameters == PARAMETERS
    missing = reg.dispatch_tool("tool_0", '{"extra": 1}')
    assert not missing.ok
    assert "city" in missing.content


# -- advertise_required=False ------------------------------------------------------------------


def test_advertise_required_false_leaves_required_out(reg: ToolRegistry) -> None:
    (chat,) = reg.get_tools(advertise_required=False)
    assert "required" not in chat["function"]["parameters"]
    expected = {k: v for k, v in PARAMETERS.items() if k != "required"}
    assert chat["function"]["parameters"] == expected
    for fmt in SIX:
        text = repr(reg.get_tools(fmt, advertise_required=False))
        assert "'required'" not in text, fmt
    assert reg["get_weather"].parameters["required"] == ["city"]
    assert "required" in reg.get_tools()[0]["function"]["parameters"]  # separate cache entry


def test_dispatch_still_enforces_required(reg: ToolRegistry) -> None:
    reg.get_tools(advertise_required=False)
    result = reg.dispatch_tool("get_weather", "{}")
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert "city" in result.content
    assert reg.dispatch_tool("get_weather", '{"city": "Paris"}').ok


def test_advertise_required_false_and_strict_conflict(reg: ToolRegistry) -> None:
    with pytest.raises(ValueError, match="strict"):
        reg.get_tools(strict=True, advertise_required=False)


# -- Gemini's subset -----------------------------------------------------------------------------


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


@dataclasses.dataclass
class Box:
    """A box."""

    width: int
    label: Optional[str] = None


@dataclasses.dataclass
class Tree:
    value: int
    children: list[Tree]


def _walk(node: Any) -> typing.Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def test_gemini_subset() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def pack(
        box: Annotated[Box, "The box"],
        size: Size,
        when: Annotated[str, Param(format="date")],
        at: Annotated[str, Param(format="date-time")],
        note: Optional[str] = None,
        mode: Literal["a", 1] = "a",
        extra: Optional[dict[str, int]] = None,
    ) -> None:
        """Pack a box."""

    (decl,) = reg.get_tools("gemini")
    assert decl["name"] == "pack"
    assert decl["description"] == "Pack a box."
    params = decl["parameters"]
    for key, value in _walk(params):
        assert key not in ("$ref", "$defs", "additionalProperties", "default", "const"), key
        if key == "type":
            assert value in {"STRING", "INTEGER", "NUMBER", "BOOLEAN", "ARRAY", "OBJECT"}
    props = params["properties"]
    assert params["type"] == "OBJECT"
    assert params["required"] == ["box", "size", "when", "at"]
    assert props["box"] == {
        "type": "OBJECT",
        "description": "The box",
        "properties": {
            "width": {"type": "INTEGER"},
            "label": {"type": "STRING", "nullable": True},
        },
        "required": ["width"],
    }
    assert props["note"] == {"type": "STRING", "nullable": True}
    assert props["size"] == {"type": "INTEGER", "description": "(one of: 1, 2)"}
    assert "enum" not in props["mode"]
    assert '"a"' in props["mode"]["description"]
    assert "1" in props["mode"]["description"]
    assert props["when"] == {"type": "STRING", "description": "(format: date)"}
    assert props["at"] == {"type": "STRING", "format": "date-time"}
    assert props["extra"]["type"] == "OBJECT"
    assert props["extra"]["nullable"] is True


def test_gemini_recursive_type_is_a_clear_error() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def plant(tree: Tree) -> None:
        """Plant a tree."""

    assert reg.get_tools("openai")  # fine elsewhere: $defs/$ref
    with pytest.raises(ToolDefinitionError) as info:
        reg.get_tools("gemini")
    message = str(info.value)
    assert "Tree" in message
    assert "Gemini" in message
    assert info.value.function == "plant"
    assert info.value.fix


def test_gemini_explicit_schema_with_const_and_nested_anyof() -> None:
    reg = ToolRegistry()
    reg.register_schema(
        "pick",
        {
            "type": "object",
            "properties": {
                "kind": {"const": "fruit"},
                "value": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            },
        },
        lambda **kw: kw,
    )
    (decl,) = reg.get_tools("gemini")
    assert decl["parameters"]["properties"] == {
        "kind": {"type": "STRING", "enum": ["fruit"]},
        "value": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}], "nullable": True},
    }


# -- MCP -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "annotations"),
    [
        ({}, {"readOnlyHint": False, "destructiveHint": False}),
        ({"read_only": True}, {"readOnlyHint": True}),
        ({"destructive": True}, {"readOnlyHint": False, "destructiveHint": True}),
    ],
)
def test_mcp_annotations(options: dict[str, Any], annotations: dict[str, bool]) -> None:
    reg = ToolRegistry()
    reg.register_tool(**options)(get_weather)
    (tool,) = reg.get_tools("mcp")
    assert tool["annotations"] == annotations
    assert tool["inputSchema"] == PARAMETERS
    assert set(tool) == {"name", "description", "inputSchema", "annotations"}


def test_mcp_keeps_defs_and_refs() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def store(box: Box) -> None:
        """Store a box."""

    (tool,) = reg.get_tools("mcp")
    assert tool["inputSchema"]["properties"]["box"] == {"$ref": "#/$defs/Box"}
    assert set(tool["inputSchema"]["$defs"]) == {"Box"}


# -- ChatGLM3 ----------------------------------------------------------------------------------


def test_chatglm3_list_for_several_tools() -> None:
    reg = _three()
    tools = reg.get_tools("chatglm3")
    assert [t["name"] for t in tools] == ["add", "upper", "count"]
    for t in tools:
        assert set(t) == {"name", "description", "parameters"}
        assert t["parameters"]["type"] == "object"
    assert tools[0]["parameters"]["required"] == ["a", "b"]


def test_exports_are_json_serialisable() -> None:
    import json

    reg = ToolRegistry()

    @reg.register_tool
    def pack(box: Box, size: Size = Size.SMALL, note: Optional[str] = None) -> None:
        """Pack."""

    for fmt in FORMATS:
        exported = reg.get_tools(fmt)
        assert json.loads(json.dumps(exported)) == copy.deepcopy(exported)


def test_gemini_tells_constraints_it_has_no_keyword_for() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def pick(
        n: Annotated[int, Param(description="How many", gt=0, lt=10, multiple_of=2)],
        tags: set[str],
    ) -> str:
        """Pick things."""
        return ""

    (declaration,) = reg.get_tools("gemini")
    props = declaration["parameters"]["properties"]
    assert props["n"] == {
        "type": "INTEGER",
        "description": "How many. Must be greater than 0. Must be less than 10. "
        "Must be a multiple of 2.",
    }
    assert props["tags"]["description"] == "Items must be unique."
    assert reg.dispatch_tool("pick", '{"n": 10, "tags": []}').content == (
        "Invalid arguments for tool 'pick': n: must be < 10."
    )


# -- the Format contract ------------------------------------------------------------------


def test_every_format_module_has_one_format_with_every_part() -> None:
    """Each provider module defines `FORMAT`, registered under its own name, with a name rule,
    a definition writer, a call parser (spelled `parse_calls` everywhere) and an
    observation; a format that claims a dialect has every part the loop needs."""
    import importlib

    from toolreg.definition.names import NAME_RULES
    from toolreg.formats import DIALECTS, Format
    from toolreg.result import ToolCall, ToolResult

    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return city

    tool = reg["get_weather"]
    result = ToolResult("get_weather", "call_1", True, "sunny")
    assert set(FORMATS) == set(NAME_RULES)
    for name, fmt in FORMATS.items():
        module = importlib.import_module(f"toolreg.formats.{name}")
        assert module.FORMAT is fmt
        assert isinstance(fmt, Format)
        assert fmt.name == name
        assert fmt.name_rule is NAME_RULES[name]
        assert module.parse_calls is fmt.parse_calls
        assert module.observation is fmt.observation
        assert not hasattr(module, "parse_call")
        assert not hasattr(module, "parse_tool_calls")
        definition = fmt.definition(tool, dict(tool.parameters), False)
        assert "get_weather" in str(definition)
        calls = fmt.parse_calls({})
        assert isinstance(calls, list)
        assert all(isinstance(c, ToolCall) for c in calls)
        assert isinstance(fmt.observation(result), dict)
        if fmt.dialect is not None:
            dialect = fmt.dialect
            assert DIALECTS[dialect.name] is fmt
            assert dialect.tools_key
            assert dialect.choice_key
            assert dialect.history_key in ("messages", "input")
            assert dialect.api in ("chat.completions", "responses")
            # chat messages carry calls under keys; Responses API calls are items of their own
            assert bool(dialect.call_keys) == (dialect.api == "chat.completions")
            assert dialect.choice("auto") == "auto"
            assert list(dialect.output_format("Out", {"type": "object"}, False))
    assert {f.dialect.name for f in DIALECTS.values() if f.dialect} == {
        "tools",
        "functions",
        "chatglm3",
        "responses",
    }


def test_an_unknown_format_is_a_usage_error() -> None:
    from toolreg import ToolregError, UsageError

    with pytest.raises(UsageError, match="unknown format 'nope'; choose one of openai") as info:
        ToolRegistry().get_tools("nope")
    assert isinstance(info.value, ToolregError)
    assert isinstance(info.value, ValueError)


def test_mcp_title_and_idempotent_hint() -> None:
    reg = ToolRegistry()

    @reg.register_tool(title="Set the thermostat", idempotent=True)
    def set_temperature(celsius: float) -> str:
        """Set the thermostat."""
        return "ok"

    @reg.register_tool(read_only=True, idempotent=True)
    def read_temperature() -> float:
        """Read the thermostat."""
        return 20.0

    written, read = reg.get_tools("mcp")
    assert written["title"] == "Set the thermostat"
    assert written["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": True,
        "title": "Set the thermostat",
    }
    assert read["annotations"] == {"readOnlyHint": True}  # the hint means nothing there
    with pytest.raises(ToolDefinitionError, match="title must be a non-empty string"):
        reg.register_tool(title="  ", name="blank")(lambda: None)


def test_get_tools_takes_a_format_object_of_ones_own() -> None:
    # One get_tools for every format: a name, or a Format object (here, a provider of one's
    # own), cached by identity, so two formats with one name never share definitions.
    import dataclasses

    from toolreg import formats as fmts

    reg = ToolRegistry()

    @reg.register_tool
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    def short(tool: Any, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
        return {"tool": tool.name, "args": sorted(parameters["properties"]), "strict": strict}

    mine = dataclasses.replace(fmts.openai.FORMAT, name="openai", definition=short, dialect=None)
    assert reg.get_tools(mine) == [{"tool": "ping", "args": ["host"], "strict": False}]
    assert reg.get_tools(mine, strict=True)[0]["strict"] is True
    assert reg.get_tools("openai")[0]["type"] == "function"  # the name is the SDK's format
    assert reg.get_tools(fmts.anthropic.FORMAT) == reg.get_tools("anthropic")
    with pytest.raises(UsageError, match="unknown format 'claude'; choose one of openai"):
        reg.get_tools("claude")
