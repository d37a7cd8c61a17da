"""The loop over the Responses API; state="server" sends only what is new."""

from toolreg import Conversation, ToolRegistry
from toolreg.testing import ScriptedServer, text, tool_call

shop = ToolRegistry()


@shop.register_tool(read_only=True)
def stock(item: str) -> int:
    """How many of an item are in stock. Use it when the user asks what is available."""
    return 3


script = [tool_call("stock", item="mug"), text("3 mugs left."), text("You're welcome.")]
with ScriptedServer(script) as server:
    chat = Conversation(
        server.client(), "any-model", registry=shop, dialect="responses", state="server"
    )
    print(chat.send("Any mugs left?").text)  # 3 mugs left.
    chat.send("Thanks!")
    first, second, third = server.requests
assert first["tools"][0]["name"] == "stock"
assert second["previous_response_id"] == "resp_scripted_1"
assert [item["type"] for item in second["input"]] == ["function_call_output"]
assert third["input"] == [{"role": "user", "content": "Thanks!"}]
