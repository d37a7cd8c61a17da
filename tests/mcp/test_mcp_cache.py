"""Result caching of a served registry, through the official SDK's client over HTTP on
127.0.0.1: read-only and idempotent tools only, keyed by tool, canonical arguments and
the caller (never one caller's result to another), bounded, with a time to live."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx2
import pytest
from _mcp_support import text_of
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken

from toolreg import ToolError, ToolRegistry
from toolreg.errors import UsageError
from toolreg.mcp import HttpServer, ResourceServer, ResultCache, asgi_app

RUNS: list[str] = []


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool(read_only=True)
    def lookup(q: str, limit: int = 3) -> str:
        """Look a word up. Use it for definitions."""
        RUNS.append(q)
        if q == "fail":
            raise ToolError("No such word.")
        return f"{q}#{len(RUNS)}"

    @tools.register_tool(idempotent=True)
    def set_flag(on: bool) -> str:
        """Set the flag. Use it when asked to."""
        RUNS.append("set")
        return f"set#{len(RUNS)}"

    @tools.register_tool
    def tick() -> str:
        """Count a tick. Use it to count."""
        RUNS.append("tick")
        return f"tick#{len(RUNS)}"

    return tools


def verify(token: str) -> AccessToken | None:
    return AccessToken(token=token, client_id="c", scopes=[], subject=token)


AUTH = ResourceServer(
    verify, resource="https://mcp.example.com/mcp", authorization_servers=["https://a.example.com"]
)


async def calls(
    url: str, user: str, mode: str, plan: list[tuple[str, dict[str, Any]]]
) -> list[str]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {user}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        return [text_of(await client.call_tool(name, args)) for name, args in plan]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_read_only_result_is_kept_per_caller_and_arguments(mode: str) -> None:
    app = asgi_app(registry(), auth=AUTH, cache=ResultCache(ttl=60))
    RUNS.clear()
    with HttpServer(app) as server:
        plan = [
            ("lookup", {"q": "tea", "limit": 3}),
            ("lookup", {"limit": 3, "q": "tea"}),  # the same arguments, in another order
            ("lookup", {"q": "tea"}),  # not the same arguments (the default is not filled)
            ("set_flag", {"on": True}),
            ("set_flag", {"on": True}),
            ("tick", {}),
            ("tick", {}),  # not read-only nor idempotent: runs each time
            ("lookup", {"q": "fail"}),
            ("lookup", {"q": "fail"}),  # a failure is not kept
        ]
        ada = asyncio.run(calls(server.url, "ada", mode, plan))
        bob = asyncio.run(calls(server.url, "bob", mode, plan[:1]))
    assert ada[0] == ada[1] == "tea#1"
    assert ada[2] == "tea#2"
    assert ada[3] == ada[4] == "set#3"
    assert (ada[5], ada[6]) == ("tick#4", "tick#5")
    assert ada[7] == ada[8] == "No such word."
    assert bob == ["tea#8"]  # another caller: its own result, never ada's


def test_the_cache_is_bounded_and_results_expire() -> None:
    cache = ResultCache(ttl=0.3, max_entries=2)
    app = asgi_app(registry(), auth=AUTH, cache=cache)
    RUNS.clear()
    with HttpServer(app) as server:
        words = [("lookup", {"q": w}) for w in ("a", "b", "c", "a")]
        first = asyncio.run(calls(server.url, "ada", "auto", words))
        assert first == ["a#1", "b#2", "c#3", "a#4"]  # "a" was pushed out by "c"
        assert len(cache) == 2
        time.sleep(0.4)
        again = asyncio.run(calls(server.url, "ada", "auto", [("lookup", {"q": "a"})]))
        assert again == ["a#5"]


def test_no_cache_by_default_and_options_are_checked() -> None:
    RUNS.clear()
    with HttpServer(asgi_app(registry())) as server:
        plan = [("lookup", {"q": "x"})] * 2
        assert asyncio.run(calls(server.url, "ada", "auto", plan)) == ["x#1", "x#2"]
    for bad in ({"ttl": 0}, {"ttl": float("inf")}, {"max_entries": 0}, {"ttl": True}):
        with pytest.raises(UsageError, match="ResultCache"):
            ResultCache(**bad)
    with pytest.raises(UsageError, match="cache= takes ResultCache"):
        asgi_app(registry(), cache=60)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_cached_result_is_authorized_again_for_every_call(mode: str) -> None:
    """`context=` runs before a cache hit: revoking a caller takes effect at the next call,
    not when its cached results expire (ASVS V8.3)."""
    revoked: set[str] = set()
    asked: list[str] = []

    def deps(request: Any) -> dict[str, str]:
        user = request.token.subject
        asked.append(user)
        if user in revoked:
            raise ToolError("Access revoked.")
        return {"user": user}

    app = asgi_app(registry(), auth=AUTH, cache=ResultCache(ttl=600), context=deps)
    RUNS.clear()
    plan = [("lookup", {"q": "tea"})]
    with HttpServer(app) as server:
        assert asyncio.run(calls(server.url, "ada", mode, plan * 2)) == ["tea#1", "tea#1"]
        revoked.add("ada")
        assert asyncio.run(calls(server.url, "ada", mode, plan)) == ["Access revoked."]
        revoked.clear()
        assert asyncio.run(calls(server.url, "ada", mode, plan)) == ["tea#1"]  # kept meanwhile
    assert asked == ["ada"] * 4  # once per call, cached or not
    assert RUNS == ["tea"]
