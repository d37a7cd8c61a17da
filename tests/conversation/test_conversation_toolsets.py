"""`Conversation(registry=<any Toolset>)`: a combined, prefixed or filtered view, a toolset of
one's own whose `offer` depends on the step (context, history, round), and several MCP mounts
at once, each with its own prefix, over real transports. The model's side is the real
`openai` SDK against `ScriptedServer` on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import _mcp_tools as served_tools
import pytest

from toolreg import (
    Conversation,
    StepContext,
    Tool,
    ToolRegistry,
    UsageError,
    combined,
    filtered,
    prefixed,
)
from toolreg.dispatch import DispatchSettings
from toolreg.mcp import HttpServer, Mount, asgi_app
from toolreg.testing import ScriptedServer, call, text, tool_call, tool_calls
from toolreg.toolsets import BaseToolset

MODEL = "scripted-model"
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def math_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool(tags={"math"})
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @reg.register_tool(tags={"admin"})
    def wipe() -> str:
        """Delete everything."""
        return "wiped"

    return reg


def notes_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def note(text: str) -> str:
        """Write a note down."""
        return f"noted: {text}"

    return reg


def offered(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def test_a_combined_prefixed_toolset_is_offered_and_dispatched() -> None:
    tools = combined(prefixed(math_registry(), "calc"), notes_registry())
    turns = [tool_calls(call("calc_add", a=2, b=3), call("note", text="hi")), text("5")]
    with ScriptedServer(turns) as server:
        reply = Conversation(server.client(), MODEL, registry=tools).send("add and note")
        assert offered(server.requests[0]) == ["calc_add", "calc_wipe", "note"]
    assert [r.content for r in reply.tool_results] == ["5", "noted: hi"]


def test_a_filtered_view_offers_and_runs_only_what_it_keeps() -> None:
    safe = filtered(math_registry(), lambda tool: "admin" not in tool.tags)
    with ScriptedServer([tool_call("wipe"), text("I cannot.")]) as server:
        reply = Conversation(server.client(), MODEL, registry=safe).send("wipe it all")
        assert offered(server.requests[0]) == ["add"]
    assert reply.tool_results[0].error_kind == "unknown_tool"


class RoleTools(BaseToolset):
    """Offers the admin tools only to an admin, and nothing after two tool rounds: the
    offer is computed per step from the run's context and round."""

    label = "role tools"

    def __init__(self, inner: ToolRegistry) -> None:
        super().__init__()
        self.inner = inner
        self.steps: list[StepContext] = []

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
        self.steps.append(step)
        if step.round >= 2:
            return []
        admin = step.context == {"role": "admin"}
        return [t for t in self.tools() if admin or "admin" not in t.tags]


def test_a_toolsets_offer_sees_the_step_and_a_call_outside_it_is_refused() -> None:
    tools = RoleTools(math_registry())
    turns = [tool_call("wipe"), tool_call("add", a=1, b=1), text("done")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=tools, context={"role": "user"})
        reply = chat.send("wipe, then add")
        assert offered(server.requests[0]) == ["add"]
        assert offered(server.requests[2]) == []  # round 2: this toolset offers nothing
    wiped, added = reply.tool_results
    assert wiped.error_kind == "unknown_tool"  # not offered to this user: never runs
    assert wiped.content == "Unknown tool 'wipe'. Available: add."  # only what is offered
    assert added.content == "2"
    assert [s.round for s in tools.steps] == [0, 1, 2]
    assert tools.steps[0].history[-1] == {"role": "user", "content": "wipe, then add"}
    assert tools.steps[0].context == {"role": "user"}


def test_the_admin_gets_the_admin_tools() -> None:
    tools = RoleTools(math_registry())
    with ScriptedServer([tool_call("wipe"), text("done")]) as server:
        chat = Conversation(server.client(), MODEL, registry=tools, context={"role": "admin"})
        assert chat.send("wipe").tool_results[0].content == "wiped"
        assert offered(server.requests[0]) == ["add", "wipe"]


def test_a_clash_in_a_combined_toolset_is_an_error_not_an_override() -> None:
    with pytest.raises(UsageError, match="note"):
        combined(notes_registry(), notes_registry())


def test_tools_filter_and_state_work_over_a_toolset() -> None:
    tools = combined(prefixed(math_registry(), "calc"), notes_registry())
    turns = [tool_call("note", text="x"), text("ok"), text("again")]
    with ScriptedServer(turns) as server:
        chat = Conversation(server.client(), MODEL, registry=tools, tools=["note", "math"])
        chat.send("note x")
        assert offered(server.requests[0]) == ["calc_add", "note"]
        again = Conversation.from_state(chat.export_state(), server.client(), registry=tools)
        assert again.send("more").text == "again"
        assert offered(server.requests[2]) == ["calc_add", "note"]


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    with HttpServer(asgi_app(served_tools.registry)) as server:
        yield server.url


@pytest.mark.slow
def test_two_mounts_each_prefixed_drive_a_conversation(served_url: str) -> None:
    with (
        Mount(TIME_SERVER, trust_annotations=True) as clock,
        Mount(served_url, include=["add"], trust_annotations=True) as calc,
    ):
        tools = combined(notes_registry(), prefixed(clock, "time"), prefixed(calc, "calc"))
        turns = [
            tool_calls(
                call("time_get_current_time", timezone="Asia/Tokyo"),
                call("calc_add", a=20, b=22),
            ),
            text("It is late in Tokyo, and the answer is 42."),
        ]
        with ScriptedServer(turns) as server:
            reply = Conversation(server.client(), MODEL, registry=tools).send("time and sum?")
            assert offered(server.requests[0]) == [
                "note",
                "time_get_current_time",
                "time_convert_time",
                "calc_add",
            ]
    now, total = reply.tool_results
    assert json.loads(now.content)["timezone"] == "Asia/Tokyo"
    assert total.content == "42"
    assert reply.text.endswith("42.")
