"""One MCP server that re-exports two mounted servers, each prefixed, beside local tools."""

from toolreg import ToolRegistry, UsageError, combined, prefixed
from toolreg.mcp import HttpServer, Mount, asgi_app

billing, shipping, local = ToolRegistry(), ToolRegistry(), ToolRegistry()


@billing.register_tool(read_only=True)
def status(invoice: str) -> str:
    """The status of an invoice."""
    return f"invoice {invoice}: paid"


@shipping.register_tool(read_only=True)
def status_of(parcel: str) -> str:
    """The status of a parcel."""
    return f"parcel {parcel}: in transit"


@local.register_tool(read_only=True)
def today() -> str:
    """Today's date."""
    return "2026-12-06"


def trusted(url: str) -> Mount:
    return Mount(url, trust_annotations=True)


with (
    HttpServer(asgi_app(billing)) as one,
    HttpServer(asgi_app(shipping)) as two,
    trusted(one.url) as bills,
    trusted(two.url) as parcels,
):
    gateway = combined(local, prefixed(bills, "billing"), prefixed(parcels, "shipping"))
    try:
        combined(prefixed(bills, "x"), prefixed(bills, "x"))
    except UsageError as clash:  # the same name twice: refused here, never overridden
        print(clash)
    # serve(gateway) for stdio, asgi_app(gateway) for HTTP; `toolreg serve app.py:gateway`
    with HttpServer(asgi_app(gateway)) as front, trusted(front.url) as client:
        print(client.names)  # ['today', 'billing_status', 'shipping_status_of']
        print(client.dispatcher.dispatch_tool("billing_status", {"invoice": "F-7"}).content)
