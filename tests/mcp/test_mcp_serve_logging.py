"""MCP logging of a served registry (`ctx.log` -> `notifications/message`), through the
official SDK's client: the server declares the `logging` capability, answers
`logging/setLevel` (2025 protocols) and filters a session's lines by the level it set;
a plain stateless `tools/call` on the 2025 protocols gets its lines too (on a stream); on
2026-07-28, lines go to the requests that opt in with a level in `_meta`. Real HTTP on
127.0.0.1 (stateless and stateful) and stdio."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from _mcp_support import child_env, text_of
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import HttpServer, asgi_app

# the SDK's client warns that logging/setLevel is deprecated (2026-07-28 replaced it);
# serving 2025 clients is what is tested here
pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")

registry = ToolRegistry()
LEVELS = ("debug", "info", "warning", "error")


@registry.register_tool
def chatty(ctx: ToolContext[Any]) -> str:
    """Log one line at each of four levels."""
    for level in LEVELS:
        ctx.log(f"a {level} line", level=level)  # type: ignore[arg-type]
    return "said it all"


@registry.register_tool
def quiet(x: int) -> int:
    """Double x, saying nothing."""
    return 2 * x


class Lines:
    def __init__(self) -> None:
        self.got: list[str] = []

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.got.append(str(params.level))


async def session(
    client: Client, lines: Lines, levels: list[str | None]
) -> list[tuple[str | None, list[str]]]:
    """For each level (None: none set), set it, call `chatty`, and note the lines that came."""
    assert client.server_capabilities.logging is not None  # declared
    seen = []
    for level in levels:
        if level is not None:
            assert await client.set_logging_level(level) == types.EmptyResult()  # type: ignore[arg-type]
        lines.got = []
        result = await client.call_tool("chatty", {})
        assert text_of(result) == "said it all"
        seen.append((level, lines.got))
    return seen


EVERY = list(LEVELS)


@pytest.fixture(scope="module")
def stateful() -> Iterator[str]:
    with HttpServer(asgi_app(registry, stateless=False)) as server:
        yield server.url


@pytest.fixture(scope="module")
def stateless() -> Iterator[str]:
    with HttpServer(asgi_app(registry)) as server:
        yield server.url


def run_legacy(url: str, levels: list[str | None]) -> list[tuple[str | None, list[str]]]:
    async def main() -> list[tuple[str | None, list[str]]]:
        lines = Lines()
        async with (
            httpx2.AsyncClient() as http,
            Client(
                streamable_http_client(url, http_client=http), mode="legacy", logging_callback=lines
            ) as client,
        ):
            return await session(client, lines, levels)

    return asyncio.run(main())


def test_a_session_gets_the_lines_at_or_above_the_level_it_set(stateful: str) -> None:
    seen = run_legacy(stateful, [None, "warning", "error", "debug"])
    assert seen == [
        (None, EVERY),  # nothing set: every line (the server's choice, as before)
        ("warning", ["warning", "error"]),
        ("error", ["error"]),
        ("debug", EVERY),
    ]
    # another session starts from nothing set: one session's level is its own
    assert run_legacy(stateful, [None]) == [(None, EVERY)]


def test_a_plain_stateless_call_on_the_2025_protocol_gets_its_lines(stateless: str) -> None:
    """No session to remember a level in: `logging/setLevel` is answered, and each call gets
    every line, on the SSE stream of its own POST (the fast path cannot stream them)."""
    assert run_legacy(stateless, [None, "error"]) == [(None, EVERY), ("error", EVERY)]

    async def plain() -> Any:  # a tool without a ToolContext stays on the fast path
        async with Client(stateless, mode="legacy") as client:
            return text_of(await client.call_tool("quiet", {"x": 21}))

    assert asyncio.run(plain()) == "42"


@pytest.mark.parametrize("url", ["stateless", "stateful"])
def test_the_2026_protocol_sends_lines_to_a_request_that_opts_in(
    url: str, request: pytest.FixtureRequest
) -> None:
    address = request.getfixturevalue(url)

    async def main(level: str | None) -> tuple[bool, list[str]]:
        lines = Lines()
        async with Client(
            address,
            logging_callback=lines,
            log_level=level,  # type: ignore[arg-type]
        ) as client:
            assert client.protocol_version == "2026-07-28"
            assert text_of(await client.call_tool("chatty", {})) == "said it all"
            return client.server_capabilities.logging is not None, lines.got

    assert asyncio.run(main(None)) == (True, [])  # no opt-in: no lines (the spec's MUST NOT)
    assert asyncio.run(main("warning")) == (True, ["warning", "error"])


def test_stdio_keeps_the_level_of_its_one_connection(tmp_path: Any) -> None:
    from _mcp_support import ROOT, serve_command

    command = serve_command("tests/mcp/test_mcp_serve_logging.py:registry")
    server = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=ROOT)

    async def main() -> list[tuple[str | None, list[str]]]:
        lines = Lines()
        async with Client(server, mode="legacy", logging_callback=lines) as client:
            return await session(client, lines, [None, "warning", "info"])

    assert asyncio.run(main()) == [
        (None, EVERY),
        ("warning", ["warning", "error"]),
        ("info", ["info", "warning", "error"]),
    ]
