"""toolreg.adapters.pydantic_ai: a toolreg toolset inside pydantic-ai's own Agent loop.

Every run is pydantic-ai's `Agent` with its OpenAI chat model bound to a `ScriptedServer`
on 127.0.0.1 (the real `openai` SDK over a socket); the assertions read what the tools got
and what the server saw.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.exceptions import ModelRetry, UnexpectedModelBehavior
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from toolreg import (
    MissingContextError,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolRetry,
    UsageError,
    filtered,
)
from toolreg.adapters.pydantic_ai import ToolregToolset
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls


def _tool_messages(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in history if m.get("role") == "tool"]


def _error(content: str) -> str:
    """The message of a failed or retried result, as pydantic-ai's OpenAI model sends it."""
    error = json.loads(content)["error"]
    assert isinstance(error, str)
    return error


def _agent(server: ScriptedServer, toolset: Any, **options: Any) -> Agent[Any, Any]:
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=server.async_client()))
    return Agent(model, toolsets=[toolset], **options)


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

    return registry


def test_the_agent_runs_toolreg_dispatch_with_coerced_arguments_and_the_runs_deps(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    script = [tool_call("add", a="2", b=3), tool_call("add", a="x", c=1), text("5")]
    with ScriptedServer(script) as server:
        agent = _agent(server, ToolregToolset(registry), deps_type=str)
        result = agent.run_sync("2 + 3?", deps="alice")
        assert result.output == "5"
        server.assert_all_consumed()
        # the tool got the coerced integer and the run's deps, with the call's id
        assert calls == [("add", 2, 3, "alice", "call_1")]
        # what the model was offered is toolreg's own export
        sent = server.requests[0]["tools"]
        assert [t["function"] for t in sent] == [
            {**t["function"], "description": t["function"]["description"]}
            for t in registry.get_tools()
        ]
        history = server.history(2)
    answers = dict(_tool_messages(history))
    assert answers["call_1"] == "5"
    # the bad call came back as pydantic-ai's retry, carrying toolreg's message whole
    assert _error(answers["call_2"]) == (
        "Invalid arguments for tool 'add':\n- missing required property 'b'\n"
        "- a: expected integer, got string\n- unexpected property 'c'"
    )


def test_a_tools_exception_is_redacted_and_answered_as_a_failure() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def read(path: str) -> str:
        """Read a file."""
        raise OSError(f"cannot open /home/alice/{path} with token sk-abc123def456ghi789jkl012")

    with ScriptedServer([tool_call("read", path="notes"), text("sorry")]) as server:
        result = _agent(server, ToolregToolset(registry)).run_sync("read notes")
        assert result.output == "sorry"
        (answer,) = _tool_messages(server.history(1))
    assert "sk-abc123def456ghi789jkl012" not in answer[1]
    assert "/home/alice" not in answer[1]
    assert "Traceback" not in answer[1]
    # pydantic-ai's OpenAI model writes a failed result as {"error": ...}
    assert _error(answer[1]) == (
        "Tool 'read' failed: OSError: cannot open [redacted] with token [redacted]"
    )


def test_a_tool_error_is_the_tools_own_words_and_tool_retry_is_a_model_retry() -> None:
    registry = ToolRegistry()
    tries: list[int] = []

    @registry.register_tool
    def find(who: str) -> str:
        """Find a person."""
        if who == "nobody":
            raise ToolError("No such person.")
        tries.append(1)
        raise ToolRetry("Give the full name.")

    script = [tool_call("find", who="nobody"), tool_call("find", who="bo"), text("done")]
    with ScriptedServer(script) as server:
        agent = _agent(server, ToolregToolset(registry), retries=2)
        assert agent.run_sync("find").output == "done"
        answers = [content for _, content in _tool_messages(server.history(2))]
    assert _error(answers[0]) == "No such person."
    assert _error(answers[1]) == "Give the full name."
    assert tries == [1]


def test_retries_count_against_the_tools_own_retries_option() -> None:
    registry = ToolRegistry()

    @registry.register_tool(retries=1)
    def pick(n: int) -> int:
        """Pick a number."""
        return n

    script = [tool_call("pick", n="x"), tool_call("pick", n="y"), text("never")]
    with ScriptedServer(script) as server:
        agent = _agent(server, ToolregToolset(registry), retries=5)
        with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 1"):
            agent.run_sync("pick")


def test_time_limits_and_result_cuts_stay_toolregs() -> None:
    registry = ToolRegistry(max_result_chars=40)

    @registry.register_tool(timeout=0.05)
    async def slow() -> str:
        """Take forever."""
        await asyncio.sleep(30)
        return "late"

    @registry.register_tool
    def big() -> str:
        """Return a lot."""
        return "x" * 1000

    script = [tool_calls(call("slow"), call("big")), text("ok")]
    with ScriptedServer(script) as server:
        assert _agent(server, ToolregToolset(registry)).run_sync("go").output == "ok"
        answers = dict(_tool_messages(server.history(1)))
    assert "timed out" in _error(answers["call_1"])
    assert len(answers["call_2"]) < 200
    assert answers["call_2"].startswith("xxx")
    assert "x" * 41 not in answers["call_2"]


def test_a_tool_that_needs_confirmation_is_a_deferred_approval(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    script = [tool_call("delete", path="/tmp/a"), text("deleted"), tool_call("delete", path="/b")]
    with ScriptedServer([*script, text("kept")]) as server:
        agent = _agent(server, ToolregToolset(registry), output_type=[str, DeferredToolRequests])
        first = agent.run_sync("delete /tmp/a")
        assert isinstance(first.output, DeferredToolRequests)
        (request,) = first.output.approvals
        assert request.tool_name == "delete"
        assert calls == []
        assert first.output.validated_args[request.tool_call_id] == {"path": "/tmp/a"}
        approved = DeferredToolResults(approvals={request.tool_call_id: True})
        second = agent.run_sync(
            message_history=first.all_messages(), deferred_tool_results=approved
        )
        assert second.output == "deleted"
        assert calls == [("delete", "/tmp/a")]
        assert ("call_1", "deleted /tmp/a") in _tool_messages(server.history(1))

        # denied: the tool never runs; the model reads the denial
        third = agent.run_sync("delete /b", message_history=second.all_messages())
        (request,) = third.output.approvals
        denied = DeferredToolResults(approvals={request.tool_call_id: ToolDenied("Not that one.")})
        fourth = agent.run_sync(message_history=third.all_messages(), deferred_tool_results=denied)
        assert fourth.output == "kept"
        assert calls == [("delete", "/tmp/a")]
        assert (request.tool_call_id, "Not that one.") in _tool_messages(server.history(-1))


def test_an_approvers_override_arguments_are_validated_by_toolreg(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    from pydantic_ai import ToolApproved

    with ScriptedServer([tool_call("delete", path="/a"), text("refused")]) as server:
        agent = _agent(server, ToolregToolset(registry), output_type=[str, DeferredToolRequests])
        first = agent.run_sync("delete")
        (request,) = first.output.approvals
        bad = ToolApproved(override_args={"path": ["not", "a", "path"]})
        results = DeferredToolResults(approvals={request.tool_call_id: bad})
        assert agent.run_sync(message_history=first.all_messages(), deferred_tool_results=results)
        (answer,) = _tool_messages(server.history(1))
    assert calls == []
    assert "path: expected string, got array" in answer[1]


def test_confirm_a_function_asks_inline_with_the_validated_arguments(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append((tool.name, arguments))
        return arguments["path"] != "/etc"

    script = [tool_calls(call("delete", path="/tmp/a"), call("delete", path="/etc")), text("ok")]
    with ScriptedServer(script) as server:
        toolset = ToolregToolset(registry, confirm=confirm)
        assert _agent(server, toolset).run_sync("delete both").output == "ok"
        answers = dict(_tool_messages(server.history(1)))
    assert sorted(asked, key=repr) == [("delete", {"path": "/etc"}), ("delete", {"path": "/tmp/a"})]
    assert calls == [("delete", "/tmp/a")]
    assert answers["call_1"] == "deleted /tmp/a"
    assert _error(answers["call_2"]) == (
        "Tool 'delete' was not run: the user declined. Do not retry it unless the user asks."
    )


def test_confirm_none_refuses_the_tools_that_need_it(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    with ScriptedServer([tool_call("delete", path="/a"), text("ok")]) as server:
        assert _agent(server, ToolregToolset(registry, confirm=None)).run_sync("x").output == "ok"
        (answer,) = _tool_messages(server.history(1))
    assert calls == []
    assert _error(answer[1]).startswith("Tool 'delete' was not run: it needs the user's confirm")


def test_context_is_a_function_of_the_run_context(
    registry: ToolRegistry, calls: list[tuple[Any, ...]]
) -> None:
    with ScriptedServer([tool_call("add", a=1, b=1), text("2")]) as server:
        toolset = ToolregToolset(registry, context=lambda ctx: f"user-{ctx.deps['id']}")
        _agent(server, toolset).run_sync("1+1", deps={"id": 7})
    assert calls == [("add", 1, 1, "user-7", "call_1")]


def test_a_missing_context_is_the_applications_error_not_the_models(
    registry: ToolRegistry,
) -> None:
    with (
        ScriptedServer([tool_call("add", a=1, b=1), text("2")]) as server,
        pytest.raises(MissingContextError, match="'add'"),
    ):
        _agent(server, ToolregToolset(registry)).run_sync("1+1")


def test_the_definitions_carry_toolregs_flags_and_follow_the_toolset(
    registry: ToolRegistry,
) -> None:
    @registry.register_tool(strict=True, defer_loading=True, read_only=True, tags=["x"])
    def look(query: str, limit: int = 5) -> str:
        """Look something up."""
        return query

    toolset = ToolregToolset(filtered(registry, names=["look", "delete"]), id="mine")
    assert toolset.id == "mine"
    tools = asyncio.run(toolset.get_tools(_run_context()))
    assert list(tools) == ["delete", "look"]
    look_def = tools["look"].tool_def
    assert look_def.strict is True
    assert look_def.defer_loading is True
    assert (
        look_def.parameters_json_schema
        == registry.get_tools(strict=True, names=["look"])[0]["function"]["parameters"]
    )
    assert look_def.metadata == {
        "toolreg": {
            "read_only": True,
            "destructive": False,
            "idempotent": False,
            "needs_confirmation": False,
            "tags": ["x"],
        }
    }
    assert tools["delete"].tool_def.kind == "unapproved"
    inline = asyncio.run(ToolregToolset(registry, confirm=None).get_tools(_run_context()))
    assert inline["delete"].tool_def.kind == "function"

    registry.unregister("look")  # the next step sees the change
    assert list(asyncio.run(toolset.get_tools(_run_context()))) == ["delete"]


def _run_context(deps: Any = None) -> Any:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())


def test_usage_errors_name_the_adapter_and_the_fix(registry: ToolRegistry) -> None:
    with pytest.raises(UsageError, match=r"ToolregToolset\(\) takes a toolset"):
        ToolregToolset([registry])
    with pytest.raises(UsageError, match="confirm="):
        ToolregToolset(registry, confirm="yes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="context="):
        ToolregToolset(registry, context="alice")  # type: ignore[arg-type]


# -- hostile arguments -------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=40), _JSON.map(json.dumps), st.binary(max_size=20)))
def test_the_validator_answers_any_text_with_arguments_or_a_model_retry(raw: Any) -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def add(a: int, b: int = 0) -> int:
        """Add."""
        return a + b

    tool = asyncio.run(ToolregToolset(registry).get_tools(_run_context()))["add"]
    answer: Any
    try:
        answer = tool.args_validator.validate_json(raw, allow_partial="off")
    except ModelRetry as retry:
        answer = retry
    if isinstance(answer, ModelRetry):
        assert answer.message
        assert "Traceback" not in answer.message
    else:
        assert isinstance(answer, dict)
        assert isinstance(answer["a"], int)


def test_invalid_json_and_oversized_arguments_are_retried_with_toolregs_message() -> None:
    registry = ToolRegistry(max_payload_bytes=64)

    @registry.register_tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    tool = asyncio.run(ToolregToolset(registry).get_tools(_run_context()))["echo"]
    with pytest.raises(ModelRetry, match="not valid JSON"):
        tool.args_validator.validate_json('{"text": ', allow_partial="off")
    with pytest.raises(ModelRetry, match="64"):
        tool.args_validator.validate_json(json.dumps({"text": "x" * 100}), allow_partial="off")
