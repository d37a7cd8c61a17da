"""stream(): the typed events of a turn, as they happen: text, each call and its progress."""

from typing import Any

from toolreg import (
    Conversation,
    TextDelta,
    ToolContext,
    ToolFinished,
    ToolProgress,
    ToolRegistry,
    ToolStarted,
    TurnFinished,
)
from toolreg.testing import ScriptedServer, text, tool_call

registry = ToolRegistry()


@registry.register_tool
def export_report(month: str, ctx: ToolContext[Any]) -> str:
    """Export the sales report of a month (slow: it reports its progress)."""
    for page in range(1, 4):
        ctx.report_progress(page, 3, f"page {page} of 3")
    return f"report-{month}.pdf"


seen: list[str] = []
turns = [tool_call("export_report", month="2026-11"), text("Your report is ready.")]
with ScriptedServer(turns) as server:
    chat = Conversation(server.client(), "any-model", registry=registry, context={}, stream=True)
    for event in chat.stream("Export November's report"):
        if isinstance(event, ToolStarted):
            seen.append(f"started {event.call.name}")
        elif isinstance(event, ToolProgress):
            seen.append(f"{event.progress:.0f}/{event.total:.0f} {event.message}")
        elif isinstance(event, ToolFinished):
            seen.append(f"finished: {event.result.content}")
        elif isinstance(event, TextDelta):
            seen.append(f"text: {event.text!r}")
        elif isinstance(event, TurnFinished):
            reply = event.reply

assert seen[:5] == [
    "started export_report",
    "1/3 page 1 of 3",
    "2/3 page 2 of 3",
    "3/3 page 3 of 3",
    "finished: report-2026-11.pdf",
]
assert "".join(s.removeprefix("text: ")[1:-1] for s in seen[5:]) == reply.text
print(reply.text)  # Your report is ready.
