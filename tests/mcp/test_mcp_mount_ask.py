"""A mounted server asks a question during a call (`elicitation/create`): the mount asks the
user behind the calling tool through its own `ctx.aask` (a conversation pauses for it, then
runs the call again with the answer), else declines with a logged reason. The server is the
official SDK's low-level `Server`, asking the 2026-07-28 way, over streamable HTTP on
127.0.0.1 (the SDK client calls the mount's elicitation callback for either way of asking)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server

from toolreg import Conversation, ToolContext, ToolRegistry
from toolreg.asking import Question, ask_channel
from toolreg.mcp import HttpServer, mount
from toolreg.testing import ScriptedServer, call, text, tool_calls

asked: list[str] = []  # what the server's tool was told, run by run


NIGHT = {"type": "object", "properties": {"night": {"type": "string"}}, "required": ["night"]}
KEY = "night"


def peer() -> Server[Any]:
    """A server (the SDK's low-level API) whose `reserve` asks which night the 2026-07-28
    way: an `InputRequiredResult`, answered by the client's retry."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"room": {"type": "string"}}}
        tool = types.Tool(name="reserve", description="Reserve a room.", input_schema=schema)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        room = (params.arguments or {}).get("room")
        answer = (params.input_responses or {}).get(KEY)
        if not isinstance(answer, types.ElicitResult):
            question = types.ElicitRequestFormParams(
                message=f"Which night for room {room}?", requested_schema=NIGHT
            )
            return types.InputRequiredResult(
                input_requests={KEY: types.ElicitRequest(params=question)}
            )
        told = f"{answer.action} {(answer.content or {}).get('night')}"
        asked.append(told)
        return types.CallToolResult(content=[types.TextContent(type="text", text=told)])

    server: Server[Any] = Server("hotel", on_list_tools=list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    return server


@pytest.fixture
def peer_url() -> Iterator[str]:
    asked.clear()
    with HttpServer(peer().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


class Accepting:
    """A channel that accepts every question with `content`, and keeps the questions."""

    def __init__(self, content: dict[str, Any]) -> None:
        self.content = content
        self.questions: list[Question] = []

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        self.questions.append(question)
        return "accept", self.content

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        return self.ask(ctx, question)


def test_a_caller_that_cannot_ask_has_the_question_declined(peer_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, peer_url):
        result = registry.dispatch_tool("reserve", {"room": "12"}, confirm=yes)
    assert result.content == "decline None"
    assert asked == ["decline None"]


def test_the_question_goes_to_the_calling_tools_asker(peer_url: str) -> None:
    registry = ToolRegistry()
    channel = Accepting({"night": "2026-12-24"})
    with mount(registry, peer_url):
        token = ask_channel.set(channel)
        try:
            result = registry.dispatch_tool("reserve", {"room": "12"}, confirm=yes)
        finally:
            ask_channel.reset(token)
    assert result.content == "accept 2026-12-24"
    (question,) = channel.questions
    assert question.message == "Which night for room 12?"
    assert question.schema["properties"]["night"]["type"] == "string"


def test_a_conversation_pauses_for_a_mounted_servers_question(peer_url: str) -> None:
    registry = ToolRegistry()
    script = [tool_calls(call("reserve", room="12")), text("Reserved.")]
    with mount(registry, peer_url), ScriptedServer(script) as model:
        chat = Conversation(model.client(), "m", registry=registry, confirm=yes)
        reply = chat.send("Reserve room 12")
        assert reply.stop_reason == "input_required"
        (pending,) = reply.pending
        assert pending.question == "Which night for room 12?"
        assert asked == ["cancel None"]  # the server's first run was told: cancelled
        done = chat.resume({pending.call_id: {"night": "2026-12-24"}})
        sent = model.history(1)
    assert done.text == "Reserved."
    assert [m["content"] for m in sent if m.get("role") == "tool"] == ["accept 2026-12-24"]
    assert asked == ["cancel None", "accept 2026-12-24"]  # run again, answered from the reply


def test_toolreg_on_both_sides_a_served_tools_question_pauses_the_mounting_conversation() -> None:
    import _mcp_ask_tools

    from toolreg.mcp import asgi_app

    registry = ToolRegistry()
    script = [tool_calls(call("book", room="9")), text("Done.")]
    with (
        HttpServer(asgi_app(_mcp_ask_tools.registry)) as served,
        mount(registry, served.url),
        ScriptedServer(script) as model,
    ):
        chat = Conversation(model.client(), "m", registry=registry, confirm=yes)
        reply = chat.send("Book room 9")
        assert reply.stop_reason == "input_required"
        (pending,) = reply.pending
        assert pending.question == "Which night for room 9?"
        assert pending.schema == _mcp_ask_tools.NIGHT
        done = chat.resume({pending.call_id: {"night": "2026-05-01", "guests": 4}})
        sent = model.history(1)
    assert done.text == "Done."
    assert [m["content"] for m in sent if m.get("role") == "tool"] == [
        "accept {'night': '2026-05-01', 'guests': 4}"
    ]
