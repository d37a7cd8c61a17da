"""AsyncConversation over `openai.AsyncOpenAI`: the main cases, async tools included."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import pytest

from toolreg import AsyncConversation, ConversationError, Hooks, ToolRegistry
from toolreg.testing import (
    ScriptedServer,
    TurnLike,
    call,
    empty,
    error,
    text,
    tool_call,
    tool_calls,
)

MODEL = "scripted-model"
T = TypeVar("T")


def drive(
    script: Sequence[TurnLike],
    registry: ToolRegistry,
    body: Callable[[AsyncConversation], Awaitable[T]],
    **options: Any,
) -> tuple[T, list[dict[str, Any]]]:
    """Run `body(conversation)` on a fresh event loop against a scripted server."""

    async def main() -> T:
        async with server.async_client() as client:
            conv = AsyncConversation(client, MODEL, registry=registry, **options)
            return await body(conv)

    with ScriptedServer(script) as server:
        result = asyncio.run(main())
        server.assert_all_consumed()
        return result, list(server.requests)


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    async def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city (async)."""
        await asyncio.sleep(0)
        return {"city": city, "temp": 18}

    @reg.register_tool
    def add(a: int, b: int) -> int:
        """A sync tool under async dispatch."""
        return a + b

    return reg


def test_async_single_call(registry: ToolRegistry) -> None:
    async def body(conv: AsyncConversation) -> Any:
        reply = await conv.send("Weather in Paris?")
        return reply, conv.messages

    (reply, history), requests = drive(
        [tool_call("get_weather", city="Paris"), text("Sunny.")], registry, body, system="S"
    )
    assert reply.text == "Sunny."
    assert reply.tool_results[0].value == {"city": "Paris", "temp": 18}
    assert history == reply.messages
    assert requests[0]["tool_choice"] == "auto"
    assert requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"city": "Paris", "temp": 18}',
    }


def test_async_parallel_calls_run_concurrently() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    async def nap(n: int) -> int:
        await asyncio.sleep(0.3)
        return n

    script = [
        tool_calls(call("nap", n=1), call("nap", n=2), call("nap", n=3)),
        text("Rested."),
    ]

    async def body(conv: AsyncConversation) -> Any:
        started = time.perf_counter()
        reply = await conv.send("nap")
        return reply, time.perf_counter() - started

    (reply, elapsed), requests = drive(script, registry, body)
    assert elapsed < 0.8
    assert [r.content for r in reply.tool_results] == ["1", "2", "3"]
    answers = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_1", "call_2", "call_3"]


def test_async_sequential_when_not_parallel(registry: ToolRegistry) -> None:
    script = [tool_calls(call("add", a=1, b=2), call("get_weather", city="Oslo")), text("ok")]

    async def body(conv: AsyncConversation) -> Any:
        return await conv.send("go")

    reply, _ = drive(script, registry, body, parallel=False)
    assert [r.content for r in reply.tool_results] == ["3", '{"city": "Oslo", "temp": 18}']


def test_async_max_rounds_stream_and_usage(registry: ToolRegistry) -> None:
    deltas: list[str] = []
    script = [
        tool_call("add", a=1, b=2),
        tool_call("add", a=3, b=4),
        text("Three and seven."),
    ]

    async def body(conv: AsyncConversation) -> Any:
        return await conv.send("add things")

    reply, requests = drive(
        script, registry, body, max_rounds=2, stream=True, on_text=deltas.append
    )
    assert reply.stop_reason == "max_rounds"
    assert requests[2]["tool_choice"] == "none"
    assert all(r["stream"] is True for r in requests)
    assert "".join(deltas) == "Three and seven."
    assert reply.usage.total_tokens == 45


def test_async_return_direct_and_empty_fallback() -> None:
    registry = ToolRegistry()

    @registry.register_tool(return_direct=True)
    async def lookup(key: str) -> str:
        return f"value of {key}"

    @registry.register_tool
    async def probe() -> str:
        return "probed"

    async def body(conv: AsyncConversation) -> Any:
        return await conv.send("k?"), await conv.send("probe")

    script = [tool_call("lookup", key="k"), tool_call("probe"), empty(), text("Probed.")]
    (direct, fallback), requests = drive(script, registry, body)
    assert (direct.text, direct.stop_reason) == ("value of k", "return_direct")
    assert (fallback.text, fallback.stop_reason) == ("Probed.", "answer")
    assert requests[3]["tool_choice"] == "none"


def test_async_structured_output_with_retry(registry: ToolRegistry) -> None:
    async def body(conv: AsyncConversation) -> Any:
        return await conv.send("number", output_type=int)

    reply, requests = drive([text('{"result": "x"}'), text('{"result": 7}')], registry, body)
    assert reply.output == 7
    assert requests[1]["messages"][-1]["role"] == "user"


def test_async_confirm_may_be_async() -> None:
    registry = ToolRegistry()
    deleted: list[str] = []

    @registry.register_tool(destructive=True)
    async def delete_file(path: str) -> str:
        deleted.append(path)
        return "deleted"

    async def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        await asyncio.sleep(0)
        return bool(arguments["path"] == "/tmp/x")

    async def body(conv: AsyncConversation) -> Any:
        return await conv.send("delete")

    script = [
        tool_calls(call("delete_file", path="/tmp/x"), call("delete_file", path="/etc")),
        text("ok"),
    ]
    reply, _ = drive(script, registry, body, confirm=confirm, context={"user": "ann"})
    assert deleted == ["/tmp/x"]
    assert [r.error_kind for r in reply.tool_results] == [None, "denied"]


def test_async_hooks_and_veto(registry: ToolRegistry) -> None:
    seen: list[str] = []

    def veto(event: Any) -> Any:
        seen.append(event.call.name)
        return "No adding today."

    async def body(conv: AsyncConversation) -> Any:
        return await conv.send("go")

    hooks = Hooks(before_tool_call=veto, after_tool_call=lambda e: seen.append(e.result.content))
    reply, _ = drive([tool_call("add", a=1, b=2), text("ok")], registry, body, hooks=hooks)
    assert seen == ["add", "No adding today."]
    assert reply.tool_results[0].error_kind == "denied"


def test_async_endpoint_error_keeps_history(registry: ToolRegistry) -> None:
    async def body(conv: AsyncConversation) -> Any:
        await conv.send("hi")
        before = list(conv.messages)
        with pytest.raises(ConversationError) as caught:
            await conv.send("again")
        return caught.value, before, conv.messages

    script = [text("Hello."), tool_call("add", a=1, b=2), error(500, "Boom")]
    (exc, before, after), _ = drive(script, registry, body)
    assert exc.status_code == 500
    assert "Boom" in str(exc)
    # `add` ran before the endpoint failed: kept with its result (it never runs again)
    assert after[: len(before)] == before
    assert [m["role"] for m in after[len(before) :]] == ["user", "assistant", "tool"]
