"""An HTTP API's OpenAPI document as tools; each user calls it with their own token."""

import json
from typing import Any

from toolreg.mcp import HttpServer
from toolreg.sources import CredentialRequest, Credentials, OpenAPI

DOCUMENT = {  # usually fetched: OpenAPI.from_url("https://api.example.com/openapi.json")
    "openapi": "3.1.0",
    "info": {"title": "Orders", "version": "1"},
    "components": {"securitySchemes": {"user_token": {"type": "http", "scheme": "bearer"}}},
    "security": [{"user_token": []}],
    "paths": {
        "/orders": {
            "get": {
                "operationId": "list_orders",
                "summary": "List the signed-in user's orders",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"enum": ["open", "shipped"]}}
                ],
                "responses": {"200": {"description": "the orders"}},
            }
        }
    },
}
ORDERS = {"ada": [{"id": "A1", "status": "open"}], "bob": [{"id": "B7", "status": "open"}]}
TOKENS = {"token-of-ada": "ada", "token-of-bob": "bob"}


async def orders_api(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A stand-in for the real API: the orders of the user whose token came."""
    if scope["type"] != "http":
        return
    auth = dict(scope["headers"]).get(b"authorization", b"").decode()
    user = TOKENS.get(auth.removeprefix("Bearer "))
    status, body = (200, ORDERS[user]) if user else (401, {"detail": "who are you?"})
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def token_of(request: CredentialRequest) -> str | None:
    """Your vault: the calling user's token for this API (None: they have none)."""
    user = request.context["user"]  # the call's context=, never the model's
    return {"ada": "token-of-ada", "bob": "token-of-bob"}.get(user)


credentials = Credentials(token_of, user=lambda deps: deps["user"])

with (
    HttpServer(orders_api) as server,
    OpenAPI(DOCUMENT, base_url=server.url, credentials=credentials) as api,
):
    print(api.names)  # ['list_orders']
    print(api.get("list_orders").parameters["properties"])  # {'status': {'enum': [...]}}
    for user in ("ada", "bob", "eve"):
        result = api.dispatcher.dispatch_tool(
            "list_orders", {"status": "open"}, context={"user": user}
        )
        print(user, result.content)
    # ada [{"id": "A1", "status": "open"}]
    # bob [{"id": "B7", "status": "open"}]
    # eve Tool 'list_orders' needs a credential (user_token) that the current user does not
    #     have: ask the user to sign in or connect the account first. (...)
    assert "A1" in api.dispatcher.dispatch_tool("list_orders", {}, context={"user": "ada"}).content
