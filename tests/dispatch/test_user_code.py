"""User code is called from one place: `toolreg.dispatch.calling`, whatever calls it.

Each kind of user code (the tool, a converter, the `confirm` callback, a `result_filter`, a
conversation hook, `on_text`, `on_event`, a guardrail, a state store) records the toolreg
modules on its stack when it runs; the one module that hands control to the application
must be among them (for the conversation's callers: the first, on both drivers).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from toolreg import AsyncConversation, Conversation, Hooks, Tool, ToolRegistry
from toolreg.dispatch import Dispatcher
from toolreg.stores import MemoryStore
from toolreg.testing import ScriptedServer, text, tool_call

CALLING = "toolreg.dispatch.calling"


def toolreg_frames() -> list[str]:
    """The toolreg modules on the caller's stack, nearest first."""
    frame = sys._getframe(2)
    names = []
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("toolreg."):
            names.append(name)
        frame = frame.f_back
    return names


def test_the_tool_sync_and_under_a_time_limit() -> None:
    seen: dict[str, list[str]] = {}
    reg = ToolRegistry()

    @reg.register_tool
    def plain(x: int) -> int:
        """Plain."""
        seen["plain"] = toolreg_frames()
        return x

    @reg.register_tool(timeout=5)
    def limited(x: int) -> int:
        """In a thread of its own."""
        seen["limited"] = toolreg_frames()
        return x

    assert reg.dispatch_tool("plain", {"x": 1}).ok
    assert reg.dispatch_tool("limited", {"x": 1}).ok
    assert seen["plain"][0] == CALLING
    assert seen["limited"][0] == CALLING  # the thread runs a function of `calling`


@dataclass
class Range:
    low: int
    high: int

    def __post_init__(self) -> None:
        STACKS.append(toolreg_frames())
        if self.low > self.high:
            raise ValueError("low is above high")


STACKS: list[list[str]] = []


def test_converters_confirm_filter() -> None:
    STACKS.clear()
    reg = ToolRegistry()
    stacks: dict[str, list[str]] = {}

    def confirm(tool: Tool, args: dict[str, Any]) -> bool:
        stacks["confirm"] = toolreg_frames()
        return True

    def keep(value: Any) -> Any:
        stacks["filter"] = toolreg_frames()
        return value

    @reg.register_tool(destructive=True, result_filter=keep)
    def pick(span: Range) -> int:
        """Pick."""
        return span.low

    result = reg.dispatch_tool("pick", {"span": {"low": 1, "high": 2}}, confirm=confirm)
    assert result.ok, result.content
    assert CALLING in STACKS[0]  # the dataclass runs inside calling.convert
    assert stacks["confirm"][0] == CALLING
    assert stacks["filter"][0] == CALLING
    bad = reg.dispatch_tool("pick", {"span": {"low": 3, "high": 2}}, confirm=confirm)
    assert bad.error_kind == "invalid_arguments"
    assert "low is above high" in bad.content


def test_hooks_and_on_text() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    stacks: dict[str, list[str]] = {}

    def hook(name: str) -> Any:
        return lambda event: stacks.setdefault(name, toolreg_frames())

    hooks = Hooks(
        before_model_call=hook("before_model_call"),
        after_model_call=hook("after_model_call"),
        before_tool_call=hook("before_tool_call"),
        after_tool_call=hook("after_tool_call"),
    )
    with ScriptedServer([tool_call("get_weather", city="Oslo"), text("Sunny.")]) as server:
        chat = Conversation(
            server.client(),
            server.model,
            registry=reg,
            hooks=hooks,
            stream=True,
            on_text=lambda part: stacks.setdefault("on_text", toolreg_frames()),
        )
        assert chat.send("Weather in Oslo?").text == "Sunny."
    assert set(stacks) == {
        "before_model_call",
        "after_model_call",
        "before_tool_call",
        "after_tool_call",
        "on_text",
    }
    for name, frames in stacks.items():
        assert frames[0] == CALLING, name


class RecordingStore(MemoryStore):
    """A state store of the application's own: each method records its callers."""

    def __init__(self, stacks: dict[str, list[str]]) -> None:
        super().__init__()
        self.stacks = stacks

    def load(self, id: str) -> Any:
        self.stacks.setdefault("load", toolreg_frames())
        return super().load(id)

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        self.stacks.setdefault("save", toolreg_frames())
        return super().save(id, state, expected_version)

    async def aload(self, id: str) -> Any:
        self.stacks.setdefault("aload", toolreg_frames())
        return super().load(id)

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        self.stacks.setdefault("asave", toolreg_frames())
        return super().save(id, state, expected_version)


def _weather_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    return reg


def test_guardrails_on_event_and_the_state_store_sync() -> None:
    stacks: dict[str, list[str]] = {}

    def recorder(name: str) -> Any:
        return lambda event: stacks.setdefault(name, toolreg_frames()) and None

    with ScriptedServer([tool_call("get_weather", city="Oslo"), text("Sunny.")]) as server:
        chat = Conversation(
            server.client(),
            server.model,
            registry=_weather_registry(),
            input_guardrails=recorder("input_guardrail"),
            output_guardrails=recorder("output_guardrail"),
            on_event=recorder("on_event"),
            state_store=RecordingStore(stacks),
            conversation_id="c1",
        )
        assert chat.send("Weather in Oslo?").text == "Sunny."
    assert set(stacks) == {"input_guardrail", "output_guardrail", "on_event", "load", "save"}
    for name, frames in stacks.items():
        assert frames[0] == CALLING, name


def test_hooks_guardrails_on_event_and_the_state_store_async() -> None:
    import asyncio

    stacks: dict[str, list[str]] = {}

    def recorder(name: str) -> Any:
        async def record(event: Any) -> None:
            stacks.setdefault(name, toolreg_frames())

        return record

    hooks = Hooks(before_tool_call=recorder("before_tool_call"))
    with ScriptedServer([tool_call("get_weather", city="Oslo"), text("Sunny.")]) as server:
        chat = AsyncConversation(
            server.async_client(),
            server.model,
            registry=_weather_registry(),
            hooks=hooks,
            input_guardrails=recorder("input_guardrail"),
            on_event=recorder("on_event"),
            stream=True,
            on_text=recorder("on_text"),
            state_store=RecordingStore(stacks),
            conversation_id="c1",
        )
        assert asyncio.run(chat.send("Weather in Oslo?")).text == "Sunny."
    names = {"before_tool_call", "input_guardrail", "on_event", "on_text", "aload", "asave"}
    assert set(stacks) == names
    for name, frames in stacks.items():
        assert frames[0] == CALLING, name


def test_the_registry_holds_a_dispatcher_and_no_class_is_a_mixin() -> None:
    import toolreg

    reg = ToolRegistry(max_concurrency=3)
    assert isinstance(reg.dispatcher, Dispatcher)
    assert reg.settings is reg.dispatcher.settings
    assert reg.settings.max_concurrency == 3
    classes = [
        value
        for module in list(sys.modules.values())
        if getattr(module, "__name__", "").startswith("toolreg")
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__.startswith("toolreg")
    ]
    assert toolreg.ToolRegistry in classes
    assert [c.__name__ for c in classes if c.__name__.endswith("Mixin")] == []
    assert ToolRegistry.__mro__ == (ToolRegistry, object)


def test_an_async_tools_exception_carries_no_event_loop_context() -> None:
    """Run from sync code, an async tool's exception is its own: no "no running event loop"
    RuntimeError from toolreg's loop check hangs off it as its context."""
    from toolreg import ToolRegistry

    reg = ToolRegistry()

    @reg.register_tool
    async def fail() -> str:
        """Fail."""
        raise LookupError("gone")

    result = reg.dispatch_tool("fail", "{}")
    assert isinstance(result.exception, LookupError)
    context = result.exception.__context__
    assert not isinstance(context, RuntimeError), context
