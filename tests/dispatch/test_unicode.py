"""A lone surrogate (valid JSON: "\\ud800") never crashes dispatch, the loop or ScriptedServer:
it is passed on as U+FFFD."""

from __future__ import annotations

import asyncio

from toolreg import AsyncConversation, Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, call, raw, text, tool_calls

LONE = "\ud800"


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool(description=f"Echo text back{LONE}. Use it when asked to echo.")
    def echo(text: str) -> str:
        return f"{text}|{LONE}"

    return reg


def test_dispatch_replaces_lone_surrogates_in_arguments_and_results() -> None:
    reg = registry()
    seen = reg.dispatch_tool("echo", '{"text": "a\\ud800b"}')
    assert seen.ok
    assert seen.arguments == {"text": "a\ufffdb"}
    assert seen.content == "a\ufffdb|\ufffd"
    seen.content.encode("utf-8")
    assert reg.dispatch_tool("echo", {"text": LONE}).content == "\ufffd|\ufffd"


def test_the_loop_sends_and_returns_only_encodable_text() -> None:
    reg = registry()
    script = [
        tool_calls(call("echo", '{"text": "x\\ud800"}')),
        raw({"role": "assistant", "content": f"done {LONE}"}),
    ]
    with ScriptedServer(script) as server:
        reply = Conversation(server.client(), "m", registry=reg).send(f"echo {LONE}")
        second = server.requests[1]
    assert reply.text == "done \ufffd"
    for message in reply.messages:
        str(message).encode("utf-8")
    tools = second["tools"][0]["function"]["description"]
    assert tools == "Echo text back\ufffd. Use it when asked to echo."
    assert second["messages"][-1]["content"] == "x\ufffd|\ufffd"
    assert second["messages"][0]["content"] == "echo \ufffd"


def test_a_streamed_answer_with_a_lone_surrogate() -> None:
    reg = registry()

    async def main(server: ScriptedServer) -> str:
        async with server.async_client() as client:
            chat = AsyncConversation(client, "m", registry=reg, stream=True)
            return (await chat.send("hi")).text

    with ScriptedServer([text(f"hello {LONE}")]) as server:
        assert asyncio.run(main(server)) == "hello \ufffd"


def test_failure_messages_never_carry_a_lone_surrogate() -> None:
    from toolreg import ToolError
    from toolreg.errors import ToolExecutionError

    reg = ToolRegistry(errors="full")

    @reg.register_tool
    def refuse(text: str) -> str:
        """Refuse with the tool's own words."""
        raise ToolError(f"cannot {text}{LONE}")

    @reg.register_tool
    def crash(text: str) -> str:
        """Crash with an exception whose text holds a surrogate."""
        raise ValueError(f"bad {LONE}")

    @reg.register_tool
    def nested(text: str) -> str:
        """Raise a call error of its own."""
        raise ToolExecutionError(f"inner {LONE}", tool_name="nested")

    for name in ("refuse", "crash", "nested"):
        result = reg.dispatch_tool(name, {"text": "go"})
        assert not result.ok
        assert LONE not in result.content
        assert "\ufffd" in result.content
        result.content.encode("utf-8")
        assert result.error is not None
        assert result.error.message == result.content
