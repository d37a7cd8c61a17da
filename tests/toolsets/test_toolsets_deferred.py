"""`toolreg.toolsets.deferred`: a toolset view that keeps deferred tools (`defer_loading=True`)
out of the offer until the model's `search_tools` call finds them, the same view a
conversation builds for itself (its `discovered` are the view's `found`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import ToolCall, ToolRegistry, UsageError
from toolreg.toolsets import SEARCH_TOOL, Deferred, StepContext, deferred, filtered

CALLS: list[str] = []


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_time(city: str) -> str:
        """The local time in a city."""
        CALLS.append("get_time")
        return "12:00"

    @registry.register_tool(defer_loading=True)
    def create_event(title: str, day: str) -> str:
        """Create a calendar event on a day."""
        CALLS.append("create_event")
        return f"created {title} on {day}"

    @registry.register_tool(defer_loading=True)
    def send_invoice(customer: str, amount: float) -> str:
        """Send an invoice to a customer."""
        CALLS.append("send_invoice")
        return "sent"

    return registry


def _names(tools: Any) -> list[str]:
    return [t.name for t in tools]


def test_deferred_tools_are_offered_once_a_search_finds_them() -> None:
    view = deferred(_registry())
    assert isinstance(view, Deferred)
    assert _names(view.offer(StepContext())) == ["get_time", SEARCH_TOOL]
    assert view.found == []

    result = view.dispatcher.dispatch_tool(SEARCH_TOOL, {"query": "calendar event"})

    assert result.ok, result.content
    assert "create_event" in result.content
    assert view.found[0] == "create_event"
    assert "create_event" in _names(view.offer(StepContext()))
    assert "create_event" in view.callable_names()


def test_a_deferred_tool_not_found_yet_is_answered_not_run() -> None:
    view = deferred(_registry())
    view.offer(StepContext())
    CALLS.clear()

    answer = view.answer(ToolCall("send_invoice", {"customer": "a", "amount": 1}, "c1"))

    assert answer is not None
    assert not answer.ok
    assert SEARCH_TOOL in answer.content
    assert CALLS == []
    assert view.answer(ToolCall("get_time", {"city": "Paris"}, "c2")) is None  # dispatch runs it


def test_a_search_answered_by_the_view_loads_what_it_finds() -> None:
    view = deferred(_registry())
    view.offer(StepContext())
    answer = view.answer(ToolCall(SEARCH_TOOL, json.dumps({"query": "invoice"}), "c1"))
    assert answer is not None
    assert answer.ok
    assert view.found == ["send_invoice"]
    assert view.answer(ToolCall("send_invoice", {"customer": "a", "amount": 1}, "c2")) is None


def test_restore_takes_a_saved_list_of_found_tools() -> None:
    view = deferred(_registry())
    view.restore(["send_invoice"])
    assert _names(view.offer(StepContext())) == ["get_time", "send_invoice", SEARCH_TOOL]


def test_without_deferred_tools_there_is_no_search_tool() -> None:
    view = deferred(filtered(_registry(), names=["get_time"]))
    assert _names(view.offer(StepContext())) == ["get_time"]
    assert view.get(SEARCH_TOOL) is None


def test_once_every_deferred_tool_is_found_the_search_tool_goes() -> None:
    view = deferred(_registry())
    view.restore(["create_event", "send_invoice"])
    assert SEARCH_TOOL not in _names(view.offer(StepContext()))


def test_a_tool_named_like_the_search_tool_is_refused_with_the_fix() -> None:
    registry = _registry()

    @registry.register_tool(name=SEARCH_TOOL)
    def mine(query: str) -> str:
        """Search something else."""
        return query

    view = deferred(registry)
    with pytest.raises(UsageError, match="rename that tool"):
        view.offer(StepContext())


def test_deferred_takes_toolsets_only() -> None:
    with pytest.raises(UsageError, match=r"deferred\(\) takes toolsets"):
        deferred(object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "arguments",
    [
        "{not json",
        "[1, 2]",
        '{"query": 7}',
        '{"query": ""}',
        '{"query": "   "}',
        '{"limit": 3}',
        json.dumps({"query": "x" * 20_000}),
        "[" * 5000 + "]" * 5000,
        json.dumps({"query": "event", "limit": 10**30}),
    ],
)
def test_a_hostile_search_call_is_a_short_refusal_with_an_example(arguments: str) -> None:
    view = deferred(_registry())
    view.offer(StepContext())
    answer = view.answer(ToolCall(SEARCH_TOOL, arguments, "c1"))
    assert answer is not None
    if not answer.ok:
        assert "e.g." in answer.content
        assert "Traceback" not in answer.content
    assert len(answer.content) < 2000
    assert len(view.found) <= 10


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=300), st.dictionaries(st.text(max_size=8), st.integers())))
def test_any_search_arguments_get_an_answer_never_an_exception(arguments: Any) -> None:
    view = deferred(_registry())
    view.offer(StepContext())
    answer = view.answer(ToolCall(SEARCH_TOOL, arguments, "c1"))
    assert answer is not None
    assert answer.tool_name == SEARCH_TOOL
    assert set(view.found) <= {"create_event", "send_invoice", "get_time"}
