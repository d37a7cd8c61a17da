"""toolreg.adapters.langchain: a toolreg toolset as LangChain tools, driven by LangChain's
own loops (a chat model's `bind_tools` + `ToolMessage`s, and LangChain's agent), and a
LangChain tool inside a toolreg registry.

The chat model is `langchain-openai`'s `ChatOpenAI` bound to a `ScriptedServer` on
127.0.0.1 (the real `openai` SDK over a socket).
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_openai")

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langchain_openai import ChatOpenAI

from toolreg import ToolContext, ToolDefinitionError, ToolRegistry, UsageError
from toolreg.adapters.langchain import from_langchain, langchain_tools
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """LangSmith's tracing is off unless these say otherwise: nothing leaves the machine."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)


def _model(server: ScriptedServer) -> Any:
    return ChatOpenAI(model="m", base_url=server.base_url, api_key="test", max_retries=0)


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


def _user_of(config: Any) -> str:
    return str(config["configurable"]["user"])


def _anyone(config: Any) -> str:
    return "anyone"


def _loop(server: ScriptedServer, tools: list[Any], prompt: str, config: Any) -> list[Any]:
    """LangChain's tool-calling loop with langchain-core's primitives: the model bound to
    the tools, each call answered by invoking the tool with the model's `ToolCall`."""
    model = _model(server).bind_tools(tools)
    by_name = {t.name: t for t in tools}
    messages: list[Any] = [HumanMessage(prompt)]
    for _ in range(5):
        answer: AIMessage = model.invoke(messages, config=config)
        messages.append(answer)
        if not answer.tool_calls:
            break
        for c in answer.tool_calls:
            messages.append(by_name[c["name"]].invoke(c, config=config))
    return messages


def test_a_bound_chat_model_calls_toolreg_dispatch_with_coerced_arguments_and_context(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    script = [
        tool_call("add", a="2", b=3),
        tool_calls(call("add", a="x", c=1), call("read", path="notes")),
        text("5"),
    ]
    tools = langchain_tools(registry, context=_user_of)
    with ScriptedServer(script) as server:
        messages = _loop(server, tools, "2 + 3?", {"configurable": {"user": "alice"}})
        server.assert_all_consumed()
        sent = [t["function"] for t in server.requests[0]["tools"]]
        history = server.history(2)
    assert messages[-1].content == "5"
    assert calls == [("add", 2, 3, "alice", "call_1")]
    assert sent == [t["function"] for t in registry.get_tools()]
    answers = _tool_messages(history)
    assert answers["call_2"] == (
        "Invalid arguments for tool 'add':\n- missing required property 'b'\n"
        "- a: expected integer, got string\n- unexpected property 'c'"
    )
    assert (
        answers["call_3"] == "Tool 'read' failed: OSError: cannot open [redacted]: token [redacted]"
    )
    statuses = [m.status for m in messages if isinstance(m, ToolMessage)]
    assert statuses == ["success", "error", "error"]


def test_langchains_agent_loop_runs_the_tools(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    agents = pytest.importorskip("langchain.agents")
    tools = langchain_tools(registry, context=_user_of)
    with ScriptedServer([tool_calls(call("add", a=1, b="2"), call("add", a=[])), text("3")]) as s:
        agent = agents.create_agent(_model(s), tools=tools)
        state = agent.invoke(
            {"messages": [HumanMessage("1 + 2?")]}, config={"configurable": {"user": "dan"}}
        )
        answers = _tool_messages(s.history(1))
    assert state["messages"][-1].content == "3"
    assert calls == [("add", 1, 2, "dan", "call_1")]
    assert answers["call_1"] == "3"
    assert answers["call_2"].startswith("Invalid arguments for tool 'add':")


def test_async_invocation_dispatches_async_tools_in_the_loop() -> None:
    registry = ToolRegistry()

    @registry.register_tool(timeout=0.05)
    async def slow() -> str:
        """Take forever."""
        await asyncio.sleep(30)
        return "late"

    @registry.register_tool
    async def fast(n: int) -> int:
        """Double."""
        return 2 * n

    slow_tool, fast_tool = langchain_tools(registry)
    assert asyncio.run(fast_tool.ainvoke({"n": "21"})) == "42"
    late = asyncio.run(
        slow_tool.ainvoke({"type": "tool_call", "name": "slow", "args": {}, "id": "c9"})
    )
    assert isinstance(late, ToolMessage)
    assert late.status == "error"
    assert late.tool_call_id == "c9"
    assert "timed out" in str(late.content)


def test_an_argument_named_like_langchains_own_keywords_reaches_the_tool() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def configure(config: str, run_manager: int, callbacks: bool) -> str:
        """Set things."""
        return f"{config}/{run_manager}/{callbacks}"

    (made,) = langchain_tools(registry)
    assert made.invoke({"config": "x", "run_manager": "2", "callbacks": True}) == "x/2/True"


def test_confirmation_asks_the_confirm_function_or_refuses(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    asked: list[dict[str, Any]] = []

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append(arguments)
        return arguments["path"].startswith("/tmp/")

    by_name = {t.name: t for t in langchain_tools(registry, context=_anyone, confirm=confirm)}
    assert by_name["delete"].invoke({"path": "/tmp/a"}) == "deleted /tmp/a"
    no = by_name["delete"].invoke(
        {"type": "tool_call", "name": "delete", "args": {"path": "/"}, "id": "1"}
    )
    assert no.status == "error"
    assert "the user declined" in no.content
    assert asked == [{"path": "/tmp/a"}, {"path": "/"}]
    assert calls == [("delete", "/tmp/a")]

    unconfirmed = {t.name: t for t in langchain_tools(registry, context=_anyone)}
    refused = unconfirmed["delete"].invoke(
        {"type": "tool_call", "name": "delete", "args": {"path": "/tmp/b"}, "id": "2"}
    )
    assert refused.status == "error"
    assert "needs the user's confirmation" in refused.content
    assert calls == [("delete", "/tmp/a")]


def test_usage_errors_name_the_function_and_the_fix(registry: ToolRegistry) -> None:
    with pytest.raises(UsageError, match=r"'add' need a context.*context=lambda config"):
        langchain_tools(registry)
    with pytest.raises(UsageError, match=r'confirm="defer" needs an approval flow'):
        langchain_tools(registry, context=_user_of, confirm="defer")
    with pytest.raises(UsageError, match=r"langchain_tools\(\) takes a toolset"):
        langchain_tools([registry], context=_user_of)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=4),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=4),
            lambda inner: st.lists(inner, max_size=3),
            max_leaves=6,
        ),
        max_size=4,
    )
)
def test_any_arguments_are_answered_never_raised(arguments: dict[str, Any]) -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def add(a: int, b: int = 0) -> int:
        """Add."""
        return a + b

    (made,) = langchain_tools(registry)
    answer = made.invoke({"type": "tool_call", "name": "add", "args": arguments, "id": "x"})
    assert isinstance(answer, ToolMessage)
    assert isinstance(answer.content, str)


# -- the reverse: a LangChain tool in a toolreg registry ---------------------------------------


def test_a_langchain_tool_registered_in_toolreg_is_validated_by_toolreg() -> None:
    seen: list[tuple[Any, ...]] = []

    @tool
    def weather(city: str, days: int, call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Forecast for a city."""
        seen.append((city, days, call_id))
        if city == "Atlantis":
            raise ToolException("No forecast for Atlantis.")
        if city == "Mordor":
            raise RuntimeError("backend at /srv/weather/db failed")
        return f"sunny in {city}"

    registry = ToolRegistry()
    registry.add(from_langchain(weather, read_only=True))
    definition = registry.get_tools()[0]["function"]
    assert definition["name"] == "weather"
    assert definition["description"] == "Forecast for a city."
    assert set(definition["parameters"]["properties"]) == {"city", "days"}

    ok = registry.dispatch_tool("weather", '{"city": "Oslo", "days": "2"}', call_id="k1")
    assert ok.ok
    assert ok.content == "sunny in Oslo"
    assert seen == [("Oslo", 2, "k1")]
    assert registry.dispatch_tool("weather", '{"city": 3}').error_kind == "invalid_arguments"
    assert len(seen) == 1
    refused = registry.dispatch_tool("weather", {"city": "Atlantis", "days": 1}, call_id="k2")
    assert refused.content == "No forecast for Atlantis."
    failed = registry.dispatch_tool("weather", {"city": "Mordor", "days": 1}, call_id="k3")
    assert failed.content == "Tool 'weather' failed: RuntimeError: backend at [redacted] failed"


def test_a_langchain_tool_with_a_hostile_schema_is_refused() -> None:
    from langchain_core.tools import StructuredTool

    deep: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        deep = {"type": "array", "items": deep}
    hostile = StructuredTool.from_function(
        lambda **kw: "",
        name="deep",
        description="",
        args_schema={"type": "object", "properties": {"x": deep}},
    )
    with pytest.raises(ToolDefinitionError, match="'deep'"):
        from_langchain(hostile)
    with pytest.raises(UsageError, match="BaseTool"):
        from_langchain(json)  # type: ignore[arg-type]
