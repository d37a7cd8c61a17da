"""`search_tools(step=...)` searches only what `offer(step)` gives, on every kind of toolset;
and a history is read through the provider of its wire format (`history_reader`): which
tools were called since the person last wrote, and what the person wrote."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import StepContext, Tool, ToolRegistry, UsageError, combined, prefixed, searchable
from toolreg.conversation import history_reader
from toolreg.dispatch import DispatchSettings
from toolreg.toolsets import BaseToolset, HistoryReader


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def list_orders(user: str) -> str:
        """List the orders of a user account."""
        return "[]"

    @registry.register_tool(tags={"admin"})
    def delete_account(user: str) -> str:
        """Delete a user account permanently."""
        return "deleted"

    return registry


class PerUser(BaseToolset):
    label = "per-user tools"

    def __init__(self, inner: ToolRegistry) -> None:
        super().__init__()
        self.inner = inner

    @property
    def revision(self) -> int:
        return self.inner.revision

    def tools(self) -> list[Tool]:
        return self.inner.tools()

    def get(self, name: str) -> Tool | None:
        return self.inner.get(name)

    def dispatch_settings(self) -> DispatchSettings:
        return self.inner.settings

    def offer(self, step: StepContext) -> list[Tool]:
        return [t for t in self.inner.tools() if step.context == "admin" or "admin" not in t.tags]


def _names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


BOB, ADMIN = StepContext(context="bob"), StepContext(context="admin")


def test_a_toolset_of_ones_own_searches_only_what_a_step_offers() -> None:
    toolset = PerUser(_registry())
    assert "delete_account" in _names(toolset.search_tools("delete user account"))
    assert _names(toolset.search_tools("delete user account", step=BOB)) == ["list_orders"]
    assert "delete_account" in _names(toolset.search_tools("delete user account", step=ADMIN))
    assert toolset.search_tools("delete", step=BOB, among=["delete_account"]) == []


@pytest.mark.parametrize(
    "view",
    [
        lambda t: prefixed(t, "shop"),
        lambda t: combined(t),
        lambda t: searchable(t, limit=1),
    ],
    ids=["prefixed", "combined", "searchable"],
)
def test_every_view_searches_only_what_its_parts_offer_the_step(view: Any) -> None:
    toolset = view(PerUser(_registry()))
    found = _names(toolset.search_tools("delete user account", step=BOB))
    assert not any(name.endswith("delete_account") for name in found)
    found = _names(toolset.search_tools("delete user account", step=ADMIN))
    assert any(name.endswith("delete_account") for name in found)


def test_a_registry_offers_every_tool_so_a_step_changes_nothing() -> None:
    registry = _registry()
    everything = _names(registry.search_tools("user account"))
    assert _names(registry.search_tools("user account", step=BOB)) == everything


# -- reading a history through its provider --------------------------------------------------

CHAT = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": None, "tool_calls": [_c := {
        "id": "a", "type": "function", "function": {"name": "old", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "x"},
    {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image_url"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
        {"id": "c", "type": "function", "function": {"name": "send_email", "arguments": "{}"}},
    ]},
    {"role": "tool", "tool_call_id": "b", "content": "sunny"},
    {"role": "tool", "tool_call_id": "c", "content": "sent"},
]  # fmt: skip
RESPONSES = [
    {"role": "user", "content": "first question"},
    {"type": "function_call", "call_id": "a", "name": "old", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "a", "output": "x"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "second"}]},
    {"type": "function_call", "call_id": "b", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call", "call_id": "c", "namespace": "mail", "name": "send", "arguments": ""},
    {"type": "function_call_output", "call_id": "b", "output": "sunny"},
]
ANTHROPIC = [
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "old", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
    {"role": "user", "content": [{"type": "text", "text": "second"}]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "let me look"},
        {"type": "tool_use", "id": "b", "name": "get_weather", "input": {}},
        {"type": "tool_use", "id": "c", "name": "send_email", "input": {}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "b", "content": "sunny"},
        {"type": "tool_result", "tool_use_id": "c", "content": "sent"},
    ]},
]  # fmt: skip


@pytest.mark.parametrize(
    ("dialect", "history", "called"),
    [
        ("tools", CHAT, ["get_weather", "send_email"]),
        ("responses", RESPONSES, ["get_weather", "mail_send"]),
        ("anthropic", ANTHROPIC, ["get_weather", "send_email"]),
    ],
)
def test_each_provider_reads_its_own_history(
    dialect: str, history: list[dict[str, Any]], called: list[str]
) -> None:
    reader = history_reader(dialect)
    assert isinstance(reader, HistoryReader)
    assert reader.calls_in(history) == called  # since "second", in order
    texts = [reader.user_text(entry) for entry in history]
    assert [t for t in texts if t is not None] == ["first question", "second"]


def test_a_history_reader_is_one_of_the_dialects() -> None:
    with pytest.raises(UsageError, match="'tools'"):
        history_reader("smoke-signals")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["user", "assistant", "tool", "system", 5]),
        "type": st.sampled_from(["message", "function_call", "tool_search_call", None]),
        "content": _JSON,
        "tool_calls": _JSON,
        "function_call": _JSON,
        "name": _JSON,
        "arguments": _JSON,
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_ENTRY | _JSON, max_size=8), st.sampled_from(["tools", "responses", "anthropic"]))
def test_a_malformed_history_is_read_without_raising(history: list[Any], dialect: str) -> None:
    """A history is data (restored from a state, written by the application): whatever is
    in it, reading it never raises and gives names and texts only."""
    reader = history_reader(dialect)
    assert all(isinstance(name, str) for name in reader.calls_in(history))
    for entry in history:
        if isinstance(entry, dict):
            assert isinstance(reader.user_text(entry), (str, type(None)))
