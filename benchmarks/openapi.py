"""OpenAPI documents -> tools, and a call through them, measured.

    python benchmarks/openapi.py            # tools built per second, dispatch overhead
    python benchmarks/openapi.py --quick    # fewer rounds
    python benchmarks/openapi.py --json

- **Build**: `OpenAPI.from_file` on a large real API (STAPI, 120 operations, 500 KB, from
  tests/data/openapi/): tools per second and milliseconds per tool, the document parsed
  and checked each time. Most of it is `Tool.from_schema` on each folded schema (checked
  against the metaschema, bounded, compiled), as for a mounted MCP server's tools.
- **Dispatch overhead**: one GET with a path and a query parameter to a local HTTP app
  (uvicorn on 127.0.0.1, a raw ASGI app answering JSON), as a raw `httpx2` request on a
  kept-alive connection, and as `OpenAPI` dispatch (validation, serialisation, the request,
  the answer parsed and rendered), sync and async. The difference is toolreg's cost.

A script, not a test: it prints a table and asserts nothing (needs uvicorn: the mcp extra).
The app runs under uvicorn in a process of its own, so that it does not share the GIL with
the client measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolreg.sources import OpenAPI  # noqa: E402

STAPI = ROOT / "tests" / "data" / "openapi" / "stapi-3.0.json"
DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "bench", "version": "1"},
    "paths": {
        "/items/{item_id}": {
            "get": {
                "operationId": "get_item",
                "parameters": [
                    {
                        "name": "item_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer"},
                    },
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}
BODY = json.dumps({"item_id": 7, "name": "pen", "price": 1.5, "tags": ["office", "blue"]}).encode()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


def timed(fn: Callable[[], Any], n: int) -> float:
    """Seconds per call: the median of 5 runs of `n` calls."""
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n)
    return statistics.median(runs)


def build(quick: bool) -> dict[str, Any]:
    logging.disable(logging.WARNING)
    rounds = 2 if quick else 5
    seconds = []
    tools = 0
    for _ in range(rounds):
        start = time.perf_counter()
        api = OpenAPI.from_file(STAPI)
        seconds.append(time.perf_counter() - start)
        tools = len(api.tools())
    best = statistics.median(seconds)
    return {
        "tools": tools,
        "seconds": best,
        "tools_per_second": tools / best,
        "ms_per_tool": 1000 * best / tools,
    }


class Server:
    """`app` under uvicorn in a process of its own (in this one, it would share the GIL
    with the client being measured)."""

    def __enter__(self) -> Server:
        import multiprocessing
        import socket

        import httpx2

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.process = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(port,), daemon=True
        )
        self.process.start()
        for _ in range(200):
            try:
                httpx2.get(self.url + "/")
                return self
            except httpx2.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("the app did not start")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.join(10)


def _serve(port: int) -> None:
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def dispatch(quick: bool) -> dict[str, Any]:
    import httpx2

    n = 100 if quick else 500
    with Server() as server:
        url = server.url + "/items/7?q=pen"
        with httpx2.Client() as client, OpenAPI(DOCUMENT, base_url=server.url) as api:
            raw = timed(lambda: client.get(url).json(), n)
            dispatcher = api.dispatcher
            arguments = {"item_id": 7, "q": "pen"}
            assert dispatcher.dispatch_tool("get_item", arguments).ok
            sync = timed(lambda: dispatcher.dispatch_tool("get_item", arguments), n)

        async def both() -> tuple[float, float]:
            async with (
                httpx2.AsyncClient() as client,
                OpenAPI(DOCUMENT, base_url=server.url) as api,
            ):
                dispatcher = api.dispatcher

                async def many_raw() -> None:
                    for _ in range(n):
                        (await client.get(url)).json()

                async def many_tool() -> None:
                    for _ in range(n):
                        await dispatcher.adispatch_tool("get_item", arguments)

                out = []
                for work in (many_raw, many_tool):
                    runs = []
                    for _ in range(5):
                        start = time.perf_counter()
                        await work()
                        runs.append((time.perf_counter() - start) / n)
                    out.append(statistics.median(runs))
                return out[0], out[1]

        araw, atool = asyncio.run(both())
    return {
        "sync": {"raw_us": raw * 1e6, "toolreg_us": sync * 1e6, "overhead_us": (sync - raw) * 1e6},
        "async": {
            "raw_us": araw * 1e6,
            "toolreg_us": atool * 1e6,
            "overhead_us": (atool - araw) * 1e6,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = {"build": build(args.quick), "dispatch": dispatch(args.quick)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    b = report["build"]
    print("## OpenAPI -> tools (STAPI, 120 operations)\n")
    print("| tools | seconds | tools/s | ms/tool |\n|---|---|---|---|")
    rate, each = b["tools_per_second"], b["ms_per_tool"]
    print(f"| {b['tools']} | {b['seconds']:.3f} | {rate:.0f} | {each:.2f} |")
    print("\n## One GET through OpenAPI dispatch vs a raw httpx2 request (127.0.0.1)\n")
    print("| path | raw httpx2 (µs) | toolreg (µs) | overhead (µs) |\n|---|---|---|---|")
    for name, row in report["dispatch"].items():
        print(
            f"| {name} | {row['raw_us']:.0f} | {row['toolreg_us']:.0f} | {row['overhead_us']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
