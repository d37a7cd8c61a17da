"""Scaling out: several processes serve one port, and none pays Nagle's 40 ms.

Uvicorn's `--workers` shares a socket made as `socket.socket(AF_INET)`: protocol 0, no
`TCP_NODELAY`. Asyncio sets `TCP_NODELAY` only on sockets whose protocol is TCP, so every
connection accepted from it keeps Nagle's algorithm, and each small response waits for the
client's delayed ACK. `toolreg serve --workers N` shares a socket made for TCP with the
option set; the first test shows the difference on accepted connections, the second that
the workers serve.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
from _mcp_support import PROCESS_TOOLS, HttpChild, serve_command, text_of
from mcp import Client

from toolreg.mcp.serving import listening_socket


def accepted_nodelay(listener: socket.socket) -> int:
    """TCP_NODELAY of a connection an asyncio server accepts from `listener`."""

    async def run() -> int:
        loop = asyncio.get_running_loop()
        found: asyncio.Future[int] = loop.create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted = writer.get_extra_info("socket")
            found.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=listener)
        host, port = listener.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        value = await asyncio.wait_for(found, 10)
        writer.close()
        server.close()
        await server.wait_closed()
        return value

    return asyncio.run(run())


def test_the_shared_socket_gives_every_connection_tcp_nodelay() -> None:
    assert accepted_nodelay(listening_socket("127.0.0.1", 0)) != 0
    as_uvicorn_makes_it = socket.socket(family=socket.AF_INET)
    as_uvicorn_makes_it.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    as_uvicorn_makes_it.bind(("127.0.0.1", 0))
    assert accepted_nodelay(as_uvicorn_makes_it) == 0  # the trap this avoids


@pytest.mark.slow
def test_serve_with_several_workers() -> None:
    command = serve_command(PROCESS_TOOLS, "--transport", "http", "--port", "0", "--workers", "2")
    with HttpChild(*command) as child:

        async def pid() -> int:
            async with Client(child.url) as client:
                return int(text_of(await client.call_tool("pid", {})))

        async def run() -> set[int]:
            seen: set[int] = set()
            for _ in range(10):  # new connections until both workers have answered
                seen.update(await asyncio.gather(*(pid() for _ in range(8))))
                if len(seen) > 1:
                    break
            return seen

        pids = asyncio.run(run())
        assert len(pids) == 2
        assert child.process.pid not in pids  # the workers answer; the supervisor does not
