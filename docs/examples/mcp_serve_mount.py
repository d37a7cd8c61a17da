"""Serve a registry over streamable HTTP, then mount it into another registry."""

from typing import Any

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import HttpServer, McpRequest, asgi_app, mount

shop = ToolRegistry()


@shop.register_tool(read_only=True)
def order_status(order_id: str, ctx: ToolContext[dict[str, str]]) -> dict[str, Any]:
    """Look up one of the signed-in user's orders. Use it when the user asks about an order."""
    ctx.report_progress(1, 2, "looking it up")  # MCP notifications when served; else nothing
    ctx.log(f"{ctx.deps['user']} asked about {order_id}")
    return {"order_id": order_id, "user": ctx.deps["user"], "status": "shipped"}


def from_request(request: McpRequest) -> dict[str, str]:
    return {"user": request.headers.get("x-user", "guest")}  # never from the model


app = asgi_app(shop, context=from_request, token="change-me")  # `uvicorn module:app`

with HttpServer(app) as server:  # the app on a free port, in a background thread
    local = ToolRegistry()
    headers = {"Authorization": "Bearer change-me", "X-User": "ada"}
    # the server's readOnlyHint is believed only because we trust this server
    with mount(local, server.url, prefix="shop_", headers=headers, trust_annotations=True):
        print(local.names())  # ['shop_order_status']
        found = local.dispatch_tool("shop_order_status", '{"order_id": "A1001"}')
        print(found.content)  # {"order_id": "A1001", "user": "ada", "status": "shipped"}
        assert found.value.structured == {"order_id": "A1001", "user": "ada", "status": "shipped"}
        missing = local.dispatch_tool("shop_order_status", "{}")  # refused here, never sent
        assert missing.error_kind == "invalid_arguments"
    assert local.names() == []  # unregistered when the mount closes
