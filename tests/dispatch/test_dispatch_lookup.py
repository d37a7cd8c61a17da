"""Dispatch step 1: the whitelist (registered tools only, narrowed by `allowed=`)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolreg
from toolreg import ToolRegistry, ToolResult, UnknownToolError


def make_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    @reg.register_tool
    def now(zone: str = "UTC") -> str:
        """Current time."""
        return f"noon in {zone}"

    @reg.register_tool
    def delete_account(user: str) -> str:
        """Delete an account."""
        return f"deleted {user}"

    return reg


def test_known_tool_runs() -> None:
    result = make_registry().dispatch_tool("get_weather", '{"city": "北京"}')
    assert result.ok
    assert result.content == "sunny in 北京"
    assert result.tool_name == "get_weather"
    assert result.error is None
    assert result.error_kind is None


def test_unknown_tool_with_suggestion_and_available_list() -> None:
    result = make_registry().dispatch_tool("get_wether", '{"city": "Paris"}')
    assert not result.ok
    assert result.error_kind == "unknown_tool"
    assert result.content == (
        "Unknown tool 'get_wether'. Did you mean 'get_weather'? "
        "Available: get_weather, now, delete_account."
    )
    assert isinstance(result.error, UnknownToolError)
    assert result.error.message == result.content
    assert result.error.suggestions == ("get_weather",)
    assert result.tool_name == "get_wether"
    assert result.value is None
    assert result.exception is None


def test_several_suggestions_are_listed_best_first() -> None:
    reg = ToolRegistry()
    for name in ("get_type", "get_time", "get_tile"):
        reg.register_tool(lambda: "x", name=name)
    result = reg.dispatch_tool("get_tim", "{}")
    assert result.content == (
        "Unknown tool 'get_tim'. Did you mean 'get_time', 'get_tile' or 'get_type'? "
        "Available: get_type, get_time, get_tile."
    )
    assert isinstance(result.error, UnknownToolError)
    assert result.error.suggestions == ("get_time", "get_tile", "get_type")


def test_three_suggestions_read_as_a_list() -> None:
    reg = ToolRegistry()
    for name in ("find_a", "find_b", "find_c"):
        reg.register_tool(lambda: "x", name=name)
    result = reg.dispatch_tool("find_", "{}")
    assert result.content == (
        "Unknown tool 'find_'. Did you mean 'find_a', 'find_b' or 'find_c'? "
        "Available: find_a, find_b, find_c."
    )


def test_unknown_tool_without_close_match() -> None:
    result = make_registry().dispatch_tool("launch_rocket", "{}")
    assert result.content == (
        "Unknown tool 'launch_rocket'. Available: get_weather, now, delete_account."
    )
    assert isinstance(result.error, UnknownToolError)
    assert result.error.suggestions == ()


def test_empty_registry_says_no_tools() -> None:
    result = ToolRegistry().dispatch_tool("anything", "{}")
    assert result.content == "Unknown tool 'anything'. No tools are available."
    assert result.error_kind == "unknown_tool"


def test_a_long_catalog_is_not_listed_only_the_nearest_names() -> None:
    reg = ToolRegistry()
    for i in range(25):
        reg.register_tool(lambda: "x", name=f"tool_{i:02d}")
    result = reg.dispatch_tool("zzz", "{}")
    assert result.content == (
        "Unknown tool 'zzz'. Call one of the tools you were offered, by its exact name."
    )
    near = reg.dispatch_tool("tool_1", "{}")
    assert near.content == "Unknown tool 'tool_1'. Did you mean 'tool_01', 'tool_10' or 'tool_11'?"
    assert near.content.endswith("?")  # the nearest names, and no list
    assert len(near.content) < 120


def test_name_is_matched_exactly() -> None:
    reg = make_registry()
    for name in ("GET_WEATHER", " get_weather", "get_weather ", "get_weather\n"):
        result = reg.dispatch_tool(name, '{"city": "x"}')
        assert result.error_kind == "unknown_tool", name


def test_no_reflection_names_resolve() -> None:
    reg = make_registry()
    for name in ("__init__", "dispatch_tool", "os.system", "__import__", "eval", "print"):
        assert reg.dispatch_tool(name, "{}").error_kind == "unknown_tool"


# -- allowed= ------------------------------------------------------------------------------


def test_allowed_runs_a_permitted_tool() -> None:
    result = make_registry().dispatch_tool(
        "get_weather", '{"city": "Oslo"}', allowed=["get_weather", "now"]
    )
    assert result.ok
    assert result.content == "sunny in Oslo"


def test_not_allowed_is_answered_exactly_like_unknown() -> None:
    """A registered but not allowed tool must look like it does not exist at all."""
    reg = make_registry()
    hidden = reg.dispatch_tool("delete_account", '{"user": "bob"}', allowed=["get_weather"])
    assert not hidden.ok
    assert hidden.error_kind == "unknown_tool"
    assert hidden.content == "Unknown tool 'delete_account'. Available: get_weather."

    only_weather = ToolRegistry()

    @only_weather.register_tool
    def get_weather(city: str) -> str:
        return city

    missing = only_weather.dispatch_tool("delete_account", '{"user": "bob"}')
    assert hidden.content == missing.content
    assert hidden.error_kind == missing.error_kind
    assert hidden.tool_name == missing.tool_name


def test_not_allowed_never_suggests_hidden_tools() -> None:
    result = make_registry().dispatch_tool("get_wether", "{}", allowed=["now"])
    assert result.content == "Unknown tool 'get_wether'. Available: now."
    assert isinstance(result.error, UnknownToolError)
    assert result.error.suggestions == ()


def test_allowed_empty_hides_everything() -> None:
    result = make_registry().dispatch_tool("get_weather", '{"city": "x"}', allowed=[])
    assert result.content == "Unknown tool 'get_weather'. No tools are available."


def test_allowed_as_single_string_is_one_name_not_characters() -> None:
    reg = ToolRegistry()
    reg.register_tool(lambda: "a", name="a")
    reg.register_tool(lambda: "ab", name="ab")
    # a plain `in` on the string "ab" would allow "a" (a substring) as well
    assert reg.dispatch_tool("ab", "{}", allowed="ab").ok
    denied = reg.dispatch_tool("a", "{}", allowed="ab")
    assert denied.error_kind == "unknown_tool"
    assert denied.content == "Unknown tool 'a'. Did you mean 'ab'? Available: ab."


def test_allowed_accepts_any_iterable_including_one_shot() -> None:
    reg = make_registry()
    assert reg.dispatch_tool("now", "{}", allowed=iter(["now"])).ok
    assert reg.dispatch_tool("now", "{}", allowed=(n for n in ["now"])).ok
    assert reg.dispatch_tool("now", "{}", allowed={"now": 1}).ok
    gone = reg.dispatch_tool("get_weather", "{}", allowed=iter(["now"]))
    assert gone.content == "Unknown tool 'get_weather'. Available: now."


def test_allowed_names_that_are_not_registered_are_ignored() -> None:
    result = make_registry().dispatch_tool("ghost", "{}", allowed=["ghost", "now"])
    assert result.content == "Unknown tool 'ghost'. Available: now."


def test_allowed_in_async_dispatch() -> None:
    reg = make_registry()
    result = asyncio.run(reg.adispatch_tool("delete_account", "{}", allowed=["now"]))
    assert result.content == "Unknown tool 'delete_account'. Available: now."


# -- untrusted names ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (None, "<NoneType>"),
        (123, "<int>"),
        (b"get_weather", "<bytes>"),
        (["get_weather"], "<list>"),
        ({"name": "get_weather"}, "<dict>"),
    ],
)
def test_non_string_names_are_unknown(name: object, shown: str) -> None:
    result = make_registry().dispatch_tool(name, '{"city": "x"}')  # type: ignore[arg-type]
    assert isinstance(result, ToolResult)
    assert not result.ok
    assert result.error_kind == "unknown_tool"
    assert result.content == (
        f"Unknown tool '{shown}'. Available: get_weather, now, delete_account."
    )
    assert result.tool_name == shown


def test_string_subclass_name_cannot_trick_the_lookup() -> None:
    class Sneaky(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    result = make_registry().dispatch_tool(Sneaky("anything"), '{"city": "x"}')
    assert result.error_kind == "unknown_tool"
    assert result.content.startswith("Unknown tool 'anything'.")


def test_very_long_name_is_cut() -> None:
    result = make_registry().dispatch_tool("x" * 10_000, "{}")
    shown = "x" * 64 + "..."
    assert result.content == (
        f"Unknown tool '{shown}'. Available: get_weather, now, delete_account."
    )
    assert result.tool_name == shown
    assert len(result.content) < 200


def test_name_of_exactly_64_characters_is_kept_whole() -> None:
    result = make_registry().dispatch_tool("y" * 64, "{}")
    assert result.tool_name == "y" * 64


def test_control_characters_are_replaced() -> None:
    result = make_registry().dispatch_tool("get_\x00weather\n\x1b[31m\u202e", "{}")
    assert result.tool_name == "get_?weather??[31m?"
    assert result.content == (
        "Unknown tool 'get_?weather??[31m?'. Did you mean 'get_weather'? "
        "Available: get_weather, now, delete_account."
    )
    assert all(ch.isprintable() for ch in result.content)


def test_unknown_is_answered_in_async_dispatch_too() -> None:
    result = asyncio.run(make_registry().adispatch_tool("get_wether", "{}"))
    assert result.content == (
        "Unknown tool 'get_wether'. Did you mean 'get_weather'? "
        "Available: get_weather, now, delete_account."
    )


def test_unknown_tool_keeps_call_id() -> None:
    result = make_registry().dispatch_tool("nope", "{}", call_id="call_7")
    assert result.call_id == "call_7"
    assert result.elapsed >= 0


def test_arguments_are_not_looked_at_for_unknown_tools() -> None:
    # invalid JSON for an unknown tool: the name is the problem the model must fix first
    result = make_registry().dispatch_tool("nope", "{not json")
    assert result.error_kind == "unknown_tool"


def test_unregistered_tool_becomes_unknown() -> None:
    reg = make_registry()
    reg.unregister("now")
    result = reg.dispatch_tool("now", "{}")
    assert result.content == ("Unknown tool 'now'. Available: get_weather, delete_account.")


def test_registries_are_independent() -> None:
    first, second = make_registry(), ToolRegistry()
    assert first.dispatch_tool("now", "{}").ok
    assert second.dispatch_tool("now", "{}").error_kind == "unknown_tool"


def test_module_level_dispatch_uses_the_default_registry() -> None:
    name = "test_dispatch_lookup_default_echo"

    @toolreg.register_tool(name=name)
    def echo(text: str) -> str:
        return text

    try:
        assert toolreg.dispatch_tool(name, '{"text": "hi"}').content == "hi"
        assert asyncio.run(toolreg.adispatch_tool(name, {"text": "yo"})).content == "yo"
        results = toolreg.dispatch_many([(name, {"text": "a"}), (name, {"text": "b"})])
        assert [r.content for r in results] == ["a", "b"]
        assert toolreg.dispatch_tool(name, "{}", allowed=[]).error_kind == "unknown_tool"
    finally:
        toolreg.default_registry.unregister(name)
    assert toolreg.dispatch_tool(name, '{"text": "hi"}').error_kind == "unknown_tool"


def test_long_registered_names_are_kept_whole_in_results() -> None:
    reg = ToolRegistry()
    name = "mcp." + "n" * 100  # MCP accepts up to 128 characters

    @reg.register_tool(name=name)
    def long_named(x: int) -> int:
        return x

    assert reg.dispatch_tool(name, {"x": 1}).tool_name == name
    failed = reg.dispatch_tool(name, {"x": "a"})
    assert failed.tool_name == name
    assert failed.content == (
        f"Invalid arguments for tool '{name}': x: expected integer, got string."
    )


def test_a_deferred_tool_is_never_listed_nor_suggested() -> None:
    """A deferred tool (`defer_loading=True`) is found by searching, never by an unknown-tool
    answer: not in the list, not as the nearest name (it still runs when called)."""
    reg = ToolRegistry()
    reg.register_tool(lambda: "x", name="get_weather")
    for i in range(30):
        reg.register_tool(lambda: "x", name=f"crm_update_{i}", defer_loading=True)
    result = reg.dispatch_tool("crm_updates_1", "{}")
    assert result.content == "Unknown tool 'crm_updates_1'. Available: get_weather."
    assert reg.dispatch_tool("crm_update_1", "{}").ok


@given(st.lists(st.text(alphabet="abcdefghij_", min_size=1, max_size=64), max_size=60))
@settings(max_examples=60, deadline=None)
def test_an_unknown_tool_answer_is_short_whatever_the_catalog(names: list[str]) -> None:
    reg = ToolRegistry()
    for name in dict.fromkeys(n for n in names if n[0] != "_"):
        reg.register_tool(lambda: "x", name=name)
    answer = reg.dispatch_tool("b" * 70, "{}").content
    assert len(answer) <= 420  # the name, three suggestions of 64, or a list of 240
