"""Tool search in a conversation reads what the step offers, on every provider: a
`search_tools` answer never names a tool the toolset's `offer()` hides for that step, and
`tool_search=` reads each API's history (chat messages, Responses items, Anthropic messages)
through its provider, so the tool a model called stays offered for the rest of the turn.
Every test goes through the real SDKs to `ScriptedServer` on 127.0.0.1."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolreg import (
    AsyncConversation,
    Conversation,
    StepContext,
    Tool,
    ToolRegistry,
    searchable,
)
from toolreg.dispatch import DispatchSettings
from toolreg.testing import ScriptedServer, call, raw, text, tool_call, tool_calls
from toolreg.toolsets import BaseToolset
from toolreg.toolsets.search import ToolSearch

MODEL = "scripted-model"


def catalog(ran: list[str]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_time() -> str:
        """The current time."""
        return "12:00"

    @registry.register_tool(defer_loading=True, tags={"admin"})
    def delete_account(user: str) -> str:
        """Delete a user account permanently."""
        ran.append(f"delete_account {user}")
        return "deleted"

    @registry.register_tool(defer_loading=True)
    def list_orders(user: str) -> str:
        """List the orders of a user account."""
        ran.append(f"list_orders {user}")
        return "[]"

    return registry


class PerUser(BaseToolset):
    """Offers the `admin` tools to an admin only (the application's context says who)."""

    label = "per-user tools"

    def __init__(self, inner: ToolRegistry) -> None:
        super().__init__()
        self.inner = inner

    @property
    def revision(self) -> int:
        return self.inner.revision

    def tools(self) -> list[Tool]:
        return self.inner.tools()

    def get(self, name: str) -> Tool | None:
        return self.inner.get(name)

    def dispatch_settings(self) -> DispatchSettings:
        return self.inner.settings

    def offer(self, step: StepContext) -> list[Tool]:
        admin = step.context == "admin"
        return [t for t in self.inner.tools() if admin or "admin" not in t.tags]


def _client(server: ScriptedServer, dialect: str) -> tuple[Any, dict[str, Any]]:
    if dialect == "anthropic":
        return server.anthropic_client(), {}
    return server.client(), {"dialect": dialect}


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in tools]


# -- search answers only among what offer() gives --------------------------------------------


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_a_search_never_names_a_tool_the_step_does_not_offer(dialect: str) -> None:
    ran: list[str] = []
    script = [
        tool_call("search_tools", query="delete my user account", id="s1"),
        tool_call("delete_account", user="bob", id="c1"),
        text("I cannot."),
    ]
    with ScriptedServer(script) as server:
        client, options = _client(server, dialect)
        chat = Conversation(client, MODEL, registry=PerUser(catalog(ran)), context="bob", **options)
        reply = chat.send("delete my account")
    found, refused = reply.tool_results
    assert "delete_account" not in found.content
    assert "Delete a user account" not in found.content
    assert "list_orders" in found.content  # offered to bob: found
    assert chat.discovered == ["list_orders"]
    assert refused.error_kind == "unknown_tool"
    assert ran == []
    for request in server.requests:
        assert "delete_account" not in str(request.get("tools"))


def test_the_same_search_finds_it_for_whom_the_step_offers_it() -> None:
    ran: list[str] = []
    script = [
        tool_call("search_tools", query="delete my user account", id="s1"),
        tool_call("delete_account", user="bob", id="c1"),
        text("Done."),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), MODEL, registry=PerUser(catalog(ran)), context="admin")
        reply = chat.send("delete bob's account")
    assert "delete_account" in reply.tool_results[0].content
    assert ran == ["delete_account bob"]


def test_an_async_conversation_searches_what_the_step_offers_too() -> None:
    ran: list[str] = []

    async def main(server: ScriptedServer) -> Any:
        async with server.async_client() as client:
            chat = AsyncConversation(client, MODEL, registry=PerUser(catalog(ran)), context="bob")
            return await chat.send("delete my account")

    script = [tool_call("search_tools", query="delete user account", id="s1"), text("No.")]
    with ScriptedServer(script) as server:
        reply = asyncio.run(main(server))
    assert "delete_account" not in reply.tool_results[0].content


def test_the_apis_own_client_search_answers_among_the_offer_too() -> None:
    """`deferred_search="client"` on the Responses API: the `tool_search_output` loads only
    tools the step offers."""
    ran: list[str] = []
    item = {
        "type": "tool_search_call",
        "call_id": "s1",
        "execution": "client",
        "arguments": {"query": "delete user account"},
    }
    with ScriptedServer([raw([item]), text("No.")]) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=PerUser(catalog(ran)),
            context="bob",
            dialect="responses",
            deferred_search="client",
        )
        chat.send("delete my account")
    (output,) = [i for i in server.requests[1]["input"] if i.get("type") == "tool_search_output"]
    assert [t["name"] for t in output["tools"]] == ["list_orders"]


# -- tool_search= reads every provider's history ---------------------------------------------


def office() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def get_weather(city: str) -> str:
        """Current weather of a city: temperature, rain and wind."""
        return f"sunny in {city}"

    @registry.register_tool
    def send_email(to: str, subject: str) -> str:
        """Send an email message to someone."""
        return "sent"

    @registry.register_tool
    def list_files(path: str) -> str:
        """List the files in a directory."""
        return "[]"

    @registry.register_tool
    def convert_currency(amount: float, to: str) -> str:
        """Convert an amount of money into another currency."""
        return "1.0"

    return registry


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_tool_search_keeps_the_called_tool_offered_on_every_provider(
    dialect: str, stream: bool
) -> None:
    """With `messages=1`, the last thing the person wrote is the question; a round of tool
    results (Anthropic sends them as a "user" message) is not: the second model call is
    still offered what the question found, and the tool the model called."""
    script = [
        tool_call("get_weather", city="Paris", id="c1"),
        tool_call("send_email", to="bob", subject="rain", id="c2"),  # offered? it was not
        text("Sent."),
    ]
    option = ToolSearch(limit=1, messages=1)
    with ScriptedServer(script) as server:
        client, options = _client(server, dialect)
        chat = Conversation(
            client, MODEL, registry=office(), tool_search=option, stream=stream, **options
        )
        reply = chat.send("what is the weather in Paris?")
    offered = [_names(r.get("tools", [])) for r in server.requests]
    assert offered[0] == ["get_weather"]  # the question's best match
    assert offered[1] == ["get_weather"]  # ... and still, after a round of results
    assert offered[2] == ["get_weather", "send_email"]  # and what was called since
    assert [r.ok for r in reply.tool_results] == [True, True]


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_tool_search_reads_the_persons_content_parts_on_every_provider(dialect: str) -> None:
    """A question given as content parts (text blocks) is read in each API's own shape."""
    parts = {
        "tools": [{"type": "text", "text": "convert 10 euros into another currency"}],
        "responses": [{"type": "input_text", "text": "convert 10 euros into another currency"}],
        "anthropic": [{"type": "text", "text": "convert 10 euros into another currency"}],
    }[dialect]
    with ScriptedServer([text("ok")]) as server:
        client, options = _client(server, dialect)
        chat = Conversation(client, MODEL, registry=office(), tool_search=1, **options)
        chat.run([{"role": "user", "content": parts}])
    assert _names(server.requests[0]["tools"]) == ["convert_currency"]


def test_parallel_calls_all_stay_offered_on_anthropic() -> None:
    script = [
        tool_calls(call("get_weather", city="Paris", id="a"), call("list_files", path="/", id="b")),
        text("Done."),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(server.anthropic_client(), MODEL, registry=office(), tool_search=1)
        chat.send("weather in Paris")
    assert _names(server.requests[1]["tools"]) == ["get_weather", "list_files"]


@pytest.mark.parametrize("dialect", ["tools", "responses", "anthropic"])
def test_a_searchable_view_reads_the_history_through_the_provider(dialect: str) -> None:
    """`registry=searchable(...)`: the view's own `offer` reads the step's history with the
    conversation's provider (`StepContext.reader`), on every API."""
    script = [tool_call("get_weather", city="Paris", id="c1"), text("Sunny.")]
    with ScriptedServer(script) as server:
        client, options = _client(server, dialect)
        view = searchable(office(), limit=1, messages=1)
        Conversation(client, MODEL, registry=view, **options).send("weather in Paris?")
    assert [_names(r["tools"]) for r in server.requests] == [["get_weather"], ["get_weather"]]
