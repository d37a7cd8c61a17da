"""Toolsets: the registry as one, and the views `filtered`, `prefixed`, `combined`,
`searchable`; dispatch, search and names through them."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import pytest

from toolreg import (
    StepContext,
    Tool,
    ToolContext,
    ToolRegistry,
    Toolset,
    UsageError,
    combined,
    filtered,
    prefixed,
    searchable,
)
from toolreg.conversation import history_reader
from toolreg.dispatch import DispatchSettings
from toolreg.toolsets import BaseToolset


def _weather() -> ToolRegistry:
    registry = ToolRegistry(errors="mask")

    @registry.register_tool(tags=["read"])
    def get_weather(city: Annotated[str, "City name"]) -> str:
        """Current weather of a city: temperature, rain and wind."""
        return f"sunny in {city}"

    @registry.register_tool(destructive=True)
    def delete_city(city: str) -> str:
        """Remove a city from the saved list."""
        return "deleted"

    return registry


def _maths() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(tags=["read"])
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.register_tool
    def fail(message: str) -> str:
        """Always fails."""
        raise RuntimeError(message)

    return registry


def _names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def test_the_registry_is_a_toolset() -> None:
    registry = _weather()
    assert isinstance(registry, Toolset)
    before = registry.revision
    assert _names(registry.offer(StepContext())) == ["get_weather", "delete_city"]

    @registry.register_tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert registry.revision > before
    after = registry.revision
    registry.unregister("ping")
    assert registry.revision > after


def test_prefixed_names_and_calls() -> None:
    view = prefixed(_maths(), "calc")
    assert _names(view.tools()) == ["calc_add", "calc_fail"]
    assert view.get("add") is None
    assert view.get("calc_") is None
    assert "calc_add" in view
    assert "add" not in view
    result = view.dispatcher.dispatch_tool("calc_add", '{"a": 2, "b": "3"}')
    assert (result.ok, result.content, result.tool_name) == (True, "5", "calc_add")
    unknown = view.dispatcher.dispatch_tool("add", "{}")
    assert not unknown.ok
    assert "calc_add" in unknown.content
    # the same renamed Tool each time: caches and the search index keep it
    assert view.get("calc_add") is view.tools()[0]


def test_a_prefixed_toolset_is_one_responses_namespace() -> None:
    from _sdk_shapes import conforms
    from openai.types.responses import NamespaceToolParam

    from toolreg.formats import responses

    view = prefixed(_maths(), "calc")
    namespace = view.namespace("Arithmetic.")
    assert conforms(namespace, NamespaceToolParam) == []
    assert (namespace["name"], namespace["description"]) == ("calc", "Arithmetic.")
    assert [t["name"] for t in namespace["tools"]] == ["add", "fail"]
    item = {"type": "function_call", "namespace": "calc", "name": "add", "call_id": "c1"}
    (call,) = responses.parse_calls([{**item, "arguments": '{"a": 2, "b": 3}'}])
    result = view.dispatcher.dispatch_tool(call.name, call.arguments)
    assert (result.ok, result.content, result.tool_name) == (True, "5", "calc_add")
    with pytest.raises(UsageError, match="a description"):
        view.namespace("  ")


def test_prefixed_respects_provider_name_rules() -> None:
    registry = ToolRegistry()
    registry.register_schema("x" * 60, {"type": "object"}, lambda: "ok", description="Long.")
    with pytest.raises(UsageError, match=r"'long_x+' is not a valid openai tool name"):
        prefixed(registry, "long")
    assert _names(prefixed(registry, "ab").tools()) == ["ab_" + "x" * 60]
    for bad in ("", "9lives", "a b", "é", "a.b", "x" * 64, None):
        with pytest.raises(UsageError, match="prefix"):
            prefixed(registry, bad)  # type: ignore[arg-type]


def test_prefixed_leaves_out_a_later_tool_it_cannot_name(caplog: Any) -> None:
    registry = _maths()
    view = prefixed(registry, "ab")
    registry.register_schema("y" * 62, {"type": "object"}, lambda: "ok", description="Long.")
    with caplog.at_level(logging.WARNING, logger="toolreg.toolsets"):
        assert _names(view.tools()) == ["ab_add", "ab_fail"]
    assert "leaves out the tool 'yyyy" in caplog.text


def test_filtered_by_predicate_names_and_tags() -> None:
    registry = _weather()
    safe = filtered(registry, lambda tool: not tool.destructive)
    assert _names(safe.tools()) == ["get_weather"]
    assert safe.get("delete_city") is None
    denied = safe.dispatcher.dispatch_tool("delete_city", '{"city": "Oslo"}')
    assert not denied.ok
    assert "Unknown tool 'delete_city'" in denied.content
    assert _names(filtered(registry, names=["delete_city"]).tools()) == ["delete_city"]
    assert _names(filtered(registry, tags=["read"]).tools()) == ["get_weather"]


def test_filtered_refuses_what_it_cannot_find() -> None:
    registry = _weather()
    with pytest.raises(UsageError, match=r"has no tool 'get_wether' \(it has: delete_city"):
        filtered(registry, names=["get_wether"])
    with pytest.raises(UsageError, match="has no tag 'write'"):
        filtered(registry, tags=["write"])
    with pytest.raises(UsageError, match="exactly one of"):
        filtered(registry)
    with pytest.raises(UsageError, match="exactly one of"):
        filtered(registry, lambda t: True, names=["get_weather"])
    with pytest.raises(UsageError, match="a list of strings"):
        filtered(registry, names="get_weather")
    with pytest.raises(UsageError, match="takes toolsets"):
        filtered({"get_weather": None}, names=["get_weather"])  # type: ignore[arg-type]


def test_combined_offers_both_and_dispatches_under_the_first_ones_settings() -> None:
    weather, maths = _weather(), _maths()
    both = combined(weather, prefixed(maths, "calc"))
    assert _names(both.tools()) == ["get_weather", "delete_city", "calc_add", "calc_fail"]
    assert both.dispatcher.dispatch_tool("get_weather", '{"city": "Oslo"}').content == (
        "sunny in Oslo"
    )
    masked = both.dispatcher.dispatch_tool("calc_fail", '{"message": "disk on fire"}')
    assert not masked.ok
    assert "disk on fire" not in masked.content
    shown = combined(maths, weather).dispatcher.dispatch_tool("fail", '{"message": "on fire"}')
    assert not shown.ok
    assert "RuntimeError: on fire" in shown.content
    # the dispatcher follows the first part's registry, not a copy of it
    assert both.dispatcher.settings is weather.settings
    assert isinstance(both.dispatcher.settings, DispatchSettings)


def test_a_name_clash_is_an_error_at_composition() -> None:
    weather, other = _weather(), ToolRegistry()

    @other.register_tool
    def get_weather(city: str) -> str:
        """Another weather."""
        return "rain"

    with pytest.raises(UsageError) as raised:
        combined(weather, prefixed(_maths(), "m"), other)
    message = str(raised.value)
    assert "'get_weather'" in message
    assert "ToolRegistry (get_weather, delete_city)" in message
    assert "ToolRegistry (get_weather)" in message
    assert "prefix" in message
    with pytest.raises(UsageError, match="given twice"):
        combined(weather, weather)
    with pytest.raises(UsageError, match="at least one"):
        combined()
    with pytest.raises(UsageError, match="takes toolsets"):
        combined(weather, [])  # type: ignore[arg-type]


def test_a_later_clash_keeps_the_first_tool_and_says_so(caplog: Any) -> None:
    weather, maths = _weather(), _maths()
    both = combined(weather, maths)
    maths.register_schema("get_weather", {"type": "object"}, lambda: "rain", description="x")
    with caplog.at_level(logging.WARNING, logger="toolreg.toolsets"):
        assert _names(both.tools()).count("get_weather") == 1
    assert both.get("get_weather") is weather.get("get_weather")
    assert "both have a tool named 'get_weather'" in caplog.text


def test_views_follow_their_parts() -> None:
    weather, maths = _weather(), _maths()
    both = combined(weather, prefixed(maths, "calc"))
    revision = both.revision

    @maths.register_tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    assert both.revision > revision
    assert "calc_multiply" in both
    assert both.dispatcher.dispatch_tool("calc_multiply", {"a": 6, "b": 7}).content == "42"
    maths.unregister("multiply")
    assert "calc_multiply" not in both


def test_search_over_a_combined_toolset_follows_changes() -> None:
    weather, maths = _weather(), _maths()
    both = combined(weather, prefixed(maths, "calc"))
    assert _names(both.search_tools("temperature and rain in a city", limit=1)) == ["get_weather"]
    assert _names(both.search_tools("add integers", limit=1)) == ["calc_add"]
    assert both.search_tools("translate a sentence") == []

    @maths.register_tool
    def translate(text: str, language: str) -> str:
        """Translate a sentence into another language."""
        return text

    assert _names(both.search_tools("translate a sentence", limit=1)) == ["calc_translate"]
    maths.unregister("translate")
    assert both.search_tools("translate a sentence") == []
    assert _names(both.search_tools("integers", among=["get_weather"])) == []
    with pytest.raises(UsageError, match="query string"):
        both.search_tools(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="limit"):
        both.search_tools("x", limit=-1)


def test_searchable_offers_the_best_matches_and_runs_any() -> None:
    weather, maths = _weather(), _maths()
    view = searchable(combined(weather, maths), limit=1, always=["fail"])
    history = [{"role": "user", "content": "Please add 2 and 3"}]
    step = StepContext(history=history, reader=history_reader("tools"))
    assert _names(view.offer(step)) == ["add", "fail"]
    with pytest.raises(UsageError, match=r"needs reader=.*history_reader\('tools'\)"):
        view.offer(StepContext(history=history))  # a history in no known wire format
    assert _names(view.offer(StepContext())) == ["fail"]  # no question: the `always` ones
    assert view.dispatcher.dispatch_tool("get_weather", {"city": "Rome"}).ok
    with pytest.raises(UsageError, match="limit"):
        searchable(weather, limit=0)


class _PerUser(BaseToolset):
    """A toolset of one's own: an admin is offered more."""

    label = "per-user tools"

    def __init__(self, registry: ToolRegistry) -> None:
        super().__init__()
        self.registry = registry

    @property
    def revision(self) -> int:
        return self.registry.revision

    def tools(self) -> list[Tool]:
        return self.registry.tools()

    def get(self, name: str) -> Tool | None:
        return self.registry.get(name)

    def dispatch_settings(self) -> DispatchSettings:
        return self.registry.settings

    def offer(self, step: StepContext) -> list[Tool]:
        admin = isinstance(step.context, dict) and step.context.get("admin") is True
        return [t for t in self.tools() if admin or not t.destructive]


def test_a_toolset_of_ones_own_composes() -> None:
    view = prefixed(_PerUser(_weather()), "w")
    assert isinstance(view.inner, Toolset)
    assert _names(view.offer(StepContext(context={"admin": False}))) == ["w_get_weather"]
    assert _names(view.offer(StepContext(context={"admin": True}))) == [
        "w_get_weather",
        "w_delete_city",
    ]
    assert "per-user tools" in repr(view)
    assert _names(view.search_tools("remove a saved city", limit=1)) == ["w_delete_city"]


def test_context_reaches_tools_through_views() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def whoami(ctx: ToolContext[dict[str, str]]) -> str:
        """Who is asking."""
        return ctx.deps["user"]

    view = combined(prefixed(registry, "me"))
    result = view.dispatcher.dispatch_tool("me_whoami", "{}", context={"user": "ada"})
    assert (result.ok, result.content) == (True, "ada")
    forged = view.dispatcher.dispatch_tool("me_whoami", '{"ctx": {"user": "mallory"}}', context={})
    assert not forged.ok
