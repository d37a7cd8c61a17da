"""`toolreg serve` of tools with versions, read the way FastMCP 4 writes and reads them: a tool
is listed once, at its latest version, with `_meta.fastmcp.version` and `.versions`; a
`tools/call` whose `_meta.fastmcp.version` names a version runs that one. Checked with
FastMCP's own client over streamable HTTP on 127.0.0.1, and with the official `mcp` SDK's
client over HTTP (both protocol eras: toolreg's fast path and the SDK's) and over stdio."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _mcp_support import ROOT, child_env, serve_command, text_of
from _versioned_tools import RUNS, registry
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, Mount, ResultCache, asgi_app
from toolreg.toolsets import pinned


def meta(version: Any) -> dict[str, Any]:
    return {"fastmcp": {"version": version}}


def test_fastmcps_client_sees_the_versions_and_calls_each() -> None:
    fastmcp = pytest.importorskip("fastmcp")

    async def run(url: str) -> tuple[dict[str, Any], list[str], str]:
        async with fastmcp.Client(url) as client:
            listed = {t.name: t.meta for t in await client.list_tools()}
            answers = [
                (await client.call_tool("search", {"q": "tea"})).content[0].text,
                (await client.call_tool("search", {"q": "tea"}, version="1")).content[0].text,
                (await client.call_tool("search", {"q": "tea"}, version="v1.0")).content[0].text,
                (await client.call_tool("search", {"q": "tea", "limit": 2}, version="2"))
                .content[0]
                .text,
            ]
            with pytest.raises(Exception, match=r"has no version '9' \(its versions: 2, 1\)"):
                await client.call_tool("search", {"q": "tea"}, version="9")
            refused = await client.call_tool(
                "search", {"q": "tea", "limit": 2}, version="1", raise_on_error=False
            )
            return listed, answers, refused.content[0].text

    with HttpServer(asgi_app(registry)) as server:
        listed, answers, refused = asyncio.run(run(server.url))
    assert listed == {"search": {"fastmcp": {"version": "2", "versions": ["2", "1"]}}, "add": None}
    assert answers == ["v2:tea:5", "v1:tea", "v1:tea", "v2:tea:2"]
    assert "unexpected property 'limit'" in refused  # version 1's own schema


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_sdk_client_asks_for_a_version_in_meta(mode: str) -> None:
    async def run(url: str) -> tuple[list[Any], list[str]]:
        async with Client(url, mode=mode) as client:
            listed = [t.meta for t in (await client.list_tools()).tools]
            answers = [
                text_of(await client.call_tool("search", {"q": "a"}, meta=meta("1"))),  # type: ignore[arg-type]
                text_of(await client.call_tool("search", {"q": "a"})),
                # what is not a version string is not read (FastMCP's server does the same)
                text_of(await client.call_tool("search", {"q": "a"}, meta=meta({"eq": "1"}))),  # type: ignore[arg-type]
                text_of(await client.call_tool("search", {"q": "a"}, meta=meta(1))),  # type: ignore[arg-type]
                text_of(await client.call_tool("add", {"a": 1, "b": 2}, meta=meta("1"))),  # type: ignore[arg-type]
            ]
            return listed, answers

    with HttpServer(asgi_app(registry)) as server:
        listed, answers = asyncio.run(run(server.url))
    assert listed[0] == {"fastmcp": {"version": "2", "versions": ["2", "1"]}}
    assert answers[:4] == ["v1:a", "v2:a:5", "v2:a:5", "v2:a:5"]
    assert answers[4] == "3"  # a tool without versions is every version (as in FastMCP)


@pytest.mark.parametrize(
    "asked",
    ["x" * 65, "1\n2", "\u202e1", "", "9" * 64],
)
def test_a_hostile_version_is_answered_short_and_safe(asked: str) -> None:
    async def run(url: str) -> str:
        async with Client(url) as client:
            try:
                return text_of(await client.call_tool("search", {"q": "a"}, meta=meta(asked)))  # type: ignore[arg-type]
            except MCPError as exc:
                return f"error: {exc}"

    with HttpServer(asgi_app(registry)) as server:
        answer = asyncio.run(run(server.url))
    if asked == "" or len(asked) > 64:
        assert answer == "v2:a:5"  # not read: the latest
    else:
        assert answer.startswith("error: Tool 'search' has no version")
        assert asked not in answer or asked.isprintable()
        assert len(answer) < 200


@pytest.mark.slow
def test_toolreg_serve_over_stdio_lists_and_runs_versions() -> None:
    command = serve_command("tests/_versioned_tools.py:registry")
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=ROOT)

    async def run() -> tuple[Any, str, str]:
        async with Client(params) as client:
            (search, _) = (await client.list_tools()).tools
            one = text_of(await client.call_tool("search", {"q": "b"}, meta=meta("1")))  # type: ignore[arg-type]
            two = text_of(await client.call_tool("search", {"q": "b"}))
            return search.meta, one, two

    listed, one, two = asyncio.run(run())
    assert listed == {"fastmcp": {"version": "2", "versions": ["2", "1"]}}
    assert (one, two) == ("v1:b", "v2:b:5")


def echo(q: str) -> str:
    """Echo a text."""
    return q


def test_a_new_version_shows_in_the_listing_at_once() -> None:
    tools = ToolRegistry()
    tools.register_tool(echo, version="1")

    async def listing(url: str) -> Any:
        async with Client(url) as client:
            return [t.meta for t in (await client.list_tools()).tools]

    with HttpServer(asgi_app(tools)) as server:
        first = asyncio.run(listing(server.url))
        tools.register_tool(echo, version="0.9")
        second = asyncio.run(listing(server.url))  # the default is the same tool: still relisted
    assert first == [{"fastmcp": {"version": "1", "versions": ["1"]}}]
    assert second == [{"fastmcp": {"version": "1", "versions": ["1", "0.9"]}}]


def test_a_pinned_view_serves_one_version() -> None:
    async def run(url: str) -> tuple[Any, str]:
        async with Client(url) as client:
            listed = (await client.list_tools()).tools[0].meta
            return listed, text_of(await client.call_tool("search", {"q": "c"}))

    with HttpServer(asgi_app(pinned(registry, {"search": "1"}))) as server:
        listed, answer = asyncio.run(run(server.url))
    assert listed == {"fastmcp": {"version": "1", "versions": ["1"]}}
    assert answer == "v1:c"


def test_cached_results_are_kept_per_version() -> None:
    async def run(url: str) -> list[str]:
        async with Client(url) as client:
            return [
                text_of(await client.call_tool("search", {"q": "d"}, meta=meta(v)))  # type: ignore[arg-type]
                for v in ("1", "2", "1", "2")
            ]

    RUNS.clear()
    with HttpServer(asgi_app(registry, cache=ResultCache(ttl=60))) as server:
        answers = asyncio.run(run(server.url))
    assert answers == ["v1:d", "v2:d:5", "v1:d", "v2:d:5"]
    assert RUNS == ["1", "2"]  # each version ran once: its result is its own


@pytest.mark.slow
def test_a_mount_reads_the_version_a_server_lists() -> None:
    from mcp.server.mcpserver import MCPServer

    other = MCPServer("other", log_level="WARNING")

    @other.tool(meta={"fastmcp": {"version": "beta"}})
    def odd(x: int) -> int:
        """A tool whose version is none by toolreg's rule."""
        return x

    with (
        HttpServer(asgi_app(registry)) as server,
        HttpServer(other.streamable_http_app(stateless_http=True)) as odd_server,
        Mount(server.url, trust_annotations=True) as mounted,
        Mount(odd_server.url + "/mcp", trust_annotations=True) as odd_mount,
    ):
        search = mounted.get("search")
        assert search is not None
        assert search.version == "2"  # the latest, as listed: the one a call without a pin runs
        assert mounted.get("add").version is None  # type: ignore[union-attr]
        assert odd_mount.get("odd").version is None  # type: ignore[union-attr]  # not read
        served = asgi_app(mounted)  # served again: the version goes on
        with HttpServer(served) as again:

            async def listing(url: str) -> Any:
                async with Client(url) as client:
                    return [t.meta for t in (await client.list_tools()).tools]

            assert asyncio.run(listing(again.url))[0] == {
                "fastmcp": {"version": "2", "versions": ["2"]}
            }
