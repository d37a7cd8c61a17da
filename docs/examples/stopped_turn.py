"""A turn stopped while a call runs: the call is told, and so are the model and you."""

import contextlib
from typing import Any

from toolreg import Conversation, ToolCancelled, ToolContext, ToolRegistry, ToolStarted
from toolreg.testing import ScriptedServer, call, text, tool_calls

registry = ToolRegistry()


@registry.register_tool
def pack(order: int, ctx: ToolContext[Any]) -> str:
    """Pack an order's items."""
    if ctx.cancelled.wait(30):  # set when the turn is stopped
        raise ToolCancelled(f"Packing of order {order} stopped after one item.")
    return "packed"


@registry.register_tool
def label(order: int) -> str:
    """Print an order's label."""
    return "printed"


script = [tool_calls(call("pack", order=7), call("label", order=7)), text("Where were we?")]
with ScriptedServer(script) as model:
    chat = Conversation(model.client(), "scripted-model", registry=registry, max_concurrency=1)
    with contextlib.closing(chat.stream("Pack and label order 7")) as events:
        for event in events:
            if isinstance(event, ToolStarted):
                break  # the reader goes away while `pack` runs
    stopped = chat.turn_results
    for result in stopped:
        print(result.tool_name, result.outcome, "-", result.content)
    # pack interrupted - Packing of order 7 stopped after one item.
    # label not_started - Tool 'label' was not run: the turn was stopped before it started.
    reply = chat.send("Carry on")  # the model reads both answers: nothing runs twice
assert [r.outcome for r in stopped] == ["interrupted", "not_started"]
assert [m["role"] for m in reply.messages] == [
    "user",
    "assistant",
    "tool",
    "tool",
    "user",
    "assistant",
]
