"""Large catalogs: tool search, and tools kept back until a search finds them."""

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call
from toolreg.toolsets.search import ToolSearch

catalog = ToolRegistry()
for name, description in [
    ("get_forecast", "Weather forecast for a city."),
    ("train_tickets", "查询火车票余票和票价。"),
    ("help", "Ask a human."),
]:
    catalog.register_schema(name, {"type": "object"}, lambda: "ok", description=description)
issue = {"description": "Open a GitHub issue.", "defer_loading": True}
catalog.register_schema("open_issue", {"type": "object"}, lambda: "#7", **issue)
assert [t.name for t in catalog.search_tools("明天的火车票")] == ["train_tickets"]

script = [tool_call("search_tools", query="github issue"), tool_call("open_issue"), text("#7")]
with ScriptedServer(script) as server:
    search = ToolSearch(limit=1, always=["help"])
    chat = Conversation(server.client(), "any-model", registry=catalog, tool_search=search)
    chat.send("Weather tomorrow? If it rains, open an issue.")
    offered = [[t["function"]["name"] for t in r["tools"]] for r in server.requests]
assert offered[0] == ["get_forecast", "help", "search_tools"]
assert "open_issue" in offered[1]
assert chat.discovered == ["open_issue"]
