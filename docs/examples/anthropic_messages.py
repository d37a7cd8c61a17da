"""The loop over Anthropic's Messages API: give the conversation an anthropic client."""

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, call, text, tool_calls

shop = ToolRegistry()


@shop.register_tool(read_only=True)
def stock(item: str) -> int:
    """How many of an item are in stock. Use it when the user asks what is available."""
    return 3


script = [tool_calls(call("stock", item="mug"), call("stock", item="cup")), text("3 and 3.")]
with ScriptedServer(script) as server:
    client = server.anthropic_client()  # anthropic.Anthropic(base_url=server.root_url, ...)
    chat = Conversation(client, "claude-sonnet-4-5", registry=shop, system="Be brief.")
    print(chat.send("Mugs and cups?").text)  # 3 and 3.
    second = server.requests[1]
assert second["system"] == "Be brief."
results = second["messages"][-1]["content"]  # one user message answers both calls
assert [block["type"] for block in results] == ["tool_result", "tool_result"]
