"""The cost of the serve policies: `tools/call` over streamable HTTP, each policy on and off,
beside FastMCP's server with the same policies.

    python benchmarks/serve_load.py            # 5 rounds of 3,000 calls per configuration
    python benchmarks/serve_load.py --quick    # 1 round of 300 calls (a smoke run)
    python benchmarks/serve_load.py --json     # the same results as JSON

Five servers run at once, each a process of its own on 127.0.0.1 serving the same registry
with `toolreg.mcp.serve(registry, "http", ...)` (what `toolreg serve --transport http`
runs: `asgi_app` under uvicorn on toolreg's socket), stateless:

- `none`: no policy;
- `auth`: `auth=JwtVerifier(...)` against a JWKS file, every client with a token of its
  own (RS256, signed here; a different subject each);
- `rate limit`: `RateLimit(...)` overall and for the tool, too high to ever refuse;
- `auth + rate limit`: both (the buckets then per token subject);
- `cache`: `ResultCache(ttl=60)` and the tool registered `read_only=True` (every call
  after the first is answered from the cache);
- `rate limit (redis)`: the same limits with `redis=` a redis-server started here on
  127.0.0.1 (no disk): every call is one `EVALSHA` round trip to it. Left out when
  `redis-server` is not installed.

And the peer, FastMCP (the `fastmcp` package, in the `dev` extra), two more processes
serving the same function with `FastMCP.http_app(stateless_http=True, json_response=True)`
under the same uvicorn runner (`run_http`, the same socket options):

- `fastmcp none`: no policy;
- `fastmcp auth + rate limit`: `auth=JWTVerifier(public_key=..., issuer=..., audience=...)`
  (the same RSA key and tokens) and its `RateLimitingMiddleware` per token subject, too
  high to ever refuse.

The load comes from this process: `--clients` concurrent keep-alive connections, each
sending a fixed `tools/call` of `get_weather` (protocol 2025-11-25, one JSON response)
one after the other on raw asyncio streams, so that the client costs little next to the
server. A round measures every configuration once, in a rotating order; per round and
configuration: calls/s, p50/p95 latency of a call (request written to response read), and
the server's CPU time per call (user + system from /proc, over the calls). Reported:
medians over the rounds; each configuration's CPU per call over its own server's `none`
in the same round (the median of those ratios; the issue's target: the policies cost at
most 20% of the call, ratio <= 1.2); and toolreg over FastMCP (calls/s, p50, p95), with
the policies off and with auth + rate limit on.

A script, not a test: it asserts nothing. Loopback only, bounded in calls and in time.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [p for p in (HERE, ROOT) if p not in sys.path[:2]]  # this checkout's toolreg

from mcp_bench import _cpu_seconds, _free_port, _Server  # noqa: E402

__all__ = ["CONFIGS", "run"]

CONFIGS = ("none", "auth", "rate limit", "auth + rate limit", "cache")
REDIS_CONFIG = "rate limit (redis)"  # measured when redis-server is installed
PEER_CONFIGS = ("fastmcp none", "fastmcp auth + rate limit")
ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"
HIGH_RATE = "100000000/min"  # never reached
EXPECTED = {"city": "Paris", "temperature": 18, "unit": "c", "condition": "sunny"}
_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
).encode()
_MAX_SECONDS = 60.0  # per cell, whatever the number of calls


# -- the server side ---------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, Any]:
    """Get the current weather of a city. Use it when the user asks about the weather."""
    return {"city": city, "temperature": 18, "unit": "c", "condition": "sunny"}


async def get_weather_async(city: str) -> dict[str, Any]:
    """Get the current weather of a city. Use it when the user asks about the weather."""
    return get_weather(city)


def app(config: str, jwks: str, tool: Any = get_weather, redis: str | None = None) -> Any:
    """The ASGI app of `config`: `tool` (as `get_weather`) behind that configuration's policies
    (`redis`: the URL of the shared buckets of `rate limit (redis)`)."""
    from toolreg import ToolRegistry
    from toolreg.mcp import JwtVerifier, RateLimit, ResultCache, asgi_app

    registry = ToolRegistry()
    registry.register_tool(tool, name="get_weather", read_only=True)
    auth = None
    if "auth" in config:
        auth = JwtVerifier(jwks, issuer=ISSUER, audience=RESOURCE)
    limit = None
    if "rate limit" in config:
        shared = redis if config == REDIS_CONFIG else None
        limit = RateLimit(HIGH_RATE, tools={"get_weather": HIGH_RATE}, redis=shared)
    cache = ResultCache(ttl=60) if config == "cache" else None
    return asgi_app(registry, auth=auth, rate_limit=limit, cache=cache)


def peer_app(config: str, pem: str) -> Any:
    """FastMCP's ASGI app of `config` (`fastmcp none` or `fastmcp auth + rate limit`)."""
    from fastmcp import FastMCP
    from fastmcp.server.auth.providers.jwt import JWTVerifier
    from fastmcp.server.dependencies import get_access_token
    from fastmcp.server.middleware.rate_limiting import RateLimitingMiddleware

    policies = "auth" in config
    with open(pem, encoding="utf-8") as f:
        key = f.read()
    verifier = JWTVerifier(public_key=key, issuer=ISSUER, audience=RESOURCE)
    server = FastMCP("peer", auth=verifier if policies else None)
    server.tool(get_weather, annotations={"readOnlyHint": True})
    if policies:

        def subject(context: Any) -> str:
            token = get_access_token()
            return "anonymous" if token is None else str(token.claims.get("sub"))

        per_second = float(HIGH_RATE.split("/")[0]) / 60
        server.add_middleware(
            RateLimitingMiddleware(max_requests_per_second=per_second, get_client_id=subject)
        )
    return server.http_app(path="/mcp", stateless_http=True, json_response=True)


def serve(config: str, port: int, jwks: str, redis: str | None = None) -> None:
    from toolreg.mcp.serving import run_http

    if config in PEER_CONFIGS:
        run_http(peer_app(config, jwks[: -len(".json")] + ".pem"), port=port)
    else:  # what `toolreg serve --transport http` runs
        run_http(app(config, jwks, redis=redis), port=port)


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    """The URL of a redis-server of this run's own (127.0.0.1, no disk), or None when it is
    not installed or does not start."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    port = _free_port()
    with tempfile.TemporaryDirectory() as folder:
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder]
        process = subprocess.Popen(
            [binary, "--port", str(port), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while process.poll() is None and time.monotonic() < deadline:
                with socket.socket() as probe:
                    if probe.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0" if process.poll() is None else None
        finally:
            process.kill()
            process.wait()


# -- the client side ---------------------------------------------------------------------------


def _keys(folder: str, clients: int) -> tuple[str, list[str]]:
    """A JWKS file with one RSA key (and its PEM beside it), and a token signed with it
    per client."""
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = {**json.loads(RSAAlgorithm.to_jwk(key.public_key())), "kid": "k1", "use": "sig"}
    path = os.path.join(folder, "jwks.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"keys": [public]}, f)
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with open(os.path.join(folder, "jwks.pem"), "wb") as f:
        f.write(pem)
    now = int(time.time())
    tokens = [
        jwt.encode(
            {"iss": ISSUER, "aud": RESOURCE, "sub": f"user-{i}", "iat": now, "exp": now + 3600},
            key,
            algorithm="RS256",
            headers={"kid": "k1"},
        )
        for i in range(clients)
    ]
    return path, tokens


def _request(port: int, token: str | None) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        "MCP-Protocol-Version: 2025-11-25",
        f"Content-Length: {len(_BODY)}",
    ]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + _BODY


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def _cell(port: int, pid: int, tokens: list[Any], calls: int) -> dict[str, Any]:
    """`calls` calls from `len(tokens)` connections at once: calls/s, latencies, the
    server's CPU over them."""
    connections = [await asyncio.open_connection("127.0.0.1", port) for _ in tokens]
    requests = [_request(port, token) for token in tokens]
    errors = 0
    try:
        for (reader, writer), request in zip(connections, requests):
            status, body = await _exchange(reader, writer, request)  # warm every connection
            answer = json.loads(body) if status == 200 else {}
            content = answer.get("result", {}).get("content") or [{}]
            text = content[0].get("text", "")
            if status != 200 or json.loads(text or "null") != EXPECTED:
                raise RuntimeError(f"unexpected answer ({status}): {body[:120]!r}")
        left = calls
        latencies: list[float] = []
        cpu_before = _cpu_seconds(pid)
        started = time.perf_counter()
        deadline = started + _MAX_SECONDS

        async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, req: bytes):
            nonlocal left, errors
            while left > 0 and time.perf_counter() < deadline:
                left -= 1
                begun = time.perf_counter()
                status, _ = await _exchange(reader, writer, req)
                latencies.append(time.perf_counter() - begun)
                errors += status != 200

        await asyncio.gather(*(worker(r, w, q) for (r, w), q in zip(connections, requests)))
        elapsed = time.perf_counter() - started
        cpu_after = _cpu_seconds(pid)
    finally:
        for _, writer in connections:
            writer.close()
    done = calls - max(left, 0)
    cpu = None
    if cpu_before is not None and cpu_after is not None and done:
        cpu = (cpu_after - cpu_before) / done * 1e3
    latencies.sort()
    return {
        "calls": done,
        "calls_per_s": done / elapsed,
        "p50_ms": _quantile(latencies, 0.50) * 1e3,
        "p95_ms": _quantile(latencies, 0.95) * 1e3,
        "server_cpu_ms": cpu,
        "errors": errors,
    }


def _quantile(ordered: list[float], q: float) -> float:
    """The `q` quantile of sorted values (nearest rank); 0.0 when there are none."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def _direct(asgi: Any, token: str | None, calls: int) -> float:
    """CPU µs per call of `asgi` called directly (no HTTP server, no socket)."""
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"mcp-protocol-version", b"2025-11-25"),
    ]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    scope["client"] = ("127.0.0.1", 50000)
    idle = asyncio.Event()  # never set: after the body, receive waits (no disconnect)
    statuses: list[int] = []
    pending = [False]

    async def receive() -> dict[str, Any]:
        if not pending[0]:
            pending[0] = True
            return {"type": "http.request", "body": _BODY, "more_body": False}
        await idle.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])
        else:
            pending[0] = False

    for _ in range(50):  # warm up (and fill the cache)
        await asgi(dict(scope), receive, send)
    started = time.process_time()
    for _ in range(calls):
        await asgi(dict(scope), receive, send)
    cpu = (time.process_time() - started) / calls * 1e6
    if set(statuses) != {200}:
        raise RuntimeError(f"unexpected statuses: {sorted(set(statuses))}")
    return cpu


def in_process(
    jwks: str, token: str, calls: int, rounds: int, redis: str | None = None
) -> list[dict[str, Any]]:
    """Each configuration's app called in this process, an async tool (no thread)."""
    configs = CONFIGS if redis is None else (*CONFIGS, REDIS_CONFIG)
    apps = {config: app(config, jwks, get_weather_async, redis) for config in configs}
    measured: dict[str, list[float]] = {config: [] for config in configs}

    async def rounds_of_calls() -> None:
        for _ in range(rounds):
            for config in configs:
                given = token if "auth" in config else None
                measured[config].append(await _direct(apps[config], given, calls))

    asyncio.run(rounds_of_calls())
    rows = []
    for config, cpus in measured.items():
        extra = [cpu - base for cpu, base in zip(cpus, measured["none"])]
        rows.append(
            {
                "config": config,
                "cpu_us": statistics.median(cpus),
                "vs_none_us": statistics.median(extra),
            }
        )
    return rows


ALL_CONFIGS = (*CONFIGS, REDIS_CONFIG, *PEER_CONFIGS)
COMPARED = (("none", "fastmcp none"), ("auth + rate limit", "fastmcp auth + rate limit"))


def run(calls: int, clients: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder, redis_server() as redis:
        jwks, signed = _keys(folder, clients)
        servers: dict[str, _Server] = {}
        ours = CONFIGS if redis is None else (*CONFIGS, REDIS_CONFIG)
        every = (*ours, *PEER_CONFIGS)

        def start(config: str) -> None:
            command = [sys.executable, os.path.abspath(__file__), "--serve", config]
            if redis is not None:
                command += ["--redis", redis]
            servers[config] = _Server([*command, "--jwks", jwks, "--port"], _free_port())

        try:
            with concurrent.futures.ThreadPoolExecutor(len(every)) as starting:
                list(starting.map(start, every))  # all at once (each imports for a second)
            cells: dict[str, list[dict[str, Any]]] = {config: [] for config in every}
            anonymous: list[str | None] = [None] * clients
            for index in range(rounds):
                turn = index % len(every)
                for config in every[turn:] + every[:turn]:
                    server = servers[config]
                    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
                    tokens = list(signed) if "auth" in config else anonymous
                    cell = asyncio.run(_cell(port, server.process.pid, tokens, calls))
                    cells[config].append(cell)
        finally:
            for server in servers.values():
                server.close()
        direct = in_process(jwks, signed[0], calls, rounds * 3, redis)
    rows = _rows({c: cells[c] for c in ours}, "none")
    peer = _rows({c: cells[c] for c in PEER_CONFIGS}, "fastmcp none")
    return {
        "rows": rows,
        "peer": peer,
        "vs_peer": _versus(rows + peer),
        "policy_cost": _cost(rows + peer),
        "in_process": direct,
        "calls": calls,
        "clients": clients,
        "rounds": rounds,
    }


def _rows(cells: dict[str, list[dict[str, Any]]], none: str) -> list[dict[str, Any]]:
    base = cells[none]
    rows = []
    for config, measured in cells.items():
        cpus = [c["server_cpu_ms"] for c in measured if c["server_cpu_ms"] is not None]
        ratios = [
            c["server_cpu_ms"] / b["server_cpu_ms"]
            for c, b in zip(measured, base)
            if c["server_cpu_ms"] and b["server_cpu_ms"]
        ]
        row = {
            "config": config,
            "calls_per_s": statistics.median(c["calls_per_s"] for c in measured),
            "p50_ms": statistics.median(c["p50_ms"] for c in measured),
            "p95_ms": statistics.median(c["p95_ms"] for c in measured),
            "server_cpu_ms": statistics.median(cpus) if cpus else None,
            "cpu_vs_none": statistics.median(ratios) if ratios else None,
            "errors": sum(c["errors"] for c in measured),
        }
        rows.append(row)
    return rows


def _divide(top: dict[str, Any], bottom: dict[str, Any], **label: str) -> dict[str, Any]:
    """`top`'s measures over `bottom`'s, each (None where one is missing or zero)."""
    ratio: dict[str, Any] = dict(label)
    for key in ("calls_per_s", "p50_ms", "p95_ms", "server_cpu_ms"):
        a, b = top[key], bottom[key]
        ratio[key] = a / b if a and b else None
    return ratio


def _versus(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """toolreg's medians over FastMCP's, policies off and on (calls/s: > 1 is toolreg
    faster; latency and CPU: < 1 is toolreg faster)."""
    by = {row["config"]: row for row in rows}
    return [_divide(by[ours], by[theirs], config=ours) for ours, theirs in COMPARED]


def _cost(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each server's auth + rate limit over its own none."""
    by = {row["config"]: row for row in rows}
    return [
        _divide(by[on], by[off], server=server)
        for server, (off, on) in zip(("toolreg", "FastMCP"), zip(*COMPARED))
    ]


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"{report['rounds']} rounds × {report['calls']} calls per configuration, "
        f"{report['clients']} concurrent connections",
        "",
        "| server, configuration | calls/s | p50 ms | p95 ms | server CPU ms/call "
        "| CPU × its none (same round) | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"] + report["peer"]:
        cpu = row["server_cpu_ms"]
        name = row["config"] if row in report["peer"] else f"toolreg {row['config']}"
        lines.append(
            f"| {name} | {row['calls_per_s']:.0f} | {row['p50_ms']:.2f} | "
            f"{row['p95_ms']:.2f} | {'n/a' if cpu is None else f'{cpu:.3f}'} | "
            f"{_ratio(row['cpu_vs_none'])} | {row['errors']} |"
        )
    lines += [
        "",
        "toolreg / FastMCP (calls/s: > 1× is toolreg faster; latency, CPU: < 1× is):",
        "",
        "| policies | calls/s | p50 | p95 | server CPU/call |",
        "|---|---|---|---|---|",
    ]
    for ratio in report["vs_peer"]:
        lines.append(
            f"| {ratio['config']} | {_ratio(ratio['calls_per_s'])} | {_ratio(ratio['p50_ms'])} "
            f"| {_ratio(ratio['p95_ms'])} | {_ratio(ratio['server_cpu_ms'])} |"
        )
    lines += [
        "",
        "auth + rate limit over none, each server over itself (same runs):",
        "",
        "| server | calls/s | p50 | p95 | server CPU/call |",
        "|---|---|---|---|---|",
    ]
    for cost in report["policy_cost"]:
        lines.append(
            f"| {cost['server']} | {_ratio(cost['calls_per_s'])} | {_ratio(cost['p50_ms'])} "
            f"| {_ratio(cost['p95_ms'])} | {_ratio(cost['server_cpu_ms'])} |"
        )
    lines += [
        "",
        f"In process ({report['rounds'] * 3} rounds × {report['calls']} calls, the ASGI app "
        "called directly, an async tool):",
        "",
        "| configuration | CPU µs/call | + µs vs none (same round) |",
        "|---|---|---|",
    ]
    for row in report["in_process"]:
        lines.append(f"| {row['config']} | {row['cpu_us']:.1f} | {row['vs_none_us']:+.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 300 calls")
    parser.add_argument("--json", action="store_true", help="print JSON, not markdown")
    parser.add_argument("--calls", type=int, help="calls per configuration and round")
    parser.add_argument("--clients", type=int, default=8, help="concurrent connections")
    parser.add_argument("--rounds", type=int, help="rounds (each configuration once)")
    parser.add_argument("--serve", choices=ALL_CONFIGS, help=argparse.SUPPRESS)
    parser.add_argument("--jwks", help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:  # one of the servers (a process of its own)
        with contextlib.suppress(KeyboardInterrupt):
            serve(args.serve, args.port, args.jwks, args.redis)
        return 0
    calls = args.calls or (300 if args.quick else 3000)
    rounds = args.rounds or (1 if args.quick else 5)
    if not (1 <= calls <= 100_000 and 1 <= args.clients <= 256 and 1 <= rounds <= 50):
        parser.error("--calls 1..100000, --clients 1..256, --rounds 1..50")
    report = run(calls, args.clients, rounds)
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
