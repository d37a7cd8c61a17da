"""toolreg.adapters.agents: a toolreg toolset inside the OpenAI Agents SDK's own Runner, and
an SDK function tool inside a toolreg registry.

Every run is the SDK's `Runner` with `OpenAIChatCompletionsModel` (or the Responses model)
on an `AsyncOpenAI` client bound to a `ScriptedServer` on 127.0.0.1; tracing is disabled,
so nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    FunctionTool,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunContextWrapper,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.tool_context import ToolContext as AgentsToolContext
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import (
    MissingContextError,
    ToolContext,
    ToolDefinitionError,
    ToolRegistry,
    UsageError,
)
from toolreg.adapters.agents import from_function_tool, function_tools
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls

set_tracing_disabled(True)  # the SDK's trace exporter would post to OpenAI


def _tool_messages(history: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in history if m.get("role") == "tool"}


@pytest.fixture
def calls() -> list[tuple[Any, ...]]:
    return []


@pytest.fixture
def registry(calls: list[tuple[Any, ...]]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def add(a: int, b: int, ctx: ToolContext[str]) -> int:
        """Add two whole numbers."""
        calls.append(("add", a, b, ctx.deps, ctx.call_id))
        return a + b

    @registry.register_tool(destructive=True)
    def delete(path: str) -> str:
        """Delete a file."""
        calls.append(("delete", path))
        return f"deleted {path}"

    @registry.register_tool
    def read(path: str) -> str:
        """Read a file."""
        raise OSError(f"cannot open /srv/data/{path}: token sk-abc123def456ghi789jkl012")

    return registry


def _run(server: ScriptedServer, tools: list[FunctionTool], prompt: Any, **kw: Any) -> Any:
    async def go() -> Any:
        async with server.async_client() as client:
            model = OpenAIChatCompletionsModel(model="m", openai_client=client)
            agent = Agent(name="helper", model=model, tools=tools)
            return await Runner.run(agent, prompt, **kw)

    return asyncio.run(go())


def test_the_runner_runs_toolreg_dispatch_with_coerced_arguments_and_the_runs_context(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    script = [
        tool_call("add", a="2", b=3),
        tool_calls(call("add", a="x", c=1), call("read", path="notes")),
        text("5"),
    ]
    with ScriptedServer(script) as server:
        result = _run(server, function_tools(registry), "2 + 3?", context="alice")
        assert result.final_output == "5"
        server.assert_all_consumed()
        sent = [t["function"] for t in server.requests[0]["tools"]]
        history = server.history(2)
    assert calls == [("add", 2, 3, "alice", "call_1")]
    exported = [t["function"] for t in registry.get_tools()]
    assert [{**f, "strict": False} for f in exported] == sent
    answers = _tool_messages(history)
    assert answers["call_1"] == "5"
    # a bad call's answer is toolreg's message, as the tool's output (not raised)
    assert answers["call_2"] == (
        "Invalid arguments for tool 'add':\n- missing required property 'b'\n"
        "- a: expected integer, got string\n- unexpected property 'c'"
    )
    assert answers["call_3"] == (
        "Tool 'read' failed: OSError: cannot open [redacted]: token [redacted]"
    )


def test_the_responses_model_works_the_same(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    async def go(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            model = OpenAIResponsesModel(model="m", openai_client=client)
            agent = Agent(name="helper", model=model, tools=function_tools(registry))
            return await Runner.run(agent, "2 + 3?", context="bob")

    with ScriptedServer([tool_call("add", a=2, b="3"), text("5")]) as server:
        assert asyncio.run(go(server)).final_output == "5"
        assert server.paths == ["/v1/responses", "/v1/responses"]
        outputs = [item for item in server.history(1) if item.get("type") == "function_call_output"]
    assert calls == [("add", 2, 3, "bob", "call_1")]
    assert [o["output"] for o in outputs] == ["5"]


def test_a_tool_that_needs_confirmation_interrupts_the_run_until_approved(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    script = [tool_call("delete", path="/tmp/a"), text("deleted"), tool_call("delete", path="/b")]
    with ScriptedServer([*script, text("kept")]) as server:
        tools = function_tools(registry)

        async def go() -> tuple[Any, Any]:
            async with server.async_client() as client:
                model = OpenAIChatCompletionsModel(model="m", openai_client=client)
                agent = Agent(name="helper", model=model, tools=tools)
                first = await Runner.run(agent, "delete /tmp/a")
                assert [i.tool_name for i in first.interruptions] == ["delete"]
                assert calls == []
                state = first.to_state()
                state.approve(first.interruptions[0])
                approved = await Runner.run(agent, state)
                assert calls == [("delete", "/tmp/a")]
                again = await Runner.run(agent, [*approved.to_input_list(), _user("/b")])
                state = again.to_state()
                state.reject(again.interruptions[0])
                return approved, await Runner.run(agent, state)

        approved, rejected = asyncio.run(go())
        assert approved.final_output == "deleted"
        assert rejected.final_output == "kept"
        assert _tool_messages(server.history(1))["call_1"] == "deleted /tmp/a"
        # the SDK answers a rejected call itself
        assert _tool_messages(server.history(-1))["call_2"] == "Tool execution was not approved."
    assert calls == [("delete", "/tmp/a")]  # the rejected call never reached toolreg


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_confirm_a_function_asks_inline_instead(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    asked: list[dict[str, Any]] = []

    async def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append(arguments)
        return False

    tools = function_tools(registry, confirm=confirm)
    assert [t.needs_approval for t in tools] == [False, False, False]
    with ScriptedServer([tool_call("delete", path="/a"), text("no")]) as server:
        assert _run(server, tools, "delete").final_output == "no"
        answer = _tool_messages(server.history(1))["call_1"]
    assert asked == [{"path": "/a"}]
    assert calls == []
    assert (
        answer
        == "Tool 'delete' was not run: the user declined. Do not retry it unless the user asks."
    )


def test_a_tool_whose_approval_was_switched_off_is_not_run_unconfirmed(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    tools = {t.name: t for t in function_tools(registry)}
    tools["delete"].needs_approval = False  # the SDK will not ask: toolreg refuses instead
    answer = _invoke(tools["delete"], '{"path": "/a"}')
    assert answer.startswith("Tool 'delete' was not run: it needs the user's confirmation")
    assert calls == []


def test_context_is_a_function_of_the_sdks_tool_context(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    tools = function_tools(registry, context=lambda ctx: f"{ctx.context['user']}@{ctx.tool_name}")
    with ScriptedServer([tool_call("add", a=1, b=1), text("2")]) as server:
        _run(server, tools, "1+1", context={"user": "carol"})
    assert calls == [("add", 1, 1, "carol@add", "call_1")]


def test_a_missing_context_fails_the_run(registry: ToolRegistry) -> None:
    with (
        ScriptedServer([tool_call("add", a=1, b=1), text("2")]) as server,
        pytest.raises(Exception) as failed,  # the SDK wraps it in its UserError
    ):
        _run(server, function_tools(registry), "1+1")
    causes = []
    error: BaseException | None = failed.value
    while error is not None:
        causes.append(error)
        error = error.__cause__
    assert any(isinstance(e, MissingContextError) for e in causes)


def test_a_strict_tool_is_sent_strict_as_toolreg_exports_it() -> None:
    registry = ToolRegistry()

    @registry.register_tool(strict=True, defer_loading=True)
    def look(query: str, limit: int = 5) -> str:
        """Look something up."""
        return query

    (tool,) = function_tools(registry)
    assert tool.strict_json_schema is True
    assert tool.defer_loading is True
    assert tool.params_json_schema == registry.get_tools(strict=True)[0]["function"]["parameters"]


def _invoke(tool: FunctionTool, arguments: str, context: Any = None) -> Any:
    ctx = AgentsToolContext(
        context=context, tool_name=tool.name, tool_call_id="c1", tool_arguments=arguments
    )
    return asyncio.run(tool.on_invoke_tool(ctx, arguments))


def test_invalid_json_and_limits_are_answered_with_toolregs_message() -> None:
    registry = ToolRegistry(max_payload_bytes=64, max_result_chars=10)

    @registry.register_tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    (tool,) = function_tools(registry)
    assert _invoke(tool, '{"text": ') == (
        "Arguments are not valid JSON: Expecting value at line 1, column 10."
    )
    assert "64" in _invoke(tool, json.dumps({"text": "x" * 100}))
    assert _invoke(tool, json.dumps({"text": "y" * 40})).startswith("yyyyyyyyyy")
    assert "y" * 11 not in _invoke(tool, json.dumps({"text": "y" * 40}))


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60))
def test_any_arguments_text_is_answered_never_raised(raw: str) -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def add(a: int, b: int = 0) -> int:
        """Add."""
        return a + b

    (tool,) = function_tools(registry)
    assert isinstance(_invoke(tool, raw), str)


def test_usage_errors_name_the_function_and_the_fix(registry: ToolRegistry) -> None:
    with pytest.raises(UsageError, match=r"function_tools\(\) takes a toolset"):
        function_tools({"add": registry})
    with pytest.raises(UsageError, match="confirm="):
        function_tools(registry, confirm=True)  # type: ignore[arg-type]


# -- the reverse: an SDK function tool in a toolreg registry ------------------------------------


def test_an_sdk_function_tool_registered_in_toolreg_is_validated_and_gets_the_context() -> None:
    seen: list[tuple[Any, ...]] = []

    @function_tool
    def weather(ctx: RunContextWrapper[Any], city: str, days: int = 1) -> str:
        """Forecast for a city.

        Args:
            city: the city.
            days: how many days.
        """
        seen.append((ctx.context, ctx.tool_call_id, city, days))
        return f"sunny in {city} for {days} days"

    registry = ToolRegistry()
    tool = registry.add(from_function_tool(weather, read_only=True))
    assert tool.read_only
    assert tool.description == "Forecast for a city."
    assert set(tool.parameters["properties"]) == {"city", "days"}

    ok = registry.dispatch_tool(
        "weather", '{"city": "Oslo", "days": "3"}', context="u1", call_id="k"
    )
    assert ok.ok
    assert ok.content == "sunny in Oslo for 3 days"
    assert seen == [("u1", "k", "Oslo", 3)]
    bad = registry.dispatch_tool("weather", '{"town": "Oslo"}', context="u1")
    assert bad.error_kind == "invalid_arguments"
    assert len(seen) == 1


def test_an_sdk_tool_whose_schema_is_hostile_is_refused() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        deep = {"type": "array", "items": deep}

    async def never(ctx: Any, arguments: str) -> str:
        return ""

    hostile = FunctionTool(
        name="deep",
        description="",
        params_json_schema={"type": "object", "properties": {"x": deep}},
        on_invoke_tool=never,
        strict_json_schema=False,
    )
    with pytest.raises(ToolDefinitionError, match="'deep'"):
        from_function_tool(hostile)
    with pytest.raises(UsageError, match="FunctionTool"):
        from_function_tool(lambda: None)  # type: ignore[arg-type]
