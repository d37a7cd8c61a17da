"""Serving a registry over MCP: the official SDK's client against `toolreg serve` (stdio, a
child process), against `asgi_app` over streamable HTTP on 127.0.0.1, on both protocol
generations the SDK speaks (2026-07-28, per request; 2025-11-25, with a handshake)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any

import _mcp_tools as tools
import httpx2
import mcp_types as types
import pytest
from _mcp_support import (
    CALLS,
    ROOT,
    TOOLS,
    HttpChild,
    child_env,
    dumped,
    local_outcomes,
    serve_command,
    stdio_server,
    text_of,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import toolreg
from toolreg import ToolContext, ToolError, ToolRegistry
from toolreg.mcp import HttpServer, McpRequest, asgi_app, build_server, serve
from toolreg.mcp import server as server_module
from toolreg.mcp.http import fast_request
from toolreg.mcp.serving import allowed_hosts_for

MODES = {"auto": "2026-07-28", "legacy": "2025-11-25"}  # Client(mode=...) -> protocol


def expected_tools() -> list[dict[str, Any]]:
    """The registry's `mcp` export, plus the output schemas of the tools returning objects."""
    out = [dict(entry) for entry in tools.registry.get_tools("mcp")]
    by_name = {entry["name"]: entry for entry in out}
    by_name["get_weather"]["outputSchema"] = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperature": {"type": "integer"},
            "unit": {"type": "string"},
        },
        "required": ["city", "temperature", "unit"],
        "additionalProperties": False,
    }
    by_name["create_task"]["outputSchema"] = {"type": "object", "additionalProperties": {}}
    return out


async def check_serves_the_registry(client: Client, protocol: str) -> None:
    """tools/list is the export; every call answers what local dispatch answers."""
    assert client.protocol_version == protocol
    listed = await client.list_tools()
    assert [dumped(tool) for tool in listed.tools] == expected_tools()
    for (name, args), (ok, content) in zip(CALLS, local_outcomes(tools.registry)):
        result = await client.call_tool(name, dict(args))
        assert (not result.is_error, text_of(result)) == (ok, content), (name, args)
        if name == "get_weather" and ok:
            assert result.structured_content == json.loads(content)
        else:
            assert result.structured_content is None or name == "create_task"
    with pytest.raises(MCPError) as caught:
        await client.call_tool("get_wether", {"city": "Paris"})
    assert caught.value.code == types.INVALID_PARAMS  # a protocol error, as MCP asks
    assert caught.value.error.message == tools.registry.dispatch_tool("get_wether", "{}").content


class Asker:
    """An elicitation callback that answers as told and remembers what it was asked."""

    def __init__(self, action: str = "accept", confirm: bool = True) -> None:
        self.action = action
        self.confirm = confirm
        self.questions: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.questions.append(params.message)
        assert params.requested_schema["properties"]["confirm"]["type"] == "boolean"
        content = {"confirm": self.confirm} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


async def check_confirmation(client: Client, asker: Asker) -> None:
    """A destructive tool runs after an explicit yes from the person behind the client."""
    asker.action, asker.confirm, asker.questions = "accept", True, []
    result = await client.call_tool("delete_file", {"path": "/tmp/a"})
    assert (result.is_error, text_of(result)) == (False, "deleted /tmp/a")
    assert asker.questions == ["""Run the tool 'delete_file' with {"path": "/tmp/a"}?"""]
    asker.confirm = False  # "accept" without a yes is no approval
    result = await client.call_tool("delete_file", {"path": "/tmp/b"})
    assert result.is_error
    assert "the user declined" in text_of(result)
    asker.action = "decline"
    result = await client.call_tool("delete_file", {"path": "/tmp/c"})
    assert result.is_error
    assert text_of(result) == "Tool 'delete_file' was not run: the user declined. " + (
        "Do not retry it unless the user asks."
    )
    bad = await client.call_tool("delete_file", {})  # validated before anyone is asked
    assert bad.is_error
    assert "missing required property 'path'" in text_of(bad)
    assert len(asker.questions) == 3


async def check_refused(client: Client) -> None:
    """A client that cannot be asked: refused, exactly as a local dispatch without confirm=."""
    refused = tools.registry.dispatch_tool("delete_file", {"path": "a"}).content
    result = await client.call_tool("delete_file", {"path": "a"})
    assert (result.is_error, text_of(result)) == (True, refused)


class Listener:
    """Progress and log callbacks that remember what arrived."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, Any]] = []
        self.progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.data))

    async def on_progress(self, done: float, total: float | None, message: str | None) -> None:
        self.progress.append((done, total, message))


async def check_progress_and_logs(client: Client, listener: Listener) -> None:
    listener.logs, listener.progress = [], []
    result = await client.call_tool(
        "count_down", {"steps": 3}, progress_callback=listener.on_progress
    )
    assert text_of(result) == "liftoff"
    assert listener.progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert listener.logs == [("info", "counted 3"), ("info", "counted 2"), ("info", "counted 1")]
    listener.logs, listener.progress = [], []
    result = await client.call_tool(
        "sync_count", {"steps": 2}, progress_callback=listener.on_progress
    )
    assert text_of(result) == "done"  # from the tool's thread: every line, in order, first
    assert listener.progress == [(1, 2, None), (2, 2, None)]
    assert listener.logs == [("debug", "tick 0"), ("debug", "tick 1")]


def asking_client(server: Any, mode: str, asker: Asker, listener: Listener) -> Client:
    return Client(
        server,
        mode=mode,
        elicitation_callback=asker,
        logging_callback=listener.on_log,
        log_level="debug",  # the 2026 protocol sends log lines to a client that opts in
    )


# -- stdio: `toolreg serve TARGET` in a child process --------------------------------------


def test_stdio_serves_the_registry_to_the_sdk_client() -> None:
    """(The 2025 protocol over stdio is the next test's; both are the same handlers as HTTP.)"""

    async def run() -> None:
        async with Client(stdio_server(TOOLS)) as client:
            await check_serves_the_registry(client, MODES["auto"])
            await check_refused(client)

    asyncio.run(run())


@pytest.mark.parametrize("mode", MODES)
def test_stdio_confirms_by_elicitation_and_reports_progress_and_logs(mode: str) -> None:
    """Elicitation: a server-to-client request (2025), an InputRequiredResult the client
    answers by retrying (2026). Progress and log lines: notifications, before the result."""

    async def run() -> None:
        asker, listener = Asker(), Listener()
        async with asking_client(stdio_server(TOOLS), mode, asker, listener) as client:
            await check_confirmation(client, asker)
            await check_progress_and_logs(client, listener)

    asyncio.run(run())


PING = """from toolreg import ToolRegistry
registry = ToolRegistry()
@registry.register_tool
def ping() -> str:
    'Answer pong.'
    return 'pong'
"""


def test_several_targets_are_served_as_one_each_prefix_its_own(tmp_path: Any) -> None:
    """`toolreg serve A remote=mcp:'...'`: A's tools and, under the prefix, those of a
    mounted MCP server (here another `toolreg serve`, over stdio) behind one server."""
    (tmp_path / "ping.py").write_text(PING, encoding="utf-8")
    inner = " ".join(serve_command(str(tmp_path / "ping.py")))
    command = [*serve_command(TOOLS), f"remote=mcp:{inner}", f"local={tmp_path / 'ping.py'}"]

    async def run() -> tuple[list[str], str, str]:
        server = stdio_server()
        server.command, server.args = command[0], command[1:]
        async with Client(server) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            remote = text_of(await client.call_tool("remote_ping", {}))
            local = text_of(await client.call_tool("local_ping", {}))
            return listed, remote, local

    listed, remote, local = asyncio.run(run())
    assert listed == [*(t.name for t in tools.registry.tools()), "remote_ping", "local_ping"]
    assert (remote, local) == ("pong", "pong")


def test_two_targets_with_one_tool_name_is_an_error_that_says_prefix_one(tmp_path: Any) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(PING, encoding="utf-8")
    done = subprocess.run(
        serve_command(str(tmp_path / "a.py"), str(tmp_path / "b.py")),
        capture_output=True,
        text=True,
        env={**os.environ, **child_env()},
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("toolreg: the tool name 'ping' is in both ")
    assert done.stderr.endswith(
        ": serve one of the TARGETs under a prefix, PREFIX=TARGET "
        "(e.g. remote=mcp:'uvx mcp-server-time')\n"
    )
    assert "Traceback" not in done.stderr


def test_stdio_target_output_goes_to_stderr(tmp_path: Any) -> None:
    """stdout is the protocol's: a target that prints while loading must not corrupt it."""
    target = tmp_path / "chatty.py"
    target.write_text(
        "from toolreg import ToolRegistry\n"
        "print('hello from the target')\n"
        "registry = ToolRegistry()\n"
        "@registry.register_tool\n"
        "def ping() -> str:\n"
        "    '''Answer pong.'''\n"
        "    return 'pong'\n",
        encoding="utf-8",
    )

    async def run() -> str:
        command = serve_command(str(target))
        server = stdio_server()
        server.command, server.args = command[0], command[1:]
        async with Client(server) as client:
            return text_of(await client.call_tool("ping", {}))

    assert asyncio.run(run()) == "pong"


# -- streamable HTTP, in this process ----------------------------------------------------------


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with HttpServer(asgi_app(tools.registry)) as server:
        yield server.url


@pytest.mark.parametrize("mode", MODES)
def test_http_serves_the_registry_to_the_sdk_client(http_url: str, mode: str) -> None:
    async def run() -> None:
        async with Client(http_url, mode=mode) as client:
            await check_serves_the_registry(client, MODES[mode])
            await check_refused(client)

    asyncio.run(run())


def test_http_confirms_by_elicitation_and_reports_progress_and_logs(http_url: str) -> None:
    async def run() -> None:
        asker, listener = Asker(), Listener()
        async with asking_client(http_url, "auto", asker, listener) as client:
            await check_confirmation(client, asker)
            await check_progress_and_logs(client, listener)

    asyncio.run(run())


def test_stateless_http_on_the_2025_protocol_cannot_ask_so_refuses(http_url: str) -> None:
    """Without a session there is no back-channel for an elicitation request."""
    refused = tools.registry.dispatch_tool("delete_file", {"path": "a"}).content

    async def run() -> tuple[bool, str, list[str]]:
        asker = Asker()
        async with Client(http_url, mode="legacy", elicitation_callback=asker) as client:
            result = await client.call_tool("delete_file", {"path": "a"})
            return result.is_error, text_of(result), asker.questions

    assert asyncio.run(run()) == (True, refused, [])


def test_stateful_http_asks_over_the_session() -> None:
    async def run() -> None:
        with HttpServer(asgi_app(tools.registry, stateless=False)) as server:
            asker, listener = Asker(), Listener()
            async with asking_client(server.url, "legacy", asker, listener) as client:
                await check_confirmation(client, asker)
                await check_progress_and_logs(client, listener)
            async with Client(server.url, mode="legacy") as client:
                await check_serves_the_registry(client, MODES["legacy"])

    asyncio.run(run())


def test_toolreg_serve_over_http_binds_loopback_by_default() -> None:
    with HttpChild(*serve_command(TOOLS, "--transport", "http", "--port", "0")) as child:
        assert child.url.startswith("http://127.0.0.1:")
        assert child.url.endswith("/mcp")

        async def run() -> None:
            async with Client(child.url) as client:
                await check_serves_the_registry(client, MODES["auto"])

        asyncio.run(run())


def test_binding_every_interface_needs_the_names_clients_use() -> None:
    with pytest.raises(toolreg.UsageError, match="allowed_hosts"):
        allowed_hosts_for("0.0.0.0")
    assert "mcp.example.com:*" in allowed_hosts_for("mcp.example.com")
    assert "127.0.0.1:*" in allowed_hosts_for("127.0.0.1")
    done = subprocess.run(
        serve_command(TOOLS, "--transport", "http", "--host", "0.0.0.0"),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **child_env()},
        timeout=60,
    )
    assert done.returncode == 2
    assert "--allowed-host" in done.stderr


@pytest.mark.slow
def test_serve_checks_its_options() -> None:
    registry = ToolRegistry()
    with pytest.raises(toolreg.UsageError, match="transport"):
        serve(registry, "websocket")  # type: ignore[arg-type]
    with pytest.raises(toolreg.UsageError, match="path"):
        asgi_app(registry, path="mcp")
    with pytest.raises(toolreg.UsageError, match="token"):
        asgi_app(registry, token="  ")
    with pytest.raises(toolreg.UsageError, match="context"):
        asgi_app(registry, context="user")  # type: ignore[arg-type]

    @registry.register_tool
    def whoami(ctx: ToolContext[dict[str, str]]) -> str:
        """Needs a context: the deps' type does not admit None."""
        return ctx.deps["user"]

    with pytest.raises(toolreg.UsageError, match="'whoami' needs a context and none would be"):
        asgi_app(registry)  # refused now, not on every call

    @registry.register_tool
    def whoami_too(ctx: ToolContext[dict[str, str]]) -> str:
        """Needs a context as well."""
        return ctx.deps["user"]

    with pytest.raises(toolreg.UsageError, match="'whoami', 'whoami_too' need a context and"):
        asgi_app(registry)
    registry.unregister("whoami_too")
    with pytest.raises(toolreg.UsageError, match="context="):
        build_server(registry)
    assert asgi_app(registry, context=lambda request: {"user": "ada"}).path == "/mcp"
    for target, options, problem in (
        (TOOLS, ["--token", "x"], "--token applies to --transport http"),
        (TOOLS, ["--transport", "http", "--workers", "2", "--stateful"], "use one worker"),
        ("samples/orders.py", [], "--context JSON"),
    ):
        done = subprocess.run(
            serve_command(target, *options),
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **child_env()},
            timeout=60,
        )
        assert done.returncode == 2
        assert problem in done.stderr


# -- the gate: DNS rebinding, bearer token -------------------------------------------------

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


def test_dns_rebinding_protection_checks_host_and_origin(http_url: str) -> None:
    with httpx2.Client() as http:
        assert http.post(http_url, json=LIST, headers=HEADERS).status_code == 200
        evil_host = http.post(http_url, json=LIST, headers={**HEADERS, "host": "evil.example"})
        assert (evil_host.status_code, evil_host.text) == (421, "Invalid Host header")
        evil_origin = {**HEADERS, "origin": "http://evil.example"}
        assert http.post(http_url, json=LIST, headers=evil_origin).status_code == 403
        good_origin = {**HEADERS, "origin": "http://localhost:3000"}
        assert http.post(http_url, json=LIST, headers=good_origin).status_code == 200
        get = http.get(http_url, headers={"host": "evil.example"})  # every route, every method
        assert get.status_code == 421
    app = asgi_app(tools.registry, allowed_hosts=["mcp.example.com:*"])
    with HttpServer(app) as server, httpx2.Client() as http:
        assert http.post(server.url, json=LIST, headers=HEADERS).status_code == 421
        named = {**HEADERS, "host": "mcp.example.com:443"}
        assert http.post(server.url, json=LIST, headers=named).status_code == 200


def test_bearer_token_is_required_when_set() -> None:
    app = asgi_app(tools.registry, token="s3cret-token")
    with HttpServer(app) as server, httpx2.Client() as http:
        for given in ({}, {"authorization": "Bearer wrong"}, {"authorization": "s3cret-token"}):
            answer = http.post(server.url, json=LIST, headers={**HEADERS, **given})
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "s3cret" not in answer.text
        right = {**HEADERS, "authorization": "Bearer s3cret-token"}
        assert http.post(server.url, json=LIST, headers=right).status_code == 200

        async def run() -> str:
            bearer = {"Authorization": "Bearer s3cret-token"}
            async with (
                httpx2.AsyncClient(headers=bearer) as h,
                Client(streamable_http_client(server.url, http_client=h)) as client,
            ):
                return text_of(await client.call_tool("add", {"a": 1, "b": 2}))

        assert asyncio.run(run()) == "3"


# -- per-request context -------------------------------------------------------------------


def test_context_factory_builds_the_deps_from_the_request() -> None:
    seen: list[McpRequest] = []

    def context(request: McpRequest) -> dict[str, Any]:
        seen.append(request)
        user = request.headers.get("x-user")
        if user is None:
            raise ToolError("Sign in first.")
        if user == "crash":
            raise RuntimeError("database password is hunter2")
        return {"user": user}

    app = asgi_app(tools.registry, context=context)

    async def call(url: str, mode: str, user: str | None, args: dict[str, Any]) -> str:
        headers = {} if user is None else {"X-User": user}
        async with httpx2.AsyncClient(headers=headers) as h:
            transport = streamable_http_client(url, http_client=h)
            async with Client(transport, mode=mode) as client:
                result = await client.call_tool("whoami", args)
                return text_of(result)

    with HttpServer(app) as server:
        for mode in MODES:  # the fast path (2026) and the SDK's path (2025 handshake)
            assert asyncio.run(call(server.url, mode, "ada", {})) == "ada"
            assert asyncio.run(call(server.url, mode, None, {})) == "Sign in first."
            crashed = asyncio.run(call(server.url, mode, "crash", {}))
            assert crashed == "Tool 'whoami' was not run: the server could not build its context."
            smuggled = asyncio.run(call(server.url, mode, "ada", {"ctx": {"user": "root"}}))
            assert "unexpected property 'ctx'" in smuggled
    request = seen[0]
    assert (request.transport, request.tool, request.session_id) == ("http", "whoami", None)
    assert request.protocol_version == "2026-07-28"
    assert request.headers["x-user"] == "ada"
    assert request.client is not None
    assert request.client["name"] == "mcp"


def test_serve_gives_tools_that_need_a_context_the_one_on_the_command_line() -> None:
    """`toolreg serve --context JSON`: the same deps for every call, as `toolreg call`."""
    from toolreg.cli.target import load_target

    orders = load_target("samples/orders.py")
    expected = orders.dispatch_tool(
        "get_order_detail", {"order_id": "A1001"}, context={"user_id": "u1"}
    ).content

    async def run() -> str:
        server = stdio_server()
        command = serve_command("samples/orders.py", "--context", '{"user_id": "u1"}')
        server.command, server.args = command[0], command[1:]
        async with Client(server) as client:
            return text_of(await client.call_tool("get_order_detail", {"order_id": "A1001"}))

    assert asyncio.run(run()) == expected
    assert "A1001" in expected


def test_tool_context_reporting_does_nothing_when_not_served() -> None:
    assert tools.registry.dispatch_tool("count_down", {"steps": 3}).content == "liftoff"
    assert tools.registry.dispatch_tool("sync_count", {"steps": 3}).content == "done"
    context = ToolContext(deps=None)
    assert context.report_progress(1, 2, "half") is None
    assert context.log("hello", level="warning") is None


# -- the fast path answers exactly what the SDK's own machinery answers --------------------


def envelope(method: str, params: dict[str, Any] | None, version: str) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if version == "2026-07-28":
        meta = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        }
        params = {**(params or {}), "_meta": meta}
    if params is not None:
        body["params"] = params
    return body


def post(http: httpx2.Client, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    headers = {
        **HEADERS,
        "mcp-protocol-version": body.get("params", {})
        .get("_meta", {})
        .get("io.modelcontextprotocol/protocolVersion", "2025-11-25"),
    }
    if headers["mcp-protocol-version"] == "2026-07-28":
        headers["mcp-method"] = body["method"]
        if body["method"] == "tools/call":
            headers["mcp-name"] = body["params"]["name"]
    answer = http.post(url, json=body, headers=headers)
    if answer.headers["content-type"].startswith("text/event-stream"):
        data = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
        return answer.status_code, json.loads(data[-1])
    return answer.status_code, answer.json()


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    """The same registry behind the SDK's own streamable-HTTP app (no fast path)."""
    sdk_app = build_server(tools.registry).streamable_http_app(stateless_http=True)
    with HttpServer(sdk_app) as sdk:
        yield sdk.url + "/mcp"


def test_fast_path_answers_like_the_sdk(http_url: str, sdk_url: str) -> None:
    requests = [envelope("tools/list", None, v) for v in MODES.values()]
    requests += [
        envelope("tools/call", {"name": name, "arguments": args}, version)
        for name, args in CALLS
        for version in MODES.values()
    ]
    with httpx2.Client() as http:
        for body in requests:
            assert post(http, http_url, body) == post(http, sdk_url, body), body


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[]",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": True, "method": "tools/list"}).encode(),
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}}
        ).encode(),
    ],
)
def test_malformed_requests_get_the_sdks_answer(http_url: str, sdk_url: str, body: bytes) -> None:
    with httpx2.Client() as http:
        ours = http.post(http_url, content=body, headers=HEADERS)
        theirs = http.post(sdk_url, content=body, headers=HEADERS)
        assert ours.status_code == theirs.status_code
        assert ours.text == theirs.text


def test_an_oversized_body_is_refused(http_url: str) -> None:
    with httpx2.Client() as http:
        answer = http.post(http_url, content=b" " * (4 * 1024 * 1024 + 1), headers=HEADERS)
        assert answer.status_code == 413


def test_a_port_in_use_is_an_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            HttpServer(asgi_app(tools.registry), port=port).start()


def test_what_the_fast_path_leaves_to_the_sdk() -> None:
    """Only plain requests are answered without the SDK's machinery; the rest keep every
    behaviour the SDK has (streams for progress and logs, elicitation answers, paging)."""
    modern = {**HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
    modern["mcp-name"] = "add"
    call = envelope("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, "2026-07-28")

    def taken(body: dict[str, Any], headers: dict[str, str] = modern) -> bool:
        return fast_request(headers, json.dumps(body).encode()) is not None

    request = fast_request(modern, json.dumps(call).encode())
    assert request is not None
    assert (request.method, request.version, request.request_id) == ("tools/call", "2026-07-28", 7)
    assert request.client == {"name": "test", "version": "1"}
    meta = call["params"]["_meta"]
    assert not taken({**call, "params": {**call["params"], "_meta": {**meta, "progressToken": 1}}})
    logs = {**meta, "io.modelcontextprotocol/logLevel": "info"}
    assert not taken({**call, "params": {**call["params"], "_meta": logs}})
    assert not taken({**call, "params": {**call["params"], "inputResponses": {}}})
    assert not taken(call, {**modern, "mcp-name": "subtract"})  # the SDK rejects a mismatch
    assert not taken(call, {**modern, "accept": "application/json"})  # the SDK answers 406
    assert not taken(call, {**modern, "mcp-protocol-version": "2099-01-01"})
    assert not taken({**call, "id": None})
    assert not taken({**call, "params": {**call["params"], "arguments": [1, 2]}})
    legacy = {**HEADERS}
    plain = {"jsonrpc": "2.0", "id": "x", "method": "tools/list"}
    assert taken(plain, legacy)
    assert not taken({**plain, "params": {"cursor": "2"}}, legacy)
    assert not taken({**plain, "method": "initialize"}, legacy)
    assert not taken(plain, {k: v for k, v in legacy.items() if k != "mcp-protocol-version"})


def test_the_confirmation_question_names_its_tool() -> None:
    """A mount recognises toolreg's own question (and nothing else) by the tool it names."""
    question = server_module.question(tools.registry["delete_file"], {"path": "/a' with b"})
    assert server_module.asked_about(question, server_module.CONFIRM_SCHEMA) == "delete_file"
    assert server_module.asked_about(question, {"type": "object"}) is None
    assert server_module.asked_about("Your API key?", server_module.CONFIRM_SCHEMA) is None
