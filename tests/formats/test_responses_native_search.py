"""The Responses API's own tool search, namespaces and call fields (issue 20, item 1):
definitions checked key by key against the `openai` SDK's param types, conversations over
the real SDK against ScriptedServer on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _sdk_shapes import conforms
from openai.types.responses import (
    FunctionToolParam,
    NamespaceToolParam,
    ResponseToolSearchOutputItemParamParam,
    ToolSearchToolParam,
)
from openai.types.responses.response_input_param import ToolSearchCall

from toolreg import Conversation, ToolCall, ToolRegistry, UsageError
from toolreg.formats import responses
from toolreg.testing import ScriptedServer, raw, text, tool_call, tool_search_call
from toolreg.testing.inspection import tool_names

MODEL = "scripted-model"


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

    @registry.register_tool
    def crm_find_order(order_id: str) -> str:
        """Find an order in the CRM by its id."""
        if ran is not None:
            ran.append(f"crm_find_order {order_id}")
        return "order: shipped"

    return registry


def chat(server: ScriptedServer, registry: ToolRegistry, **options: Any) -> Conversation:
    options.setdefault("dialect", "responses")
    return Conversation(server.client(), MODEL, registry=registry, **options)


def items(server: ScriptedServer, index: int, kind: str) -> list[dict[str, Any]]:
    return [i for i in server.requests[index]["input"] if i.get("type") == kind]


# -- the definitions ---------------------------------------------------------------------------


def test_a_deferred_tool_is_exported_with_defer_loading() -> None:
    exported = {d["name"]: d for d in catalog().get_tools("responses")}
    assert exported["create_github_issue"]["defer_loading"] is True
    assert "defer_loading" not in exported["get_time"]
    for definition in exported.values():
        assert conforms(definition, FunctionToolParam) == []


def test_the_tool_search_tool_hosted_and_client_executed() -> None:
    hosted = responses.tool_search_tool()
    assert hosted == {"type": "tool_search"}
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    client = responses.tool_search_tool("Find tools.", schema)
    assert client == {
        "type": "tool_search",
        "execution": "client",
        "description": "Find tools.",
        "parameters": schema,
    }
    for tool in (hosted, client):
        assert conforms(tool, ToolSearchToolParam) == []
    with pytest.raises(UsageError, match="needs parameters="):
        responses.tool_search_tool("Find tools.")


def test_a_namespace_offers_its_tools_without_the_prefix() -> None:
    registry = catalog()
    grouped = responses.namespace_tool(
        "crm", "Customer orders.", registry.get_tools("responses", names=["crm_find_order"])
    )
    assert conforms(grouped, NamespaceToolParam) == []
    assert grouped["name"] == "crm"
    assert [t["name"] for t in grouped["tools"]] == ["find_order"]
    call = {"type": "function_call", "namespace": "crm", "name": "find_order", "call_id": "c"}
    assert responses.parse_calls([{**call, "arguments": '{"order_id": "7"}'}]) == [
        ToolCall("crm_find_order", '{"order_id": "7"}', "c")
    ]


@pytest.mark.parametrize(
    ("name", "description", "problem"),
    [
        ("crm", "Orders.", "does not start with 'crm_'"),
        ("c r m", "Orders.", "a name of a-z"),
        ("crm", "  ", "a description"),
    ],
)
def test_namespace_misuse_is_a_usage_error(name: str, description: str, problem: str) -> None:
    definitions = catalog().get_tools("responses", names=["get_time"])
    with pytest.raises(UsageError, match=problem):
        responses.namespace_tool(name, description, definitions)


def test_tool_search_calls_and_outputs_in_the_sdk_shapes() -> None:
    client = {"type": "tool_search_call", "call_id": "s1", "execution": "client"}
    server = {"type": "tool_search_call", "call_id": "s2", "execution": "server"}
    output = [{**client, "arguments": {"query": "x"}}, {**server, "arguments": {"query": "y"}}]
    assert conforms(output[0], ToolSearchCall) == []
    (call,) = responses.parse_calls(output)  # the hosted search is the server's
    assert call == ToolCall(responses.TOOL_SEARCH_CALL, {"query": "x"}, "s1")
    answered = responses.observation(
        catalog().dispatch_many([call])[0]  # no tool has that name: an error, no tools
    )
    assert answered == responses.tool_search_output("s1", [])
    assert conforms(answered, ResponseToolSearchOutputItemParamParam) == []


@pytest.mark.parametrize(
    "item",
    [
        {"type": "function_call", "namespace": 7, "name": "crm_find_order"},  # not text
        {"type": "function_call", "namespace": "", "name": "crm_find_order"},
    ],
)
def test_a_namespace_that_is_not_text_is_ignored(item: dict[str, Any]) -> None:
    (call,) = responses.parse_calls([{**item, "call_id": "c", "arguments": "{}"}])
    assert call.name == "crm_find_order"


# -- client-executed search in a conversation ---------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_tool_search_loads_what_toolreg_finds(stream: bool) -> None:
    ran: list[str] = []
    script = [
        tool_search_call(query="open a github issue", limit=1),
        tool_call("create_github_issue", repository="a/b", title="Bug"),
        text("Opened #42."),
    ]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(ran), deferred_search="client", stream=stream)
        reply = conversation.send("File a bug in a/b")
    first = server.requests[0]
    assert tool_names(first) == ["get_time", "crm_find_order", "tool_search"]
    (search,) = [t for t in first["tools"] if t["type"] == "tool_search"]
    assert conforms(search, ToolSearchToolParam) == []
    assert search["execution"] == "client"
    assert set(search["parameters"]["properties"]) == {"query", "limit"}
    (output,) = items(server, 1, "tool_search_output")
    assert conforms(output, ResponseToolSearchOutputItemParamParam) == []
    assert output["call_id"] == "search_1"
    (loaded,) = output["tools"]
    assert loaded["name"] == "create_github_issue"
    assert loaded["defer_loading"] is True
    assert conforms(loaded, FunctionToolParam) == []
    # loaded by the history, not sent again in `tools`; the search stays offered
    assert tool_names(server.requests[1]) == ["get_time", "crm_find_order", "tool_search"]
    assert items(server, 1, "tool_search_call")[0]["arguments"] == {
        "query": "open a github issue",
        "limit": 1,
    }
    assert ran == ["create_github_issue a/b"]
    assert reply.text == "Opened #42."
    assert conversation.discovered == ["create_github_issue"]
    assert reply.tool_results[0].tool_name == responses.TOOL_SEARCH_CALL
    assert reply.tool_results[0].content.startswith("Found 1 tool(s)")


def test_a_chinese_client_search_finds_the_chinese_tool() -> None:
    script = [tool_search_call(query="火车票", limit=1), text("有票")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(), deferred_search="client")
        conversation.send("帮我查火车票")
    assert conversation.discovered == ["train_ticket_cn"]
    (output,) = items(server, 1, "tool_search_output")
    assert [t["name"] for t in output["tools"]] == ["train_ticket_cn"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "quantum teleportation"},  # found nothing
        {"query": ""},
        {"query": ["a"]},
        {"limit": 3},
        {"query": "x" * 10_000},
    ],
)
def test_an_empty_or_hostile_client_search_loads_nothing(arguments: dict[str, Any]) -> None:
    script = [tool_search_call(arguments), text("Sorry.")]
    with ScriptedServer(script) as server:
        conversation = chat(server, catalog(), deferred_search="client")
        reply = conversation.send("teleport me")
    (output,) = items(server, 1, "tool_search_output")
    assert output["tools"] == []
    assert conversation.discovered == []
    assert reply.text == "Sorry."
    assert server.errors == []  # every history it was sent was valid


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('"a string"', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("null", "missing required property 'query'"),  # no arguments: {}
    ],
)
def test_tool_search_arguments_that_are_no_object_load_nothing(
    arguments: str, problem: str
) -> None:
    item = {"type": "tool_search_call", "call_id": "s", "execution": "client"}
    script = [raw([{**item, "arguments": json.loads(arguments)}]), text("ok")]
    with ScriptedServer(script) as server:
        reply = chat(server, catalog(), deferred_search="client").send("hi")
    assert not reply.tool_results[0].ok
    assert problem in reply.tool_results[0].content  # dispatch decoded it
    assert items(server, 1, "tool_search_output")[0]["tools"] == []
    assert server.errors == []


def test_a_tool_search_nobody_offered_is_answered_and_loads_nothing() -> None:
    with ScriptedServer([tool_search_call(query="github"), text("ok")]) as server:
        conversation = chat(server, catalog())  # the search_tools function, not tool_search
        reply = conversation.send("hi")
    assert items(server, 1, "tool_search_output")[0]["tools"] == []
    assert conversation.discovered == []
    assert reply.tool_results[0].error_kind == "unknown_tool"
    assert server.errors == []


def test_a_deferred_tool_is_not_run_before_the_client_search_finds_it() -> None:
    ran: list[str] = []
    script = [tool_call("create_github_issue", repository="a/b", title="x"), text("ok")]
    with ScriptedServer(script) as server:
        reply = chat(server, catalog(ran), deferred_search="client").send("file a bug")
    assert ran == []
    assert reply.tool_results[0].error_kind == "unknown_tool"


def test_the_client_search_and_what_it_found_survive_a_saved_state() -> None:
    registry = catalog()
    script = [
        tool_search_call(query="github issue", limit=1),
        text("Found it."),
        tool_call("create_github_issue", repository="a/b", title="x"),
        text("Done."),
    ]
    with ScriptedServer(script) as server:
        first = chat(server, registry, deferred_search="client")
        first.send("I need to file bugs")
        state = json.loads(json.dumps(first.export_state()))
        assert state["options"]["deferred_search"] == "client"
        again = Conversation.from_state(state, server.client(), registry=registry)
        reply = again.send("file one in a/b")
    assert again.options.deferred_search == "client"
    assert again.discovered == ["create_github_issue"]
    assert reply.tool_results[0].ok
    assert items(server, 2, "tool_search_output")[0]["tools"][0]["name"] == "create_github_issue"


def test_the_apis_own_search_needs_the_responses_dialect() -> None:
    with pytest.raises(UsageError, match='needs dialect="responses"'):
        Conversation(None, MODEL, registry=catalog(), deferred_search="client")
    with pytest.raises(UsageError, match="deferred_search='server'"):
        Conversation(None, MODEL, registry=catalog(), dialect="responses", deferred_search="server")  # type: ignore[arg-type]


def test_a_found_tool_is_a_plain_function_with_the_search_tools_function() -> None:
    script = [tool_call("search_tools", query="github issue", limit=1), text("ok")]
    with ScriptedServer(script) as server:
        chat(server, catalog()).send("file a bug")
    (found,) = [t for t in server.requests[1]["tools"] if t["name"] == "create_github_issue"]
    assert "defer_loading" not in found  # no tool_search tool: the API would refuse it


# -- hosted search ------------------------------------------------------------------------------


def test_a_hosted_search_sends_deferred_tools_and_runs_what_the_server_loaded() -> None:
    ran: list[str] = []
    searched = [
        {"type": "tool_search_call", "id": "ts_1", "call_id": None, "execution": "server"}
        | {"status": "completed", "arguments": {"query": "github"}},
        {"type": "tool_search_output", "id": "tso_1", "call_id": None, "execution": "server"}
        | {"status": "completed", "tools": []},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "create_github_issue"}
        | {"arguments": '{"repository": "a/b", "title": "x"}', "status": "completed"},
    ]
    with ScriptedServer([raw(searched), text("Opened.")]) as server:
        conversation = chat(server, catalog(ran), deferred_search="hosted")
        reply = conversation.send("file a bug")
    sent = {t.get("name", t["type"]): t for t in server.requests[0]["tools"]}
    assert sent["tool_search"] == {"type": "tool_search"}
    assert sent["create_github_issue"]["defer_loading"] is True
    assert "defer_loading" not in sent["get_time"]
    assert ran == ["create_github_issue a/b"]
    assert reply.text == "Opened."
    echoed = server.requests[1]["input"]
    assert [i.get("type") for i in echoed[1:4]] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ]
    assert items(server, 1, "function_call_output")[0]["output"] == "#42"


# -- namespace, caller and additional_tools on incoming items -----------------------------------


def test_a_namespaced_call_from_a_program_runs_and_goes_back_as_received() -> None:
    ran: list[str] = []
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c1",
        "namespace": "crm",
        "name": "find_order",
        "arguments": '{"order_id": "7"}',
        "status": "completed",
        "caller": {"type": "program", "caller_id": "prog_1"},
    }
    extra = {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": []}
    with ScriptedServer([raw([extra, call]), text("Shipped.")]) as server:
        reply = chat(server, catalog(ran)).send("where is order 7?")
    assert ran == ["crm_find_order 7"]
    assert reply.tool_results[0].tool_name == "crm_find_order"
    assert items(server, 1, "function_call") == [call]  # namespace and caller included
    assert items(server, 1, "additional_tools") == [extra]
    assert items(server, 1, "function_call_output")[0]["call_id"] == "c1"


def test_a_client_search_in_a_round_paused_for_approval_still_loads_after_resume() -> None:
    registry = catalog()

    @registry.register_tool(destructive=True)
    def refund(order: str) -> str:
        """Refund an order."""
        return "refunded"

    search = {"type": "tool_search_call", "id": "ts_1", "call_id": "s1", "execution": "client"}
    search |= {"status": "completed", "arguments": {"query": "github issue", "limit": 1}}
    call = {"type": "function_call", "id": "fc_1", "call_id": "r1", "name": "refund"}
    call |= {"arguments": '{"order": "7"}', "status": "completed"}
    with ScriptedServer([raw([search, call]), text("ok")]) as server:
        first = chat(server, registry, deferred_search="client", confirm="defer")
        paused = first.send("refund 7 and find a tool for issues")
        saved = json.loads(json.dumps(first.export_state()))
        again = Conversation.from_state(saved, server.client(), registry=registry)
        again.resume({paused.pending[0].call_id: True})
    (output,) = items(server, 1, "tool_search_output")
    assert [t["name"] for t in output["tools"]] == ["create_github_issue"]
