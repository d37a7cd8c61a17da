"""A conversation pins tool versions: `Conversation(versions={"search": "1"})` offers and runs
that version, whatever is registered later, and a saved state keeps the pins, so a resumed
conversation goes on with the tools it began with. The real `openai` SDK against
`ScriptedServer` on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import Conversation, ConversationStateError, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, text, tool_call

MODEL = "scripted-model"


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool(name="search", version="1")
    def search_v1(q: str) -> str:
        """Search the catalog. Use it when the user asks for a product."""
        return f"v1:{q}"

    @tools.register_tool(name="search", version="2")
    def search_v2(query: str) -> str:
        """Search the catalog by a query. Use it when the user asks for a product."""
        return f"v2:{query}"

    return tools


def parameters(request: dict[str, Any]) -> list[str]:
    (tool,) = request["tools"]
    return list(tool["function"]["parameters"]["properties"])


def test_a_conversation_offers_and_runs_its_pinned_version() -> None:
    tools = registry()
    with ScriptedServer([tool_call("search", q="tea"), text("found")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools, versions={"search": "1"})
        reply = chat.send("tea?")
        assert parameters(server.requests[0]) == ["q"]
    assert reply.tool_results[0].content == "v1:tea"
    with ScriptedServer([tool_call("search", query="tea"), text("found")]) as server:
        latest = Conversation(server.client(), MODEL, registry=tools).send("tea?")
        assert parameters(server.requests[0]) == ["query"]
    assert latest.tool_results[0].content == "v2:tea"


def test_a_resumed_conversation_keeps_its_versions() -> None:
    tools = registry()
    with ScriptedServer([text("hello")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools, versions={"search": "1"})
        chat.send("hi")
        state = chat.export_state()
    assert state["options"]["versions"] == {"search": "1"}

    @tools.register_tool(name="search", version="3")
    def search_v3(text: str) -> str:
        """Search, third try."""
        return f"v3:{text}"

    with ScriptedServer([tool_call("search", q="tea"), text("found")]) as server:
        again = Conversation.from_state(state, server.client(), registry=tools)
        reply = again.send("tea?")
        assert parameters(server.requests[0]) == ["q"]
    assert reply.tool_results[0].content == "v1:tea"
    with ScriptedServer([text("ok")]) as server:
        moved = Conversation.from_state(
            state, server.client(), registry=tools, versions={"search": "3"}
        )  # the application's own choice wins, as for any option
        moved.send("hi")
        assert parameters(server.requests[0]) == ["text"]


def test_a_state_from_before_versions_resumes_at_the_latest() -> None:
    tools = registry()
    with ScriptedServer([text("hello")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools)
        chat.send("hi")
        state = chat.export_state()
    del state["options"]["versions"]
    with ScriptedServer([text("again")]) as server:
        Conversation.from_state(state, server.client(), registry=tools).send("hi")
        assert parameters(server.requests[0]) == ["query"]


@pytest.mark.parametrize("bad", [{"search": "beta"}, {"search": 1.5}, ["search"]])
def test_a_state_with_wrong_versions_is_refused(bad: Any) -> None:
    tools = registry()
    with ScriptedServer([text("hello")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools)
        chat.send("hi")
        state = chat.export_state()
        state["options"]["versions"] = bad
        with pytest.raises(ConversationStateError, match="versions"):
            Conversation.from_state(state, server.client(), registry=tools)


@pytest.mark.parametrize(
    ("versions", "words"),
    [
        ({"search": "9"}, r"no version '9' \(its versions: 2, 1\)"),
        ({"nope": "1"}, "has no tool 'nope'"),
        ({"search": "beta"}, "maps tool names to versions"),
    ],
)
def test_wrong_versions_are_refused_where_given(versions: Any, words: str) -> None:
    with ScriptedServer() as server, pytest.raises(UsageError, match=words):
        Conversation(server.client(), MODEL, registry=registry(), versions=versions)
