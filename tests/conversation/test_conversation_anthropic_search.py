"""Anthropic's own tool search in the conversation loop (issue 20): `deferred_search="client"`
answers the model's `search_tools` calls from toolreg's index with `tool_reference` blocks,
`"hosted"` sends the API's `tool_search_tool_bm25`. Every test goes through the real
`anthropic` SDK to ScriptedServer's /v1/messages on 127.0.0.1, which refuses (HTTP 400) a
`tool_reference` naming no deferred tool sent with the request, like the API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _sdk_shapes import conforms

from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationStateError,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, call, raw, text, tool_call, tool_calls
from toolreg.testing.inspection import references_problems

sdk = pytest.importorskip("anthropic.types")

MODEL = "claude-test"


def catalog(ran: list[str] | None = None) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_time(tz: str = "UTC") -> str:
        """The current time in a time zone."""
        return "12:00"

    @registry.register_tool(defer_loading=True)
    def create_github_issue(repository: str, title: str) -> str:
        """Open a new issue in a GitHub repository."""
        if ran is not None:
            ran.append(f"create_github_issue {repository}")
        return "#42"

    @registry.register_tool(defer_loading=True, name="train_ticket_cn")
    def train_ticket(出发地: str, 目的地: str) -> str:
        """查询火车票余票和票价。"""
        return "有票"

    return registry


def chat(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.anthropic_client(), MODEL, registry=registry, **options)


def tools_of(server: ScriptedServer, index: int) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in server.requests[index]["tools"]}


def results_of(server: ScriptedServer, index: int) -> list[dict[str, Any]]:
    last = server.requests[index]["messages"][-1]
    return [b for b in last["content"] if b["type"] == "tool_result"]


# -- client-executed: toolreg's index answers with tool_reference blocks ----------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_search_loads_what_toolreg_finds_by_reference(stream: bool) -> None:
    ran: list[str] = []
    script = [
        tool_call("search_tools", query="open a github issue", limit=1, id="s1"),
        tool_call("create_github_issue", repository="a/b", title="crash", id="c1"),
        text("Opened #42."),
    ]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(ran), deferred_search="client", stream=stream)
        reply = conversation.send("file a bug in a/b")
    first = tools_of(server, 0)
    assert first["create_github_issue"]["defer_loading"] is True  # sent, kept out of context
    assert first["train_ticket_cn"]["defer_loading"] is True
    assert "defer_loading" not in first["get_time"]
    assert "defer_loading" not in first["search_tools"]  # the search itself is loaded
    assert first["search_tools"]["input_schema"]["required"] == ["query"]
    (found,) = results_of(server, 1)
    assert found == {
        "type": "tool_result",
        "tool_use_id": "s1",
        "content": [{"type": "tool_reference", "tool_name": "create_github_issue"}],
    }
    assert conforms(found, sdk.ToolResultBlockParam) == []
    assert ran == ["create_github_issue a/b"]
    assert conversation.discovered == ["create_github_issue"]
    assert reply.text == "Opened #42."
    assert results_of(server, 2)[0]["content"] == "#42"
    assert "search_tools" in tools_of(server, 2)  # the Chinese tool is still not found


def test_an_async_conversation_searches_the_same_way() -> None:
    ran: list[str] = []

    async def main(server: ScriptedServer) -> Any:
        async with server.async_anthropic_client() as client:
            conversation = AsyncConversation(
                client, MODEL, registry=catalog(ran), deferred_search="client"
            )
            return await conversation.send("file a bug in a/b"), conversation.discovered

    script = [
        tool_call("search_tools", query="github issue", limit=1, id="s1"),
        tool_call("create_github_issue", repository="a/b", title="crash", id="c1"),
        text("Opened."),
    ]
    with ScriptedServer(script) as server:
        reply, discovered = asyncio.run(main(server))
    assert results_of(server, 1)[0]["content"] == [
        {"type": "tool_reference", "tool_name": "create_github_issue"}
    ]
    assert (ran, discovered, reply.text) == (
        ["create_github_issue a/b"],
        ["create_github_issue"],
        "Opened.",
    )


def test_a_chinese_client_search_finds_the_chinese_tool() -> None:
    script = [tool_call("search_tools", query="火车票 余票", id="s1"), text("有票。")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(), deferred_search="client")
        conversation.send("明天北京到上海的火车票还有吗？")
    (found,) = results_of(server, 1)
    names = [b["tool_name"] for b in found["content"]]
    assert names[0] == "train_ticket_cn"
    assert conversation.discovered[0] == "train_ticket_cn"


def test_an_empty_search_is_a_short_text_and_loads_nothing() -> None:
    script = [tool_call("search_tools", query="qzxv wplk", id="s1"), text("No tool for that.")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(), deferred_search="client")
        conversation.send("do the impossible")
    (answer,) = results_of(server, 1)
    assert answer["content"] == (
        'No tool matches "qzxv wplk". Try other words, or go on without a tool.'
    )
    assert answer["is_error"] is False
    assert conversation.discovered == []


def test_a_deferred_tool_is_not_run_before_the_search_finds_it() -> None:
    ran: list[str] = []
    script = [tool_call("create_github_issue", repository="a/b", title="x"), text("ok")]
    with ScriptedServer(script) as server:
        chat(server, catalog(ran), deferred_search="client").send("file a bug")
    (answer,) = results_of(server, 1)
    assert ran == []
    assert answer["is_error"] is True
    assert "not loaded: call search_tools" in answer["content"]


def test_what_the_search_found_survives_export_and_resume() -> None:
    ran: list[str] = []
    registry = catalog(ran)
    script = [
        tool_call("search_tools", query="github issue", limit=1, id="s1"),
        text("Found a tool for that."),
        tool_call("create_github_issue", repository="a/b", title="x", id="c1"),
        text("Done."),
    ]
    with ScriptedServer(script) as server:
        first = chat(server, registry, deferred_search="client")
        first.send("I need to file bugs")
        state = json.loads(json.dumps(first.export_state()))
        assert state["options"]["deferred_search"] == "client"
        again = Conversation.from_state(state, server.anthropic_client(), registry=registry)
        reply = again.send("file one in a/b")
    assert (again.options.deferred_search, again.discovered) == ("client", ["create_github_issue"])
    assert ran == ["create_github_issue a/b"]
    assert reply.tool_results[0].ok
    history = server.requests[2]["messages"]
    references = [
        b.get("content") for m in history if isinstance(m["content"], list) for b in m["content"]
    ]
    assert [{"type": "tool_reference", "tool_name": "create_github_issue"}] in references


def test_a_registered_search_tools_tool_clashes_with_the_search() -> None:
    registry = catalog()

    @registry.register_tool
    def search_tools(query: str) -> str:
        """Search the web."""
        return "none"

    with ScriptedServer([text("ok")]) as server:
        conversation = chat(server, registry, deferred_search="client")
        with pytest.raises(UsageError, match="rename that tool"):
            conversation.send("hi")


def test_the_scripted_server_refuses_a_reference_to_a_tool_not_deferred() -> None:
    body = {
        "tools": [{"name": "get_time", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "s", "name": "x"}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "s",
                        "content": [{"type": "tool_reference", "tool_name": "get_time"}],
                    }
                ],
            },
        ],
    }
    assert references_problems(body) == [
        "messages.2: tool_reference 'get_time' names no deferred tool (defer_loading: true) "
        "of this request"
    ]
    body["tools"] = [{**body["tools"][0], "defer_loading": True}]
    assert references_problems(body) == [
        "tools: all tools have defer_loading; at least one must not be deferred"
    ]


# -- hosted: the API's own tool_search_tool_bm25 --------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_hosted_search_sends_the_apis_search_tool_and_runs_what_it_loaded(
    stream: bool,
) -> None:
    ran: list[str] = []
    searched = {
        "role": "assistant",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25"}
            | {"input": {"query": "github issue"}},
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [
                        {"type": "tool_reference", "tool_name": "create_github_issue"}
                    ],
                },
            },
            {"type": "tool_use", "id": "c1", "name": "create_github_issue"}
            | {"input": {"repository": "a/b", "title": "x"}},
        ],
    }
    script = [raw(searched, finish_reason="tool_calls"), text("Opened.")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(ran), deferred_search="hosted", stream=stream)
        reply = conversation.send("file a bug")
    sent = {t["name"]: t for t in server.requests[0]["tools"]}
    assert sent["tool_search_tool_bm25"] == {
        "type": "tool_search_tool_bm25_20251119",
        "name": "tool_search_tool_bm25",
    }
    assert sent["create_github_issue"]["defer_loading"] is True
    assert "search_tools" not in sent
    assert ran == ["create_github_issue a/b"]
    assert reply.text == "Opened."
    echoed = server.requests[1]["messages"][1]["content"]
    assert [b["type"] for b in echoed] == ["server_tool_use", "tool_search_tool_result", "tool_use"]
    assert echoed[:2] == searched["content"][:2]  # the server's blocks go back as received
    assert results_of(server, 1)[0]["content"] == "#42"


def test_a_search_in_a_round_paused_for_approval_still_loads_after_resume() -> None:
    registry = catalog()
    refunded: list[str] = []

    @registry.register_tool(destructive=True)
    def refund(order: str) -> str:
        """Refund an order."""
        refunded.append(order)
        return "refunded"

    script = [
        tool_calls(
            call("search_tools", query="github issue", limit=1, id="s1"),
            call("refund", order="7", id="r1"),
        ),
        text("Refunded, and I can open issues now."),
    ]
    with ScriptedServer(script) as server:
        first = chat(server, registry, deferred_search="client", confirm="defer")
        paused = first.send("refund order 7, then find a tool for issues")
        saved = json.loads(json.dumps(first.export_state()))
        again = Conversation.from_state(saved, server.anthropic_client(), registry=registry)
        again.resume({paused.pending[0].call_id: True})
    assert refunded == ["7"]
    found, done = results_of(server, 1)
    assert found["content"] == [{"type": "tool_reference", "tool_name": "create_github_issue"}]
    assert done["content"] == "refunded"
    assert again.discovered == ["create_github_issue"]


def test_a_saved_search_result_loads_only_deferred_tools_it_allows() -> None:
    registry = catalog()

    @registry.register_tool(destructive=True)
    def refund(order: str) -> str:
        """Refund an order."""
        return "refunded"

    script = [
        tool_calls(
            call("search_tools", query="github issue", limit=1, id="s1"),
            call("refund", order="7", id="r1"),
        ),
        text("ok"),
    ]
    with ScriptedServer(script) as server:
        first = chat(server, registry, deferred_search="client", confirm="defer")
        paused = first.send("refund order 7, then find a tool for issues")
        saved = json.loads(json.dumps(first.export_state()))
        (done,) = saved["turn"]["round"]["done"]
        assert done["found"] == ["create_github_issue"]
        done["found"] = "refund"
        with pytest.raises(ConversationStateError, match="'found' is not a list"):
            Conversation.from_state(saved, server.anthropic_client(), registry=registry)
        done["found"] = ["refund", "get_time", "no_such_tool"]  # a state edited by hand
        again = Conversation.from_state(saved, server.anthropic_client(), registry=registry)
        again.resume({paused.pending[0].call_id: True})
    found, _ = results_of(server, 1)
    assert isinstance(found["content"], str)  # nothing a state names out of turn is loaded


def test_a_catalog_of_deferred_tools_only_keeps_one_tool_loaded_after_all_are_found() -> None:
    registry = ToolRegistry()

    @registry.register_tool(defer_loading=True)
    def create_github_issue(repository: str, title: str) -> str:
        """Open a new issue in a GitHub repository."""
        return "#42"

    script = [
        tool_call("search_tools", query="github issue", id="s1"),
        tool_call("create_github_issue", repository="a/b", title="x", id="c1"),
        text("Opened."),
    ]
    with ScriptedServer(script) as server:  # it refuses a request whose tools are all deferred
        reply = chat(server, registry, deferred_search="client").send("file a bug")
    assert reply.text == "Opened."
    assert [sorted(tools_of(server, i)) for i in range(3)] == [
        ["create_github_issue", "search_tools"]
    ] * 3
