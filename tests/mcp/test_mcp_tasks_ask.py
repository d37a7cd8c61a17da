"""A served tool run as an MCP task asks the user: its `ctx.ask` is an `elicitation/create`
in the task's `inputRequests`, answered with `tasks/update` (raw JSON-RPC over HTTP on
127.0.0.1, as tests/test_mcp_tasks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from test_mcp_tasks import TASKS, Rpc, started, text

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import HttpServer, asgi_app

NIGHT = {
    "type": "object",
    "properties": {"night": {"type": "string"}, "guests": {"type": "integer", "minimum": 1}},
    "required": ["night"],
}
registry = ToolRegistry()


@registry.register_tool(task="optional")
def book(room: str, ctx: ToolContext[None]) -> str:
    """Book a room (a sync tool: asks which night)."""
    answer = ctx.ask(f"Which night for room {room}?", NIGHT)
    return f"{answer.action} {answer.data}"


@registry.register_tool(task="optional")
async def abook(room: str, ctx: ToolContext[None]) -> str:
    """Book a room (an async tool: asks which night)."""
    answer = await ctx.aask(f"Which night for room {room}?", NIGHT)
    return f"{answer.action} {answer.data}"


CAN_ASK = {**TASKS, "elicitation": {"form": {}}}


@pytest.mark.parametrize("tool", ["book", "abook"])
def test_a_tasks_question_goes_in_input_requests(tool: str) -> None:
    with HttpServer(asgi_app(registry)) as running:
        rpc = Rpc(running.url)
        for answer, expected, error in (
            (
                {"action": "accept", "content": {"night": "2026-12-24"}},
                "accept {'night': '2026-12-24'}",
                False,
            ),
            ({"action": "decline"}, "decline None", False),
            (
                {"action": "accept", "content": {"guests": 0}},
                "The user's answer does not fit",
                True,
            ),
        ):
            task_id = started(rpc, tool, {"room": "12"}, capabilities=CAN_ASK)
            waiting = rpc.until(task_id, "input_required")
            ((key, request),) = waiting["inputRequests"].items()
            assert request == {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Which night for room 12?",
                    "requestedSchema": NIGHT,
                },
            }
            rpc(
                "tasks/update",
                {"taskId": task_id, "inputResponses": {key: answer}},
                capabilities=CAN_ASK,
            )
            done: dict[str, Any] = rpc.until(task_id, "completed")["result"]
            assert done.get("isError", False) is error
            assert text(done).startswith(expected)
        # a client that cannot answer a form: the tool is told it cannot ask
        task_id = started(rpc, tool, {"room": "12"})
        done = rpc.until(task_id, "completed")["result"]
        assert done["isError"] is True
        assert text(done).startswith(f"Tool '{tool}' needs to ask the user, which this caller")
        rpc.http.close()
