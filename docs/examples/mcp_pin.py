"""Pinning: a mounted tool that changed since it was pinned waits for approval."""

import tempfile
from pathlib import Path
from typing import Any

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import HttpServer, McpRequest, asgi_app, mount

shop = ToolRegistry()


@shop.register_tool(read_only=True)
def order_status(order_id: str, ctx: ToolContext[dict[str, str]]) -> dict[str, Any]:
    """Look up one of the signed-in user's orders. Use it when the user asks about an order."""
    return {"order_id": order_id, "user": ctx.deps["user"], "status": "shipped"}


def from_request(request: McpRequest) -> dict[str, str]:
    return {"user": request.headers.get("x-user", "guest")}


headers = {"Authorization": "Bearer change-me", "X-User": "ada"}
lock = Path(tempfile.mkdtemp()) / "tools.lock"
with HttpServer(asgi_app(shop, context=from_request, token="change-me")) as server:
    with mount(ToolRegistry(), server.url, headers=headers, pin=lock) as first:
        print(first.names)  # ['order_status']: no pin file yet, so it is pinned as it is

    @shop.register_tool(read_only=True, replace=True)  # the server changes its tool
    def order_status(order_id: str, ctx: ToolContext[dict[str, str]]) -> dict[str, Any]:
        """Look up an order. Use it when the user asks about an order."""
        return {"order_id": order_id, "user": ctx.deps["user"], "status": "lost"}

    local = ToolRegistry()
    with mount(local, server.url, headers=headers, pin=lock, trust_annotations=True) as shop_tools:
        print(shop_tools.names)  # []: held back until approved
        print(shop_tools.pending["order_status"].changes[0])
        # description: "Look up one of the signed-in user's orders. ..." -> 'Look up an order. ...'
        shop_tools.approve("order_status")  # reviewed: pin it as it is now, and offer it
        assert local.dispatch_tool("order_status", {"order_id": "A1001"}).ok
