"""A tool's retry budget: ToolRetry asks the model again, until the budget is spent."""

from toolreg import Conversation, ToolRegistry, ToolRetry
from toolreg.testing import ScriptedServer, text, tool_call

shop = ToolRegistry()


@shop.register_tool(retries=1)
def find(query: str) -> str:
    """Search the catalog. Use it when the user looks for a product."""
    raise ToolRetry(f"Nothing matches {query!r}; try a shorter query.")


@shop.register_tool(read_only=True)
def stock(item: str) -> int:
    """How many of an item are in stock. Use it when the user asks what is available."""
    return 3


with ScriptedServer([tool_call("find", query="red shoes")] * 2) as model:
    limited = Conversation(model.client(), "scripted-model", registry=shop)
    stopped = limited.send("Find red shoes.")
assert stopped.stop_reason == "retry_limit"
assert stopped.text.endswith("more than its limit of 1 (retries=1).")
print(stopped.text)

# A call limit: the third call to `stock` is not run; "stop" ends the turn after its round.
script = [tool_call("stock", item=item) for item in ("mug", "cup", "pot")]
with ScriptedServer([*script, text("unused")]) as model:
    chat = Conversation(
        model.client(),
        "scripted-model",
        registry=shop,
        max_calls={"stock": 2},
        on_call_limit="stop",
    )
    reply = chat.send("Mugs, cups and pots?")
assert reply.stop_reason == "call_limit"
assert [r.error_kind for r in reply.tool_results] == [None, None, "call_limit"]
print(reply.tool_results[-1].content)
