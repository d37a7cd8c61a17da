"""Async hooks: AsyncConversation awaits them (a veto holds); Conversation refuses them.

The loop yields a `HookStep` and the driver calls the hook, so an `async def` hook is
awaited by the async driver, and a coroutine handed to the sync driver is a `UsageError`
naming the hook (closed, so no "never awaited" warning) instead of being ignored.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    Hooks,
    ToolCallReady,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls

MODEL = "scripted-model"
HOOKS = ("before_model_call", "after_model_call", "before_tool_call", "after_tool_call")


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

    @reg.register_tool(destructive=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    return reg


@pytest.fixture
def no_unawaited() -> Iterator[None]:
    """Fails the test if a coroutine was left unawaited (Python's RuntimeWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


def run_async(
    server: ScriptedServer, body: Callable[[AsyncConversation], Awaitable[Any]], **options: Any
) -> Any:
    async def main() -> Any:
        async with server.async_client() as client:
            return await body(AsyncConversation(client, MODEL, **options))

    return asyncio.run(main())


def script() -> list[Any]:
    return [tool_call("get_weather", city="Paris"), text("Sunny.")]


# -- the async driver awaits every kind of hook ---------------------------------------------


@pytest.mark.parametrize("hook", HOOKS)
def test_an_async_hook_of_every_kind_is_awaited(
    registry: ToolRegistry, ran: list[str], hook: str, no_unawaited: None
) -> None:
    seen: list[Any] = []

    async def record(event: Any) -> None:
        await asyncio.sleep(0)  # really suspends: only an awaited hook gets past it
        seen.append(event)

    with ScriptedServer(script()) as server:
        reply = run_async(
            server, lambda c: c.send("Weather?"), registry=registry, hooks=Hooks(**{hook: record})
        )
        server.assert_all_consumed()
    assert reply.text == "Sunny."
    assert ran == ["Paris"]
    expected = {"before_model_call": 2, "after_model_call": 2}.get(hook, 1)
    assert len(seen) == expected
    kinds = {
        "before_tool_call": "ToolCallReady",
        "after_tool_call": "ToolFinished",
        "before_model_call": "ModelCallEvent",
        "after_model_call": "ModelResponseEvent",
    }
    assert all(type(e).__name__ == kinds[hook] for e in seen)


@pytest.mark.parametrize(
    ("verdict", "message"),
    [
        (False, "Tool 'get_weather' was not run: the application blocked it."),
        ("Not allowed for Paris.", "Not allowed for Paris."),
    ],
)
def test_an_async_veto_holds(
    registry: ToolRegistry, ran: list[str], verdict: Any, message: str, no_unawaited: None
) -> None:
    async def veto(event: ToolCallReady) -> Any:
        await asyncio.sleep(0)
        return verdict if '"Paris"' in str(event.call.arguments) else None

    turn = tool_calls(call("get_weather", city="Paris"), call("get_weather", city="Oslo"))
    with ScriptedServer([turn, text("Oslo only.")]) as server:
        reply = run_async(
            server, lambda c: c.send("go"), registry=registry, hooks=Hooks(before_tool_call=veto)
        )
        body = server.assert_request(1, contains_tool_result="call_1")
    assert ran == ["Oslo"]  # Paris never ran
    vetoed, other = reply.tool_results
    assert (vetoed.ok, vetoed.error_kind, vetoed.content) == (False, "denied", message)
    assert other.content == "sunny in Oslo"
    answers = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert answers == [message, "sunny in Oslo"]


class AsyncVeto:
    """Not a coroutine function itself: its `__call__` is async."""

    async def __call__(self, event: ToolCallReady) -> bool:
        return False


async def _refuse(reason: str, event: ToolCallReady) -> str:
    return reason


@pytest.mark.parametrize(
    "veto",
    [AsyncVeto(), functools.partial(_refuse, "Refused."), lambda e: _refuse("Refused.", e)],
    ids=["async-call-method", "partial", "lambda-returning-coroutine"],
)
def test_an_async_veto_holds_whatever_callable_returns_it(
    registry: ToolRegistry, ran: list[str], veto: Any, no_unawaited: None
) -> None:
    with ScriptedServer(script()) as server:
        reply = run_async(
            server, lambda c: c.send("go"), registry=registry, hooks=Hooks(before_tool_call=veto)
        )
    assert ran == []
    assert reply.tool_results[0].error_kind == "denied"


@pytest.mark.parametrize("hook", HOOKS)
def test_an_async_hooks_exception_ends_the_turn_and_keeps_the_history(
    registry: ToolRegistry, hook: str, no_unawaited: None
) -> None:
    async def broken(event: Any) -> None:
        await asyncio.sleep(0)
        raise KeyError("hook bug")

    async def body(conv: AsyncConversation) -> Any:
        with pytest.raises(KeyError, match="hook bug"):
            await conv.send("go")
        return conv.messages

    with ScriptedServer(script()) as server:
        messages = run_async(
            server, body, registry=registry, hooks=Hooks(**{hook: broken}), system="S"
        )
    if hook == "after_tool_call":  # the call ran: kept, answered, so it never runs again
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    else:
        assert messages == [{"role": "system", "content": "S"}]


def test_async_after_tool_call_is_awaited_when_a_deferred_call_resumes(
    registry: ToolRegistry, ran: list[str], no_unawaited: None
) -> None:
    results: list[str] = []

    async def after(event: Any) -> None:
        await asyncio.sleep(0)
        results.append(event.result.content)

    async def body(conv: AsyncConversation) -> Any:
        paused = await conv.send("delete it")
        assert paused.stop_reason == "approval_required"
        assert results == []
        return await conv.resume({paused.pending[0].call_id: True})

    with ScriptedServer([tool_call("delete_file", path="/tmp/x"), text("Done.")]) as server:
        reply = run_async(
            server, body, registry=registry, confirm="defer", hooks=Hooks(after_tool_call=after)
        )
    assert ran == ["/tmp/x"]
    assert results == ["deleted"]
    assert reply.text == "Done."


def test_an_async_on_text_is_awaited_in_order(registry: ToolRegistry, no_unawaited: None) -> None:
    pieces: list[str] = []

    async def on_text(piece: str) -> None:
        await asyncio.sleep(0)
        pieces.append(piece)

    with ScriptedServer([text("Hello there, friend.")]) as server:
        reply = run_async(
            server, lambda c: c.send("hi"), registry=registry, stream=True, on_text=on_text
        )
    assert "".join(pieces) == "Hello there, friend." == reply.text


# -- the sync driver refuses them -----------------------------------------------------------


@pytest.mark.parametrize("hook", HOOKS)
def test_an_async_def_hook_on_the_sync_driver_fails_when_given(
    registry: ToolRegistry, hook: str
) -> None:
    async def audit(event: Any) -> None:
        return None

    with ScriptedServer([]) as server, pytest.raises(UsageError) as caught:
        Conversation(server.client(), MODEL, registry=registry, hooks=Hooks(**{hook: audit}))
    message = str(caught.value)
    assert f"hooks.{hook}=" in message
    assert "audit" in message
    assert "AsyncConversation" in message


@pytest.mark.parametrize("hook", HOOKS)
def test_a_coroutine_returned_to_the_sync_driver_is_a_usage_error(
    registry: ToolRegistry, ran: list[str], hook: str, no_unawaited: None
) -> None:
    async def veto(event: Any) -> bool:
        return False

    with ScriptedServer(script()) as server:
        conv = Conversation(
            server.client(),
            MODEL,
            registry=registry,
            system="S",
            hooks=Hooks(**{hook: lambda event: veto(event)}),
        )
        with pytest.raises(UsageError) as caught:
            conv.send("go")
    assert f"hooks.{hook}=" in str(caught.value)
    assert "returned coroutine" in str(caught.value)
    # a before_tool_call veto that cannot be read never lets the tool run
    assert ran == (["Paris"] if hook == "after_tool_call" else [])
    if hook == "after_tool_call":  # the call ran: kept, answered, so it never runs again
        assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool"]
    else:
        assert conv.messages == [{"role": "system", "content": "S"}]


def test_the_sync_driver_refuses_an_async_on_text(registry: ToolRegistry) -> None:
    async def on_text(piece: str) -> None:
        return None

    with ScriptedServer([]) as server, pytest.raises(UsageError, match=r"on_text=.*on_text"):
        Conversation(server.client(), MODEL, registry=registry, stream=True, on_text=on_text)


def test_an_on_text_returning_a_coroutine_to_the_sync_driver_is_a_usage_error(
    registry: ToolRegistry, no_unawaited: None
) -> None:
    async def show(piece: str) -> None:
        return None

    with ScriptedServer([text("Hello.")]) as server:
        conv = Conversation(
            server.client(), MODEL, registry=registry, stream=True, on_text=lambda p: show(p)
        )
        with pytest.raises(UsageError, match=r"on_text=.*returned coroutine"):
            conv.send("hi")
    assert conv.messages == []


def test_hooks_must_be_a_hooks_record(registry: ToolRegistry) -> None:
    hooks: Any = {"before_tool_call": print}
    with ScriptedServer([]) as server, pytest.raises(UsageError, match=r"toolreg\.Hooks, not dict"):
        Conversation(server.client(), MODEL, registry=registry, hooks=hooks)
