"""Hooks: the four events, vetoes, exceptions, and logging at DEBUG only."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from toolreg import (
    Conversation,
    Hooks,
    ModelCallEvent,
    ModelResponseEvent,
    ToolCallReady,
    ToolFinished,
    ToolRegistry,
)
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls

MODEL = "scripted-model"


@pytest.fixture
def ran() -> list[str]:
    return []


@pytest.fixture
def registry(ran: list[str]) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        ran.append(city)
        return f"sunny in {city}"

    return reg


def recording_hooks(events: list[tuple[str, Any]], **overrides: Any) -> Hooks:
    def record(name: str) -> Any:
        return lambda event: events.append((name, event))

    names = ("before_model_call", "after_model_call", "before_tool_call", "after_tool_call")
    return Hooks(**{name: overrides.get(name, record(name)) for name in names})


def test_all_four_hooks_receive_their_events_in_order(registry: ToolRegistry) -> None:
    events: list[tuple[str, Any]] = []
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        conv = Conversation(
            server.client(), MODEL, registry=registry, hooks=recording_hooks(events)
        )
        reply = conv.send("Weather?")
    assert [name for name, _ in events] == [
        "before_model_call",
        "after_model_call",
        "before_tool_call",
        "after_tool_call",
        "before_model_call",
        "after_model_call",
    ]
    (_, before1), (_, after1), (_, tool), (_, result), (_, before2), (_, after2) = events
    assert isinstance(before1, ModelCallEvent)
    assert before1.round == 1
    assert before1.request["model"] == MODEL
    assert before1.request["messages"] == [{"role": "user", "content": "Weather?"}]
    assert before1.request["tool_choice"] == "auto"
    assert isinstance(after1, ModelResponseEvent)
    assert (after1.round, after1.finish_reason) == (1, "tool_calls")
    assert after1.message["tool_calls"][0]["id"] == "call_1"
    assert isinstance(tool, ToolCallReady)
    assert (tool.round, tool.call.name, tool.call.call_id) == (1, "get_weather", "call_1")
    assert tool.call.arguments == '{"city": "Paris"}'
    assert isinstance(result, ToolFinished)
    assert result.result is reply.tool_results[0]
    assert (result.round, result.call) == (1, tool.call)  # the stream's event, with its round
    assert tool.early is False
    assert before2.round == 2
    assert len(before2.request["messages"]) == 3
    assert (after2.message["content"], after2.finish_reason) == ("Sunny.", "stop")


def test_a_model_call_event_keeps_the_messages_of_its_own_call(registry: ToolRegistry) -> None:
    requests: list[ModelCallEvent] = []
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        hooks = Hooks(before_model_call=requests.append)
        Conversation(server.client(), MODEL, registry=registry, hooks=hooks).send("go")
    assert [len(e.request["messages"]) for e in requests] == [1, 3]


@pytest.mark.parametrize(
    ("verdict", "message"),
    [
        (False, "Tool 'get_weather' was not run: the application blocked it."),
        ("Not allowed for Paris.", "Not allowed for Paris."),
    ],
)
def test_before_tool_call_can_veto(
    registry: ToolRegistry, ran: list[str], verdict: Any, message: str
) -> None:
    def veto(event: ToolCallReady) -> Any:
        return verdict if '"Paris"' in str(event.call.arguments) else None

    turn = tool_calls(call("get_weather", city="Paris"), call("get_weather", city="Oslo"))
    events: list[tuple[str, Any]] = []
    with ScriptedServer([turn, text("Oslo only.")]) as server:
        hooks = recording_hooks(events, before_tool_call=veto)
        reply = Conversation(server.client(), MODEL, registry=registry, hooks=hooks).send("go")
        body = server.assert_request(1, contains_tool_result="call_1")
    assert ran == ["Oslo"]
    vetoed, other = reply.tool_results
    assert (vetoed.ok, vetoed.error_kind, vetoed.content) == (False, "denied", message)
    assert vetoed.call_id == "call_1"
    assert other.content == "sunny in Oslo"
    answers = [m for m in body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2"]
    assert answers[0]["content"] == message
    # after_tool_call sees the refused call too
    assert [e.result.call_id for n, e in events if n == "after_tool_call"] == ["call_1", "call_2"]


@pytest.mark.parametrize(
    "hook", ["before_model_call", "after_model_call", "before_tool_call", "after_tool_call"]
)
def test_hook_exceptions_propagate_and_leave_the_history_alone_until_a_call_ran(
    registry: ToolRegistry, hook: str
) -> None:
    def broken(event: Any) -> None:
        raise KeyError("hook bug")

    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        conv = Conversation(
            server.client(), MODEL, registry=registry, hooks=Hooks(**{hook: broken}), system="S"
        )
        with pytest.raises(KeyError, match="hook bug"):
            conv.send("go")
    if hook == "after_tool_call":  # the call ran: kept with its result, never run again
        assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool"]
        assert [r.outcome for r in conv.turn_results] == ["completed"]
    else:
        assert conv.messages == [{"role": "system", "content": "S"}]
        assert conv.turn_results == []


def test_logging_is_debug_only(registry: ToolRegistry, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolreg")
    with ScriptedServer([tool_call("get_weather", city="Paris"), text("Sunny.")]) as server:
        Conversation(server.client(), MODEL, registry=registry).send("go")
    mine = [r for r in caplog.records if r.name.startswith("toolreg")]
    assert mine
    assert {r.levelno for r in mine} == {logging.DEBUG}


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("toolreg", "ToolCallEvent", ToolCallReady),
        ("toolreg", "ToolResultEvent", ToolFinished),
        ("toolreg.conversation", "ToolCallEvent", ToolCallReady),
        ("toolreg.conversation", "ToolResultEvent", ToolFinished),
    ],
)
def test_the_old_hook_event_names_are_deprecated_aliases(module: str, old: str, new: type) -> None:
    """One event family: the hooks get the stream's events. The old names still import, as
    the same classes (their fields, `round` and `call` / `result`, are there), with a
    DeprecationWarning naming the new one and the release that removes them."""
    import importlib

    loaded = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{old} is .*{new.__name__}.*removed in 0\.3"):
        alias = getattr(loaded, old)
    assert alias is new
    assert old not in getattr(loaded, "__all__", ())
    assert old not in vars(loaded)  # warned at every use, never bound


def test_a_name_that_never_was_is_still_an_attribute_error() -> None:
    import toolreg.conversation

    with pytest.raises(AttributeError, match="NoSuchEvent"):
        toolreg.conversation.NoSuchEvent
