"""A prefixed toolset with a description is one `namespace` tool on the Responses API, on
the wire: the conversation sends it, the model's call in the namespace runs the prefixed
tool, and the history goes back with the call as received. Elsewhere (chat completions,
Anthropic), and without a description, the flat prefixed names. Real SDKs against
`ScriptedServer` on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import Conversation, ToolRegistry, UsageError, combined, filtered, prefixed
from toolreg.testing import ScriptedServer, raw, text, tool_call

MODEL = "scripted-model"


def local() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_time() -> str:
        """The current time."""
        return "12:00"

    return registry


def crm(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def find_order(order_id: str) -> str:
        """Find an order by its id."""
        ran.append(f"find_order {order_id}")
        return "shipped"

    @registry.register_tool
    def refund(order_id: str) -> str:
        """Refund an order."""
        ran.append(f"refund {order_id}")
        return "refunded"

    return registry


def namespaced_call(name: str, arguments: str, call_id: str = "c1") -> Any:
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "namespace": "crm",
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }
    return raw([item])


@pytest.mark.parametrize("stream", [False, True])
def test_the_responses_loop_sends_a_namespace_and_runs_a_call_made_in_it(stream: bool) -> None:
    ran: list[str] = []
    tools = combined(local(), prefixed(crm(ran), "crm", description="Customer orders."))
    script = [namespaced_call("find_order", '{"order_id": "A1"}'), text("It shipped.")]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.client(), MODEL, registry=tools, dialect="responses", stream=stream
        )
        reply = chat.send("where is order A1?")
    first = server.requests[0]["tools"]
    assert first[0] == {
        "type": "function",
        "name": "get_time",
        "description": "The current time.",
        "parameters": first[0]["parameters"],
        "strict": False,
    }
    namespace = first[1]
    assert namespace["type"] == "namespace"
    assert namespace["name"] == "crm"
    assert namespace["description"] == "Customer orders."
    assert [t["name"] for t in namespace["tools"]] == ["find_order", "refund"]
    assert len(first) == 2  # no flat crm_ names beside it
    assert ran == ["find_order A1"]
    assert reply.tool_results[0].tool_name == "crm_find_order"
    assert reply.text == "It shipped."
    echoed = [i for i in server.requests[1]["input"] if i.get("type") == "function_call"]
    assert echoed[0]["namespace"] == "crm"
    assert echoed[0]["name"] == "find_order"
    assert server.errors == []


def test_the_namespace_holds_only_what_the_step_offers() -> None:
    ran: list[str] = []
    view = prefixed(filtered(crm(ran), names=["find_order"]), "crm", description="Customer orders.")
    with ScriptedServer([text("ok")]) as server:
        Conversation(server.client(), MODEL, registry=view, dialect="responses").send("hi")
    (namespace,) = server.requests[0]["tools"]
    assert [t["name"] for t in namespace["tools"]] == ["find_order"]


def test_a_filtered_view_over_a_namespace_keeps_it() -> None:
    ran: list[str] = []
    inner = prefixed(crm(ran), "crm", description="Customer orders.")
    view = filtered(inner, names=["crm_refund"])
    with ScriptedServer([text("ok")]) as server:
        Conversation(server.client(), MODEL, registry=view, dialect="responses").send("hi")
    (namespace,) = server.requests[0]["tools"]
    assert namespace["name"] == "crm"
    assert [t["name"] for t in namespace["tools"]] == ["refund"]


@pytest.mark.parametrize("dialect", ["tools", "anthropic"])
def test_other_apis_get_the_flat_prefixed_names(dialect: str) -> None:
    ran: list[str] = []
    tools = combined(local(), prefixed(crm(ran), "crm", description="Customer orders."))
    with ScriptedServer([tool_call("crm_refund", order_id="A1"), text("ok")]) as server:
        if dialect == "anthropic":
            chat = Conversation(server.anthropic_client(), MODEL, registry=tools)
        else:
            chat = Conversation(server.client(), MODEL, registry=tools)
        chat.send("refund A1")
    names = [t.get("name") or t["function"]["name"] for t in server.requests[0]["tools"]]
    assert names == ["get_time", "crm_find_order", "crm_refund"]
    assert ran == ["refund A1"]


def test_without_a_description_the_responses_api_gets_flat_names_too() -> None:
    ran: list[str] = []
    with ScriptedServer([text("ok")]) as server:
        tools = prefixed(crm(ran), "crm")
        Conversation(server.client(), MODEL, registry=tools, dialect="responses").send("hi")
    assert [t["name"] for t in server.requests[0]["tools"]] == ["crm_find_order", "crm_refund"]


def test_a_forced_tool_keeps_its_namespace_flat() -> None:
    """`tool_choice` names one function: the namespace it is in goes flat for the API to
    find it by that name."""
    ran: list[str] = []
    tools = prefixed(crm(ran), "crm", description="Customer orders.")
    with ScriptedServer([text("ok")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=tools, dialect="responses", tool_choice="crm_refund"
        )
        chat.send("refund A1")
    assert [t["type"] for t in server.requests[0]["tools"]] == ["function", "function"]


def test_a_namespace_needs_a_description() -> None:
    with pytest.raises(UsageError, match="description="):
        prefixed(crm([]), "crm", description="  ")
    with pytest.raises(UsageError, match="description"):
        prefixed(crm([]), "crm").namespace()
    assert prefixed(crm([]), "crm", description="Orders.").namespace()["description"] == "Orders."
