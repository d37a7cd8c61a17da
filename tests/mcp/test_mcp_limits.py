"""Rate limits of a served registry: token buckets per caller, overall and per tool, over
real HTTP on 127.0.0.1 — a 429 with `Retry-After` and a JSON-RPC error, on the fast path
(2026-07-28) and on the SDK's (a stateful session); callers told apart by their token."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError

from toolreg import ToolRegistry
from toolreg.errors import UsageError
from toolreg.mcp import HttpServer, RateLimit, ResourceServer, asgi_app

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool
    def add(a: int, b: int) -> int:
        """Add two integers. Use it for any addition."""
        return a + b

    @tools.register_tool
    def search(q: str) -> str:
        """Search the catalog. Use it to find products."""
        return f"found {q}"

    return tools


def call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_a_call_over_the_limit_is_a_429_with_retry_after() -> None:
    limit = RateLimit("3/min", tools={"search": "1/h"})
    with HttpServer(asgi_app(registry(), rate_limit=limit)) as server, httpx2.Client() as http:
        first = http.post(server.url, json=call(1, "search", {"q": "a"}), headers=HEADERS)
        assert first.status_code == 200
        second = http.post(server.url, json=call(2, "search", {"q": "b"}), headers=HEADERS)
        assert second.status_code == 429
        assert 3500 <= int(second.headers["retry-after"]) <= 3600
        error = second.json()
        assert error["id"] == 2
        assert error["error"]["code"] == -32000
        assert error["error"]["message"].startswith(
            "Rate limit exceeded: at most 1 call of 'search' per h; retry after "
        )
        assert error["error"]["data"]["retryAfter"] == int(second.headers["retry-after"])
        # the refused call cost nothing overall: two more calls pass, the third does not
        for request_id in (3, 4):
            answer = http.post(
                server.url, json=call(request_id, "add", {"a": 1, "b": 2}), headers=HEADERS
            )
            assert answer.status_code == 200
        over = http.post(server.url, json=call(5, "add", {"a": 1, "b": 2}), headers=HEADERS)
        assert over.status_code == 429
        assert "at most 3 tool calls per min" in over.json()["error"]["message"]
        listed = {"jsonrpc": "2.0", "id": 6, "method": "tools/list"}
        assert http.post(server.url, json=listed, headers=HEADERS).status_code == 200  # not counted


def test_callers_are_limited_apart_by_their_token() -> None:
    def verify(token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="c", scopes=[], subject=token)

    auth = ResourceServer(
        verify,
        resource="https://mcp.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
    )
    app = asgi_app(registry(), auth=auth, rate_limit=RateLimit("1/min"))
    with HttpServer(app) as server, httpx2.Client() as http:

        def status(user: str, request_id: int) -> int:
            headers = {**HEADERS, "authorization": f"Bearer {user}"}
            return http.post(
                server.url, json=call(request_id, "add", {"a": 1, "b": 1}), headers=headers
            ).status_code

        assert [status("ada", 1), status("bob", 2), status("ada", 3), status("bob", 4)] == [
            200,
            200,
            429,
            429,
        ]


@pytest.mark.parametrize("stateless", [True, False])
def test_the_sdk_client_sees_the_limit(stateless: bool) -> None:
    app = asgi_app(registry(), stateless=stateless, rate_limit=RateLimit(tools={"add": "2/min"}))

    async def run(url: str) -> list[str]:
        outcomes = []
        async with (
            httpx2.AsyncClient() as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode="auto" if stateless else "legacy",
            ) as client,
        ):
            for _ in range(3):
                try:
                    await client.call_tool("add", {"a": 1, "b": 2})
                    outcomes.append("ok")
                except (MCPError, httpx2.HTTPStatusError) as err:
                    outcomes.append(type(err).__name__)
            outcomes.append((await client.call_tool("search", {"q": "x"})).content[0].text)  # type: ignore[union-attr]
        return outcomes

    with HttpServer(app) as server:
        outcomes = asyncio.run(run(server.url))
    assert outcomes[:2] == ["ok", "ok"]
    assert outcomes[2] != "ok"
    assert outcomes[3] == "found x"


def test_rate_limits_are_checked() -> None:
    for bad in ("ten/min", "5/fortnight", "0/min", "5", (5, 0)):
        with pytest.raises(UsageError, match="'60/min'"):
            RateLimit(bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="needs calls="):
        RateLimit()
    with pytest.raises(UsageError, match="RateLimit"):
        asgi_app(registry(), rate_limit="60/min")  # type: ignore[arg-type]
