"""Versions of one tool side by side: the latest by default, an older one where pinned."""

from toolreg import Conversation, ToolRegistry, pinned
from toolreg.testing import ScriptedServer, text, tool_call

tools = ToolRegistry()


@tools.register_tool(name="search", version="1", read_only=True)
def search_v1(q: str) -> str:
    """Search the catalog. Use it when the user asks for a product."""
    return f"v1 found {q}"


@tools.register_tool(name="search", version="2", read_only=True)
def search_v2(query: str, limit: int = 5) -> str:
    """Search the catalog, `limit` hits at most. Use it when the user asks for a product."""
    return f"v2 found {query} (up to {limit})"


print([t.version for t in tools.versions("search")])  # ['2', '1']: the latest first
print(tools.dispatch_tool("search", {"query": "tea"}).content)  # v2 found tea (up to 5)

old_clients = pinned(tools, {"search": "1"})  # a view: search is version 1 here
print(old_clients.dispatcher.dispatch_tool("search", {"q": "tea"}).content)  # v1 found tea

# a conversation pins the versions it was built for; its saved state keeps them
with ScriptedServer([tool_call("search", q="tea"), text("Found it.")]) as model:
    chat = Conversation(model.client(), "m", registry=tools, versions={"search": "1"})
    print(chat.send("Do you sell tea?").tool_results[0].content)  # v1 found tea
    state = chat.export_state()
print(state["options"]["versions"])  # {'search': '1'}: from_state(state, ...) goes on with it
