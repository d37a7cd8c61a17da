"""Anthropic's own tool search: deferred tools go out with defer_loading, found by reference."""

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

catalog = ToolRegistry()
catalog.register_schema("get_time", {"type": "object"}, lambda: "12:00", description="The time.")
issue = {"description": "Open a GitHub issue.", "defer_loading": True}
catalog.register_schema("open_issue", {"type": "object"}, lambda: "#7", **issue)

script = [tool_call("search_tools", query="github issue"), tool_call("open_issue"), text("#7")]
with ScriptedServer(script) as server:
    chat = Conversation(
        server.anthropic_client(), "claude-model", registry=catalog, deferred_search="client"
    )
    chat.send("Open an issue about the crash.")
    sent = {t["name"]: t for t in server.requests[0]["tools"]}
    found = server.requests[1]["messages"][-1]["content"][0]["content"]
assert sent["open_issue"]["defer_loading"] is True  # sent, kept out of the model's context
assert found == [{"type": "tool_reference", "tool_name": "open_issue"}]  # toolreg's index
assert chat.discovered == ["open_issue"]  # kept by export_state() too
