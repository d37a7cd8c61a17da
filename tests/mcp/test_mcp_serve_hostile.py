"""Serving to clients toolreg does not control: hostile trace context, abandoned calls,
floods of slow calls, odd Authorization headers. Real HTTP on 127.0.0.1, raw POSTs with
httpx2 and the official `mcp` SDK client."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolreg
from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, asgi_app, build_server

registry = ToolRegistry()

INTERRUPTED = "interrupted while running, so it may have had effects."


@registry.register_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


MODERN, LEGACY = "2026-07-28", "2025-11-25"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def call_body(meta: Any, version: str, *, sdk_path: bool = False) -> dict[str, Any]:
    """A `tools/call` of add(1, 2) whose `_meta` is `meta` (plus what the protocol needs).
    `sdk_path`: ask for progress, which only the SDK's machinery answers (a stream)."""
    if version == MODERN:
        meta = {
            **meta,
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        }
    if sdk_path:
        meta = {**meta, "progressToken": "p1"}
    params = {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def post(http: httpx2.Client, url: str, body: dict[str, Any], version: str) -> tuple[int, Any]:
    """The HTTP status and the JSON-RPC answer (the last message of an SSE stream)."""
    headers = {**HEADERS, "mcp-protocol-version": version}
    if version == MODERN:
        headers.update({"mcp-method": body["method"], "mcp-name": body["params"]["name"]})
    answer = http.post(url, json=body, headers=headers)
    if answer.status_code != 200:
        return answer.status_code, answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        data = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
        return 200, json.loads(data[-1])
    return 200, answer.json()


def text_result(answer: Any) -> str:
    result = answer["result"]
    assert result["isError"] is False, result
    (block,) = result["content"]
    text: str = block["text"]
    return text


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    toolreg.instrument(provider)
    try:
        yield exporter
    finally:
        toolreg.uninstrument()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with HttpServer(asgi_app(registry)) as server:
        yield server.url


def served_span(exporter: InMemorySpanExporter, tool: str = "add") -> ReadableSpan:
    (span,) = [s for s in exporter.get_finished_spans() if s.name == f"execute_tool {tool}"]
    exporter.clear()
    return span


# -- trace context from the client: W3C Trace Context, or a new trace ----------------------

PATHS = [(MODERN, False), (LEGACY, False), (MODERN, True), (LEGACY, True)]
PATH_IDS = ["fast-2026", "fast-2025", "sdk-2026", "sdk-2025"]


@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": 5},
        {"traceparent": None},
        {"traceparent": ["00-" + TRACE_ID + "-00f067aa0ba902b7-01"]},
        {"traceparent": {"nested": TRACEPARENT}},
        {"traceparent": "not a traceparent"},
        {"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"},  # the invalid all-zero id
        {"traceparent": TRACEPARENT + "\n"},
        {"traceparent": TRACEPARENT.replace("4bf9", "4bf٩")},  # a non-ASCII digit
        {"traceparent": "00-" + "a" * 1_000_000},
        {"traceparent": "00-" + "a" * 1_000_000, "tracestate": "k=" + "v" * 1_000_000},
        {"tracestate": "k=v", "baggage": 5},
        {"baggage": {"user": "mallory"}},
    ],
    ids=lambda meta: repr(meta)[:40],
)
@pytest.mark.parametrize(("version", "sdk_path"), PATHS, ids=PATH_IDS)
def test_a_malformed_trace_context_is_ignored_and_starts_a_new_trace(
    spans: InMemorySpanExporter, url: str, meta: dict[str, Any], version: str, sdk_path: bool
) -> None:
    with httpx2.Client() as http:
        status, answer = post(http, url, call_body(meta, version, sdk_path=sdk_path), version)
    assert status == 200
    assert text_result(answer) == "3"
    span = served_span(spans)
    assert span.parent is None  # a root: a trace of its own
    assert span.context.trace_id != int(TRACE_ID, 16)


@pytest.mark.parametrize(("version", "sdk_path"), PATHS, ids=PATH_IDS)
def test_a_well_formed_trace_context_is_continued(
    spans: InMemorySpanExporter, url: str, version: str, sdk_path: bool
) -> None:
    with httpx2.Client() as http:
        for tracestate in ("vendor=abc", 7, "x" * 600, "bad member"):
            meta = {"traceparent": TRACEPARENT, "tracestate": tracestate}
            status, answer = post(http, url, call_body(meta, version, sdk_path=sdk_path), version)
            assert (status, text_result(answer)) == (200, "3")
            span = served_span(spans)
            assert span.context.trace_id == int(TRACE_ID, 16)
            assert span.parent is not None
            assert span.parent.span_id == 0x00F067AA0BA902B7
            kept = {"vendor": "abc"} if tracestate == "vendor=abc" else {}
            assert dict(span.context.trace_state) == kept  # a bad tracestate is dropped


@pytest.mark.parametrize(("version", "sdk_path"), PATHS, ids=PATH_IDS)
def test_baggage_from_a_client_is_not_taken(
    spans: InMemorySpanExporter, version: str, sdk_path: bool
) -> None:
    """A client's baggage (any key, any value) never becomes the server's context."""
    from opentelemetry import baggage

    seen: list[object] = []
    reg = ToolRegistry()

    @reg.register_tool
    def peek() -> str:
        """What baggage the call sees."""
        seen.append(dict(baggage.get_all()))
        return "ok"

    meta = {"traceparent": TRACEPARENT, "baggage": "user=mallory,role=admin"}
    body = call_body(meta, version, sdk_path=sdk_path)
    body["params"].update(name="peek", arguments={})
    with HttpServer(asgi_app(reg)) as server, httpx2.Client() as http:
        status, answer = post(http, server.url, body, version)
    assert (status, text_result(answer)) == (200, "ok")
    assert seen == [{}]
    assert served_span(spans, "peek").context.trace_id == int(TRACE_ID, 16)


@pytest.mark.parametrize("meta", ["a string", 5, [1], None, True])
def test_a_meta_that_is_not_an_object_gets_the_sdks_invalid_params(
    spans: InMemorySpanExporter, url: str, meta: Any
) -> None:
    """MCP's schema makes `_meta` an object: such a request is invalid, answered as the
    SDK's own app answers it (a JSON-RPC error, never a 500)."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta},
    }
    sdk_app = build_server(registry).streamable_http_app(stateless_http=True)
    with HttpServer(sdk_app) as sdk, httpx2.Client() as http:
        ours = post(http, url, body, LEGACY)
        theirs = post(http, sdk.url + "/mcp", body, LEGACY)
    assert ours == theirs
    if meta is None:
        assert text_result(ours[1]) == "3"
    else:
        assert ours[0] == 200
        assert ours[1]["error"]["code"] == -32602


# -- the bearer token: RFC 7235 scheme, anything malformed is a 401 ----------------------

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
LIST_HEADERS = {**HEADERS, "mcp-protocol-version": LEGACY}


@pytest.fixture(scope="module")
def token_url() -> Iterator[str]:
    with HttpServer(asgi_app(registry, token="s3cret-tøken")) as server:
        yield server.url


@pytest.mark.parametrize(
    "value",
    [
        b"Bearer s3cret-t\xc3\xb8ken",
        b"bearer s3cret-t\xc3\xb8ken",
        b"BEARER s3cret-t\xc3\xb8ken",
        b"bEaReR s3cret-t\xc3\xb8ken",
        b"Bearer    s3cret-t\xc3\xb8ken",  # 1*SP
    ],
)
def test_the_bearer_scheme_is_case_insensitive(token_url: str, value: bytes) -> None:
    with httpx2.Client() as http:
        answer = http.post(token_url, json=LIST, headers={**LIST_HEADERS, "authorization": value})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    "value",
    [
        b"",
        b"Bearer",
        b"bearer",
        b"s3cret-t\xc3\xb8ken",
        b"Bearers3cret-t\xc3\xb8ken",
        b"Bearer\ts3cret-t\xc3\xb8ken",
        b"Basic s3cret-t\xc3\xb8ken",
        b"Token s3cret-t\xc3\xb8ken",
        b"Bearer s3cret-t?ken",
        b"Bearer s3cret-t\xf8ken",  # the token in Latin-1, not as configured (UTF-8)
        b"Bearer s3cret-t\xc3\xb8ken extra",
        b"Bearer s3cret-t\xc3\xb8kenX",
        b"Bearer s3cret-t\xc3\xb8ke",
        b"Bearer Bearer s3cret-t\xc3\xb8ken",
        b"Bearer \xff\xfe",
        b"Bearer " + b"A" * 8000,
    ],
)
def test_a_malformed_or_wrong_authorization_is_a_401(token_url: str, value: bytes) -> None:
    with httpx2.Client() as http:
        for method in ("POST", "GET", "DELETE"):  # the fast path, and the SDK's routes
            answer = http.request(
                method, token_url, json=LIST, headers={**LIST_HEADERS, "authorization": value}
            )
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "s3cret" not in answer.text


def test_without_authorization_or_with_a_repeated_one_is_a_401(token_url: str) -> None:
    with httpx2.Client() as http:
        assert http.post(token_url, json=LIST, headers=LIST_HEADERS).status_code == 401
        repeated = [
            *LIST_HEADERS.items(),
            ("authorization", "Bearer wrong"),  # the first one counts, as Starlette reads it
            ("authorization", "Bearer s3cret-tøken".encode()),
        ]
        answer = http.post(token_url, json=LIST, headers=repeated)
        assert (answer.status_code, answer.headers["www-authenticate"]) == (401, "Bearer")


# -- abandoned calls and floods of slow ones ------------------------------------------------


def call_of(tool: str, version: str, *, sdk_path: bool = False) -> tuple[dict[str, Any], Any]:
    """The body and headers of a `tools/call` of `tool` with no arguments."""
    body = call_body({}, version, sdk_path=sdk_path)
    body["params"].update(name=tool, arguments={})
    headers = {**HEADERS, "mcp-protocol-version": version}
    if version == MODERN:
        headers.update({"mcp-method": "tools/call", "mcp-name": tool})
    return body, headers


def wait_for(condition: Any, what: str) -> None:
    """Poll `condition` until it holds (a generous deadline: a hang fails, slowness not)."""
    import time

    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize(("version", "sdk_path"), PATHS, ids=PATH_IDS)
def test_a_call_its_client_abandons_is_cancelled(version: str, sdk_path: bool) -> None:
    import threading

    started, cancelled = threading.Event(), threading.Event()
    reg = ToolRegistry()

    @reg.register_tool
    async def wait_forever() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    reg.register_tool(add)
    body, headers = call_of("wait_forever", version, sdk_path=sdk_path)

    async def abandon(url: str) -> None:
        async with httpx2.AsyncClient() as http:
            request = asyncio.ensure_future(http.post(url, json=body, headers=headers))
            assert await asyncio.to_thread(started.wait, 60)
            request.cancel()  # the client gives up: its connection closes
            with contextlib.suppress(asyncio.CancelledError):
                await request

    with HttpServer(asgi_app(reg)) as server:
        asyncio.run(abandon(server.url))
        assert cancelled.wait(60)
        with httpx2.Client() as http:  # the server goes on serving
            assert text_result(post(http, server.url, call_body({}, version), version)[1]) == "3"


def toolreg_threads() -> int:
    import threading

    return sum(1 for thread in threading.enumerate() if thread.name == "toolreg-call")


@pytest.mark.parametrize(("version", "sdk_path"), PATHS[:2], ids=PATH_IDS[:2])
def test_sync_tool_calls_beyond_max_threads_wait_for_a_free_thread(
    version: str, sdk_path: bool
) -> None:
    """40 slow sync calls at once with max_threads=4: 4 run, 36 wait (no new threads for
    them); released, all 40 are answered, never more than 4 at once."""
    import threading

    gate, lock = threading.Event(), threading.Lock()
    now = {"running": 0, "peak": 0}
    reg = ToolRegistry()

    @reg.register_tool
    def hold() -> str:
        """Hold a thread until the gate opens."""
        with lock:
            now["running"] += 1
            now["peak"] = max(now["peak"], now["running"])
        gate.wait(60)
        with lock:
            now["running"] -= 1
        return "done"

    app = asgi_app(reg, max_threads=4)
    body, headers = call_of("hold", version, sdk_path=sdk_path)

    async def flood(url: str) -> list[Any]:
        limits = httpx2.Limits(max_connections=50)
        async with httpx2.AsyncClient(limits=limits, timeout=120) as http:
            answers = await asyncio.gather(
                *(http.post(url, json=body, headers=headers) for _ in range(40))
            )
        return [answer.status_code for answer in answers]

    before = toolreg_threads()
    with HttpServer(app) as server:
        flooding = threading.Thread(target=lambda: results.extend(asyncio.run(flood(server.url))))
        results: list[Any] = []
        flooding.start()
        slots = app.service.threads
        wait_for(
            lambda: (slots.running, slots.waiting, now["running"]) == (4, 36, 4),
            "4 calls running in their threads, 36 waiting",
        )
        assert toolreg_threads() <= before + 4  # idle threads of earlier calls are reused
        gate.set()
        flooding.join(120)
        assert results == [200] * 40
        assert (slots.running, slots.waiting) == (0, 0)
    assert now["peak"] == 4


def test_max_threads_is_checked() -> None:
    for wrong in (0, -1, True, 2.5, "8"):
        with pytest.raises(toolreg.UsageError, match=r"max_threads=.*whole number >= 1"):
            asgi_app(registry, max_threads=wrong)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize(("version", "sdk_path"), PATHS[:2], ids=PATH_IDS[:2])
def test_calls_past_their_time_limit_keep_their_thread_within_max_threads(
    version: str, sdk_path: bool
) -> None:
    """200 calls at once of a sync tool that outlives its 0.05 s time limit, max_threads=8:
    a call keeps its slot until its thread ends, not until its time limit, so at most 8
    threads run the tool (counted live). The 8 that ran are reported as interrupted while
    running; the 192 that found no free thread within the time limit did not run, and
    say so. Once the threads end, the slots are free again."""
    import threading

    gate, lock = threading.Event(), threading.Lock()
    now = {"running": 0, "peak": 0, "started": 0}
    reg = ToolRegistry()

    @reg.register_tool(timeout=0.05)
    def stuck() -> str:
        """Run until the gate opens (long past the time limit)."""
        with lock:
            now["running"] += 1
            now["started"] += 1
            now["peak"] = max(now["peak"], now["running"])
        gate.wait(120)
        with lock:
            now["running"] -= 1
        return "done"

    reg.register_tool(add)
    app = asgi_app(reg, max_threads=8)
    body, headers = call_of("stuck", version, sdk_path=sdk_path)

    async def flood(url: str) -> list[Any]:
        limits = httpx2.Limits(max_connections=200)
        async with httpx2.AsyncClient(limits=limits, timeout=120) as http:
            return await asyncio.gather(
                *(http.post(url, json=body, headers=headers) for _ in range(200))
            )

    before = toolreg_threads()
    try:
        with HttpServer(app) as server:
            answers = asyncio.run(flood(server.url))
            assert toolreg_threads() <= before + 8  # all 200 answered, the 8 still running
            assert (now["running"], now["started"], now["peak"]) == (8, 8, 8)
            texts = [text_of_error(answer.json()) for answer in answers]
            ran = f"Tool 'stuck' timed out after 0.05 s: {INTERRUPTED}"
            waited = (
                "Tool 'stuck' did not start within 0.05 s: all 8 threads for sync tools are "
                "busy. It did not run; try again later."
            )
            assert sorted(set(texts)) == sorted({ran, waited}), set(texts)
            assert (texts.count(ran), texts.count(waited)) == (8, 192)
            slots = app.service.threads
            assert slots.running == 8  # held by the threads that run on
            gate.set()
            wait_for(lambda: slots.running == 0, "the threads to end and give their slots back")
            with httpx2.Client() as http:
                assert (
                    text_result(post(http, server.url, call_body({}, version), version)[1]) == "3"
                )
    finally:
        gate.set()


def text_of_error(answer: Any) -> str:
    result = answer["result"]
    assert result["isError"] is True, result
    (block,) = result["content"]
    text: str = block["text"]
    return text
