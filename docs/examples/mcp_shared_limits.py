"""Shared rate limits: two servers (think two machines) charge one bucket in Redis."""

import shutil
import socket
import subprocess
import sys
import tempfile
import time

import httpx2

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, RateLimit, asgi_app

tools = ToolRegistry()


@tools.register_tool
def add(a: int, b: int) -> int:
    """Add two integers. Use it for any addition."""
    return a + b


# A throwaway redis-server on a free loopback port (in production: your Redis's URL).
if shutil.which("redis-server") is None:
    print("redis-server is not installed: nothing to show")
    sys.exit(0)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tempfile.mkdtemp()]
redis = subprocess.Popen(["redis-server", "--port", str(port), *options], stdout=subprocess.DEVNULL)
URL = f"redis://127.0.0.1:{port}/0"


def statuses(limit: RateLimit, calls: int) -> list[int]:
    """`calls` calls from one client, alternately to two servers with the same limit."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body["params"] = {"name": "add", "arguments": {"a": 1, "b": 2}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    with (
        HttpServer(asgi_app(tools, rate_limit=limit)) as one,
        HttpServer(asgi_app(tools, rate_limit=limit)) as two,
    ):
        urls = [one.url, two.url]
        return [
            httpx2.post(urls[i % 2], json=body, headers=headers).status_code for i in range(calls)
        ]


try:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until redis-server listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    # each server its own buckets: 3 calls a minute on each, 6 in all
    assert statuses(RateLimit("3/min"), 6) == [200] * 6
    # one bucket in Redis: 3 calls a minute across both; the 4th is a 429
    assert statuses(RateLimit("3/min", redis=URL), 4) == [200, 200, 200, 429]
    # Redis gone: every call is refused (503, Retry-After: 1) until it answers again
    redis.kill()
    redis.wait()
    assert statuses(RateLimit("3/min", redis=URL), 1) == [503]
    print("shared: 3 of 4 calls admitted across two servers; Redis down: 503")
finally:
    redis.kill()
    redis.wait()
