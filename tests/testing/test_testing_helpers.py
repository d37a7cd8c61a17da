"""toolreg.testing as a user would use it in their own tests."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest

import toolreg.testing as testing
from toolreg import Conversation, ToolContext, ToolRegistry
from toolreg.testing import (
    ScriptedServer,
    assert_schema,
    call_tool,
    schema_snapshot,
    text,
    tool_call,
)


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(
        city: Annotated[str, "City name"], unit: Literal["c", "f"] = "c"
    ) -> dict[str, Any]:
        """Get the current weather of a city."""
        return {"city": city, "unit": unit}

    @reg.register_tool(destructive=True)
    def forget(user: str, ctx: ToolContext[str]) -> str:
        """Forget a user."""
        return f"{ctx.deps} forgot {user}"

    return reg


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_exports() -> None:
    assert sorted(testing.__all__) == testing.__all__
    for name in testing.__all__:
        assert hasattr(testing, name)


# -- call_tool ------------------------------------------------------------------------------------


def test_call_tool_with_a_mapping_goes_through_validation_and_coercion(
    registry: ToolRegistry,
) -> None:
    result = call_tool("get_weather", {"city": "Paris", "unit": "f"}, registry=registry)
    assert result.ok
    assert result.value == {"city": "Paris", "unit": "f"}
    assert result.content == '{"city": "Paris", "unit": "f"}'
    assert result.call_id == "test"


def test_call_tool_with_json_text_and_failures(registry: ToolRegistry) -> None:
    assert call_tool("get_weather", '{"city": "Oslo"}', registry=registry).value["unit"] == "c"
    bad = call_tool("get_weather", {"city": "Oslo", "unit": "k"}, registry=registry)
    assert (bad.ok, bad.error_kind) == (False, "invalid_arguments")
    assert "unit" in bad.content
    assert call_tool("get_wether", {}, registry=registry).error_kind == "unknown_tool"
    assert call_tool("get_weather", '{"city": ', registry=registry).error_kind == "invalid_json"


def test_call_tool_passes_context_and_confirm(registry: ToolRegistry) -> None:
    denied = call_tool("forget", {"user": "bob"}, registry=registry, context="ann")
    assert denied.error_kind == "denied"
    approved = call_tool(
        "forget", {"user": "bob"}, registry=registry, context="ann", confirm=lambda t, a: True
    )
    assert approved.content == "ann forgot bob"


# -- assert_schema ---------------------------------------------------------------------------------


def test_assert_schema_passes(registry: ToolRegistry) -> None:
    assert_schema("get_weather", WEATHER_SCHEMA, registry=registry)
    assert_schema(
        "get_weather",
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the current weather of a city.",
                "parameters": WEATHER_SCHEMA,
            },
        },
        registry=registry,
        format="openai",
    )


def test_assert_schema_fails_with_a_readable_diff(registry: ToolRegistry) -> None:
    wrong = json.loads(json.dumps(WEATHER_SCHEMA))
    wrong["properties"]["city"]["description"] = "Town"
    with pytest.raises(AssertionError) as caught:
        assert_schema("get_weather", wrong, registry=registry)
    message = str(caught.value)
    assert message.startswith("schema of 'get_weather' differs:")
    assert '-      "description": "Town",' in message
    assert '+      "description": "City name",' in message
    assert "--- expected" in message
    assert "+++ actual" in message


def test_assert_schema_names_an_unknown_tool(registry: ToolRegistry) -> None:
    with pytest.raises(
        AssertionError, match="no tool named 'nope'; registered: get_weather, forget"
    ):
        assert_schema("nope", {}, registry=registry)


# -- schema_snapshot ------------------------------------------------------------------------------


def test_schema_snapshot_is_stable_pretty_json(registry: ToolRegistry) -> None:
    snapshot = schema_snapshot(registry)
    assert snapshot.endswith("}\n]\n")
    assert snapshot == schema_snapshot(registry)
    loaded = json.loads(snapshot)
    assert loaded == registry.get_tools()
    assert [t["function"]["name"] for t in loaded] == ["get_weather", "forget"]
    assert '\n  {\n    "function": {' in snapshot  # indented, keys sorted
    anthropic = json.loads(schema_snapshot(registry, format="anthropic"))
    assert anthropic[0]["input_schema"] == WEATHER_SCHEMA


def test_schema_snapshot_keeps_non_ascii_readable() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def 天气(城市: str) -> str:
        """查询天气。"""
        return 城市

    snapshot = schema_snapshot(registry, format="chatglm3")
    assert "查询天气" in snapshot
    assert "\\u" not in snapshot


# -- ScriptedServer, as in a user's test suite ----------------------------------------------------


def test_scripted_server_drives_a_user_conversation(registry: ToolRegistry) -> None:
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        chat = Conversation(server.client(), "any-model", registry=registry, tools=["get_weather"])
        reply = chat.send("Weather in Paris?")
        server.assert_all_consumed()
        server.assert_request(0, tool_names=["get_weather"], tool_choice="auto", message_count=1)
        server.assert_request(1, contains_tool_result="call_1", tool_result_contains="Paris")
        with pytest.raises(AssertionError, match="contains no tool result for 'call_9'"):
            server.assert_request(1, contains_tool_result="call_9")
    assert reply.text == "Sunny."


def test_scripted_server_reports_unused_turns() -> None:
    with ScriptedServer([text("one"), text("two")]) as server:
        Conversation(server.client(), "m", registry=ToolRegistry()).send("hi")
        with pytest.raises(AssertionError, match=r"1 scripted turn\(s\) never requested"):
            server.assert_all_consumed()
