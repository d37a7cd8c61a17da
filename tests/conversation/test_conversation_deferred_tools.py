"""Model-driven tool search: `defer_loading=True` tools are offered once the model's
`search_tools` call finds them, and stay offered across trimming, export and a new process
(the real openai SDK against ScriptedServer on 127.0.0.1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolreg import Conversation, ConversationStateError, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, text, tool_call
from toolreg.testing.inspection import tool_names

MODEL = "scripted-model"
KEY = b"k" * 32


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
            ran.append("create_github_issue")
        return "#42"

    @registry.register_tool(defer_loading=True, name="train_ticket_cn")
    def train_ticket(出发地: str, 目的地: str) -> str:
        """查询火车票余票和票价。"""
        return "有票"

    for i in range(40):
        registry.register_schema(
            f"crm_update_{i}",
            {"type": "object", "properties": {"record": {"type": "string"}}},
            lambda **kw: "ok",
            description=f"Update CRM record {i}.",
            defer_loading=True,
        )
    return registry


def chat(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    return Conversation(server.client(), MODEL, registry=registry, **options)


def sent(server: ScriptedServer, index: int) -> list[str]:
    return tool_names(server.requests[index])


def results(server: ScriptedServer, index: int) -> list[str]:
    return [m["content"] for m in server.requests[index]["messages"] if m["role"] == "tool"]


def test_found_tools_are_offered_from_the_next_call_on() -> None:
    ran: list[str] = []
    script = [
        tool_call("search_tools", query="open a github issue"),
        tool_call("create_github_issue", repository="a/b", title="Bug"),
        text("Opened #42."),
    ]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(ran))
        reply = conversation.send("File a bug in a/b")
    assert sent(server, 0) == ["get_time", "search_tools"]  # no deferred tool
    assert "create_github_issue" in sent(server, 1)
    assert "search_tools" in sent(server, 1)  # others are still deferred
    found = results(server, 1)[0]
    assert found.startswith("Found ")
    assert "- create_github_issue: Open a new issue in a GitHub repository." in found
    assert ran == ["create_github_issue"]
    assert reply.text == "Opened #42."
    assert conversation.discovered[0] == "create_github_issue"
    assert "create_github_issue" in conversation.offered_names()


def test_a_chinese_search_finds_the_chinese_tool() -> None:
    script = [tool_call("search_tools", query="火车票", limit=1), text("有票")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog())
        conversation.send("帮我查火车票")
    assert conversation.discovered == ["train_ticket_cn"]
    assert "train_ticket_cn" in sent(server, 1)


def test_an_empty_search_is_a_short_clear_answer() -> None:
    script = [tool_call("search_tools", query="quantum teleportation"), text("Sorry.")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog())
        reply = conversation.send("teleport me")
    assert reply.tool_results[0].ok
    assert reply.tool_results[0].content == (
        'No tool matches "quantum teleportation". Try other words, or go on without a tool.'
    )
    assert conversation.discovered == []
    assert sent(server, 1) == ["get_time", "search_tools"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ("{}", "missing required property 'query'"),
        ('{"query": 5}', "query: expected string, got integer"),
        ('{"query": "  "}', "'query' must be a non-empty string"),
        ('{"query": "crm", "limit": "many"}', "limit: expected integer"),
        ("[1]", "must be a JSON object"),
        ("{not json", "not valid JSON"),
        ('{"query": "' + "x" * 10_000 + '"}', "too large"),
        ('{"query": "crm", "extra": 1}', "extra"),
    ],
)
def test_bad_search_arguments_are_answered_like_any_invalid_call(
    arguments: str, problem: str
) -> None:
    """A search call is decoded by dispatch, against the search tool's own definition: its
    answer is dispatch's, word for word, with an example of a good call."""
    with ScriptedServer([tool_call("search_tools", arguments), text("ok")]) as server:
        reply = chat(server, catalog()).send("hi")
    result = reply.tool_results[0]
    assert not result.ok
    assert result.error_kind in ("invalid_arguments", "invalid_json")
    assert problem in result.content
    assert '{"query": "create a calendar event"}' in result.content


def test_a_silly_limit_is_bounded() -> None:
    script = [tool_call("search_tools", query="crm record", limit=10_000), text("ok")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog())
        conversation.send("update the crm")
    assert len(conversation.discovered) == 10


def test_a_deferred_tool_called_before_any_search_does_not_run() -> None:
    ran: list[str] = []
    script = [tool_call("create_github_issue", repository="a/b", title="x"), text("ok")]
    with ScriptedServer(script) as server:
        reply = chat(server, catalog(ran)).send("file a bug")
    assert ran == []
    assert reply.tool_results[0].error_kind == "unknown_tool"
    assert reply.tool_results[0].content == (
        "Tool 'create_github_issue' is not loaded: call search_tools with what you need "
        "first, then call the tool it finds."
    )


def test_the_unknown_tool_answer_never_lists_the_catalog() -> None:
    registry = catalog()
    for i in range(30):
        registry.register_schema(f"visible_{i}", {"type": "object"}, lambda: "ok")
    with ScriptedServer([tool_call("crm_updates_1"), text("ok")]) as server:
        reply = chat(server, registry).send("update the crm")
    answer = reply.tool_results[0].content
    assert answer.startswith("Unknown tool 'crm_updates_1'.")
    assert "crm_update_" not in answer  # no deferred name, not even as "did you mean"
    assert "visible_" not in answer  # 31 visible names: none listed, none near
    assert len(answer) < 200


def test_what_was_found_outlives_trimming_export_and_a_new_process() -> None:
    registry = catalog()
    script = [tool_call("search_tools", query="github issue", limit=1), text("Found it.")]
    with ScriptedServer([*script, text("Done.")]) as server:
        first = chat(server, registry, max_history_messages=1)
        first.send("I need to file bugs")
        state = first.export_state(key=KEY)
        assert state["discovered"] == ["create_github_issue"]
        again = Conversation.from_state(
            json.loads(json.dumps(state)), server.client(), registry=registry, key=KEY
        )
        again.send("go on")
    assert again.discovered == ["create_github_issue"]
    assert "create_github_issue" in sent(server, 2)
    assert len(server.requests[2]["messages"]) == 1  # trimmed to the newest message


def test_a_tampered_discovered_list_is_refused() -> None:
    registry = catalog()
    signed = Conversation(None, MODEL, registry=registry).export_state(key=KEY)
    signed["discovered"] = ["crm_update_1"]
    with pytest.raises(ConversationStateError, match="signature"):
        Conversation.from_state(signed, None, registry=registry, key=KEY)
    for bad in ("crm_update_1", [1], ["x"] * 10_001):
        state = Conversation(None, MODEL, registry=registry).export_state()
        state["discovered"] = bad
        with pytest.raises(ConversationStateError, match="discovered"):
            Conversation.from_state(state, None, registry=registry)


def test_a_version_2_state_found_nothing_and_version_3_must_say() -> None:
    registry = catalog()
    state = Conversation(None, MODEL, registry=registry).export_state()
    state["discovered"] = ["create_github_issue"]
    del state["options"]["tool_search"]
    state["version"] = 2  # before tool search: whatever it says, it found nothing
    assert Conversation.from_state(state, None, registry=registry).discovered == []
    state = Conversation(None, MODEL, registry=registry).export_state()
    del state["discovered"]
    with pytest.raises(ConversationStateError, match="discovered"):
        Conversation.from_state(state, None, registry=registry)


def test_without_deferred_tools_nothing_changes() -> None:
    registry = ToolRegistry()
    registry.register_tool(catalog()["get_time"].function)
    with ScriptedServer([tool_call("search_tools", query="x"), text("ok")]) as server:
        reply = chat(server, registry).send("time?")
    assert sent(server, 0) == ["get_time"]
    assert reply.tool_results[0].error_kind == "unknown_tool"  # dispatch's usual answer


def test_a_registry_tool_named_search_tools_is_a_usage_error() -> None:
    registry = catalog()
    registry.register_schema("search_tools", {"type": "object"}, lambda: "mine")
    with ScriptedServer([text("ok")]) as server, pytest.raises(UsageError, match="rename"):
        chat(server, registry).send("hi")


def test_the_responses_api_gets_the_search_tool_too() -> None:
    script = [tool_call("search_tools", query="github issue", limit=1), text("ok")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(), dialect="responses")
        conversation.send("file a bug")
    assert tool_names(server.requests[0]) == ["get_time", "search_tools"]
    assert "create_github_issue" in tool_names(server.requests[1])


def test_selection_and_deferred_tools_work_together() -> None:
    registry = catalog()
    registry.register_schema(
        "get_weather", {"type": "object"}, lambda: "sunny", description="Weather."
    )
    script = [tool_call("search_tools", query="github issue", limit=1), text("ok")]
    with ScriptedServer(script) as server:
        chat(server, registry, tool_search=1).send("weather in Rome")
    assert sent(server, 0) == ["get_weather", "search_tools"]
    assert sent(server, 1) == ["create_github_issue", "get_weather", "search_tools"]


def test_the_async_conversation_searches_and_loads_the_same_way() -> None:
    import asyncio

    from toolreg import AsyncConversation

    ran: list[str] = []
    script = [
        tool_call("search_tools", query="github issue", limit=1),
        tool_call("create_github_issue", repository="a/b", title="Bug"),
        text("Opened."),
    ]

    async def main(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            conversation = AsyncConversation(client, MODEL, registry=catalog(ran))
            await conversation.send("file a bug")
            return conversation

    with ScriptedServer(script) as server:
        conversation = asyncio.run(main(server))
    assert conversation.discovered == ["create_github_issue"]
    assert ran == ["create_github_issue"]
    assert "create_github_issue" not in sent(server, 0)
    assert "create_github_issue" in sent(server, 1)
