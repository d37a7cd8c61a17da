"""Tools served as MCP tasks (the tasks extension, SEP-2663): real HTTP on 127.0.0.1, raw
JSON-RPC (the `mcp` SDK has no types for the extension) and FastMCP's client, which speaks it."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import unicodedata
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from mcp.server.auth.provider import AccessToken

from toolreg import ToolContext, ToolDefinitionError, ToolRegistry
from toolreg.errors import UsageError
from toolreg.mcp import HttpServer, ResourceServer, TaskOptions, asgi_app

MODERN, LEGACY = "2026-07-28", "2025-11-25"
EXTENSION = "io.modelcontextprotocol/tasks"
TASKS = {"extensions": {EXTENSION: {}}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
POLLS = 2000  # a bound on every wait below (each poll sleeps 5 ms): no test waits forever

gate = threading.Event()  # released by a test: the gated tools finish
seen: list[str] = []  # what the tools saw happen to them

registry = ToolRegistry()


@registry.register_tool(task="optional")
async def crunch(n: int, ctx: ToolContext[None]) -> str:
    """Crunch n numbers, slowly."""
    ctx.report_progress(1, n, "warming up")
    try:
        for _ in range(POLLS):
            if gate.is_set():
                return f"crunched {n}"
            await asyncio.sleep(0.005)
        return "gate never opened"
    except asyncio.CancelledError:
        seen.append("crunch cancelled")
        raise


@registry.register_tool(task="optional")
def crunch_sync(n: int) -> str:
    """Crunch n numbers in a thread."""
    gate.wait(10)
    seen.append("crunch_sync returned")
    return f"crunched {n} in a thread"


@registry.register_tool(task="optional")
def double(x: int) -> int:
    """Double x."""
    return 2 * x


@registry.register_tool(task="required")
def export_all() -> str:
    """Export everything (long)."""
    return "exported"


@registry.register_tool(task="optional", destructive=True)
def wipe(disk: str) -> str:
    """Wipe a disk."""
    return f"wiped {disk}"


@pytest.fixture(autouse=True)
def closed_gate() -> Iterator[None]:
    gate.clear()
    seen.clear()
    yield
    gate.set()  # nothing stays blocked after a test


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    with HttpServer(asgi_app(registry)) as running:
        yield running


class Rpc:
    """Raw JSON-RPC on the 2026-07-28 protocol over one HTTP client."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.http = httpx2.Client(timeout=10, headers=headers)
        self.ids = itertools.count(1)

    def __call__(
        self,
        method: str,
        params: dict[str, Any],
        *,
        capabilities: dict[str, Any] = TASKS,
        version: str = MODERN,
        name: str | None = None,
    ) -> dict[str, Any]:
        headers = {**HEADERS, "mcp-protocol-version": version}
        meta: dict[str, Any] = {}
        if version == MODERN:
            meta = {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            }
            headers["mcp-method"] = method
            headers["mcp-name"] = name or params.get("name") or params.get("taskId", "")
        elif capabilities:
            meta = {"io.modelcontextprotocol/clientCapabilities": capabilities}
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": method,
            "params": {**params, "_meta": {**meta, **params.get("_meta", {})}},
        }
        answer = self.http.post(self.url, json=body, headers=headers)
        self.status = answer.status_code  # errors come as 4xx with the JSON-RPC error
        if answer.headers["content-type"].startswith("text/event-stream"):
            data = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
            message: dict[str, Any] = json.loads(data[-1])
            return message
        parsed: dict[str, Any] = answer.json()
        return parsed

    def call(self, tool: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
        return self("tools/call", {"name": tool, "arguments": arguments}, **options)

    def get(self, task_id: str, **options: Any) -> dict[str, Any]:
        return self("tasks/get", {"taskId": task_id}, **options)

    def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """Poll `tasks/get` until the task's status is one of `statuses`."""
        for _ in range(POLLS):
            answer = self.get(task_id)
            if answer["result"]["status"] in statuses:
                return answer["result"]
            threading.Event().wait(0.005)
        raise AssertionError(f"task {task_id} never reached {statuses}: {answer}")


@pytest.fixture
def rpc(server: HttpServer) -> Iterator[Rpc]:
    client = Rpc(server.url)
    yield client
    client.http.close()


def started(rpc: Rpc, tool: str, arguments: dict[str, Any], **options: Any) -> str:
    answer = rpc.call(tool, arguments, **options)
    assert "result" in answer, answer
    result = answer["result"]
    assert result["resultType"] == "task", answer
    assert result["status"] == "working"
    assert result["pollIntervalMs"] > 0
    assert result["createdAt"]
    assert result["lastUpdatedAt"]
    task_id: str = result["taskId"]
    assert len(task_id) >= 32  # unguessable: it is the handle
    return task_id


def text(call_result: dict[str, Any]) -> str:
    (block,) = call_result["content"]
    shown: str = block["text"]
    return shown


def test_a_task_tool_is_answered_with_a_task_the_client_polls_to_its_result(rpc: Rpc) -> None:
    task_id = started(rpc, "crunch", {"n": 5})
    working = rpc.get(task_id)["result"]
    assert working["resultType"] == "complete"  # tasks/get itself completed
    assert working["status"] == "working"
    assert working["ttlMs"] is None
    for _ in range(POLLS):  # the tool's progress is the task's status message
        message = rpc.get(task_id)["result"].get("statusMessage")
        if message:
            break
    assert message == "1/5: warming up"
    gate.set()
    done = rpc.until(task_id, "completed")
    assert text(done["result"]) == "crunched 5"
    assert done["result"]["isError"] is False
    assert done["ttlMs"] > 0  # the result is kept a while after it ended
    assert rpc.get(task_id)["result"]["result"] == done["result"]  # reads are idempotent


def test_the_server_advertises_the_extension_in_discover(rpc: Rpc) -> None:
    answer = rpc("server/discover", {}, name="server/discover")
    assert answer["result"]["capabilities"]["extensions"] == {EXTENSION: {}}


def test_without_the_extension_optional_runs_inline_and_required_is_refused(rpc: Rpc) -> None:
    inline = rpc.call("double", {"x": 4}, capabilities={})
    assert inline["result"]["resultType"] == "complete"
    assert text(inline["result"]) == "8"
    refused = rpc.call("export_all", {}, capabilities={})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["message"] == (
        "Tool 'export_all' runs only as a task: it needs the tasks extension "
        f"({EXTENSION}): declare it in the request's client capabilities."
    )
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    exported = rpc.until(started(rpc, "export_all", {}), "completed")
    assert text(exported["result"]) == "exported"


def test_the_2025_protocol_never_gets_a_task_even_if_it_declares_one(rpc: Rpc) -> None:
    inline = rpc.call("double", {"x": 2}, version=LEGACY)
    assert text(inline["result"]) == "4"
    assert "taskId" not in inline["result"]
    assert rpc.get("anything", version=LEGACY)["error"]["code"] == -32601


def test_a_tool_without_task_is_never_a_task(rpc: Rpc) -> None:
    plain = ToolRegistry()
    plain.register_tool(double)
    with HttpServer(asgi_app(plain)) as other:
        answer = Rpc(other.url).call("double", {"x": 3})
    assert answer["result"]["resultType"] == "complete"
    assert text(answer["result"]) == "6"


def test_the_tool_result_of_a_failing_call_is_a_completed_task_with_is_error(rpc: Rpc) -> None:
    done = rpc.until(started(rpc, "double", {"x": "not a number"}), "completed", "failed")
    assert done["status"] == "completed"
    assert done["result"]["isError"] is True


def test_cancel_stops_an_async_tool_and_a_second_cancel_is_acknowledged(rpc: Rpc) -> None:
    task_id = started(rpc, "crunch", {"n": 1})
    for _ in range(2):  # cancel twice: both acknowledged
        answer = rpc("tasks/cancel", {"taskId": task_id})
        assert answer["result"]["resultType"] == "complete"
        assert "error" not in answer
    cancelled = rpc.until(task_id, "cancelled")
    assert cancelled["statusMessage"] == "Cancelled by the client."
    assert "result" not in cancelled
    assert seen == ["crunch cancelled"]  # the tool itself was cancelled


def test_a_cancelled_sync_tool_runs_on_in_its_thread_and_its_result_is_discarded(
    rpc: Rpc,
) -> None:
    task_id = started(rpc, "crunch_sync", {"n": 2})
    rpc("tasks/cancel", {"taskId": task_id})
    rpc.until(task_id, "cancelled")
    gate.set()
    for _ in range(POLLS):
        if seen:
            break
        threading.Event().wait(0.005)
    assert seen == ["crunch_sync returned"]
    after = rpc.get(task_id)["result"]
    assert after["status"] == "cancelled"
    assert "result" not in after


def test_a_cancel_after_the_end_leaves_the_task_as_it_ended(rpc: Rpc) -> None:
    task_id = started(rpc, "double", {"x": 5})
    rpc.until(task_id, "completed")
    assert "error" not in rpc("tasks/cancel", {"taskId": task_id})
    assert text(rpc.get(task_id)["result"]["result"]) == "10"


@pytest.mark.parametrize("task_id", ["nope", "x" * 5000, "", "../../etc/passwd"])
def test_an_unknown_task_id_is_invalid_params_for_every_method(rpc: Rpc, task_id: str) -> None:
    for method, extra in (
        ("tasks/get", {}),
        ("tasks/cancel", {}),
        ("tasks/update", {"inputResponses": {}}),
    ):
        answer = rpc(method, {"taskId": task_id, **extra}, name=task_id or "-")
        if answer["error"]["code"] != -32602 and task_id == "":
            continue  # an empty Mcp-Name is refused before the method (header mismatch)
        assert answer["error"] == {"code": -32602, "message": "Task not found."}


def test_malformed_task_requests_are_refused(rpc: Rpc) -> None:
    task_id = started(rpc, "double", {"x": 1})
    assert rpc("tasks/get", {})["error"]["code"] == -32602  # no taskId
    assert rpc("tasks/get", {"taskId": 7}, name="7")["error"]["code"] == -32602
    assert rpc("tasks/update", {"taskId": task_id})["error"]["code"] == -32602
    assert rpc("tasks/result", {"taskId": task_id})["error"]["code"] == -32601  # removed
    mismatch = rpc("tasks/get", {"taskId": task_id}, name="someone-else")
    assert mismatch["error"]["code"] == -32020  # Mcp-Name must name the task
    undeclared = rpc("tasks/get", {"taskId": task_id}, capabilities={})
    assert undeclared["error"]["code"] == -32021
    # nothing above touched the task
    assert text(rpc.until(task_id, "completed")["result"]) == "2"


def test_keys_not_outstanding_are_ignored_by_update(rpc: Rpc) -> None:
    task_id = started(rpc, "crunch", {"n": 1})
    answer = rpc("tasks/update", {"taskId": task_id, "inputResponses": {"input-9": {"x": 1}}})
    assert answer["result"]["resultType"] == "complete"
    assert rpc.get(task_id)["result"]["status"] == "working"


def by_subject(token: str) -> AccessToken:
    return AccessToken(token=token, client_id="c", scopes=[], subject=token)


def test_another_callers_task_is_as_unknown_as_a_made_up_one() -> None:
    auth = ResourceServer(
        by_subject, resource="https://mcp.example.com/mcp", authorization_servers=["https://a"]
    )
    with HttpServer(asgi_app(registry, auth=auth)) as running:
        alice = Rpc(running.url, {"authorization": "Bearer alice"})
        mallory = Rpc(running.url, {"authorization": "Bearer mallory"})
        task_id = started(alice, "crunch", {"n": 3})
        for method, extra in (
            ("tasks/get", {}),
            ("tasks/cancel", {}),
            ("tasks/update", {"inputResponses": {"input-1": {"action": "accept"}}}),
        ):
            answer = mallory(method, {"taskId": task_id, **extra})
            assert answer["error"] == {"code": -32602, "message": "Task not found."}
        assert alice.get(task_id)["result"]["status"] == "working"  # mallory's cancel did nothing
        gate.set()
        assert text(alice.until(task_id, "completed")["result"]) == "crunched 3"


def test_a_finished_task_is_forgotten_after_its_ttl() -> None:
    with HttpServer(asgi_app(registry, tasks=TaskOptions(ttl=0.05))) as running:
        rpc = Rpc(running.url)
        task_id = started(rpc, "double", {"x": 21})
        for _ in range(POLLS):
            answer = rpc.get(task_id)
            if "error" in answer:
                break
            threading.Event().wait(0.005)
        assert answer["error"] == {"code": -32602, "message": "Task not found."}
        assert "error" in rpc("tasks/cancel", {"taskId": task_id})


def test_a_flood_of_tasks_over_the_bound_is_refused_and_runs_nothing() -> None:
    options = TaskOptions(max_running=2, max_kept=3, max_per_caller=2)
    with HttpServer(asgi_app(registry, tasks=options)) as running:
        rpc = Rpc(running.url)
        first, second = (started(rpc, "crunch", {"n": n}) for n in (1, 2))
        for _ in range(5):
            refused = rpc.call("double", {"x": 1})
            assert refused["error"] == {
                "code": -32000,
                "message": "Too many tasks running (2); try again later.",
            }
        gate.set()
        rpc.until(first, "completed"), rpc.until(second, "completed")
        kept = []
        for x in range(3):  # room again (one at a time: each ends before the next starts)
            kept.append(started(rpc, "double", {"x": x}))
            rpc.until(kept[-1], "completed")
        # at most max_kept tasks are held: the oldest finished ones went first
        assert "error" in rpc.get(first)
        assert "error" in rpc.get(second)
        assert "result" in rpc.get(kept[-1])


def test_one_caller_gets_its_share_of_the_task_slots_not_all_of_them() -> None:
    """max_running=4, max_per_caller=2: alice's third task is refused while her two run,
    and bob (another token) still gets his two; the whole bound still holds on top."""
    auth = ResourceServer(
        by_subject, resource="https://mcp.example.com/mcp", authorization_servers=["https://a"]
    )
    options = TaskOptions(max_running=4, max_per_caller=2)
    with HttpServer(asgi_app(registry, auth=auth, tasks=options)) as running:
        alice, bob, carol = (
            Rpc(running.url, {"authorization": f"Bearer {name}"})
            for name in ("alice", "bob", "carol")
        )
        mine = [started(alice, "crunch", {"n": n}) for n in (1, 2)]
        for _ in range(3):
            assert alice.call("double", {"x": 1})["error"] == {
                "code": -32000,
                "message": "Too many tasks of this caller running (2); try again later.",
            }
        theirs = [started(bob, "crunch", {"n": n}) for n in (3, 4)]
        assert carol.call("double", {"x": 1})["error"] == {  # the whole bound, still
            "code": -32000,
            "message": "Too many tasks running (4); try again later.",
        }
        gate.set()
        for rpc, task_id in zip((alice, alice, bob, bob), mine + theirs):
            rpc.until(task_id, "completed")
        again = started(alice, "double", {"x": 5})  # her share is free again
        assert text(alice.until(again, "completed")["result"]) == "10"


def test_a_task_past_its_lifetime_fails_and_frees_its_slot() -> None:
    """max_lifetime: an async tool still running then is cancelled, a sync tool's thread
    runs on; either way the task ends `failed`, saying the tool was interrupted while
    running (it may have had effects; a sync one may still be running), and its slot is
    free for the next task."""
    options = TaskOptions(max_running=1, max_lifetime=0.2)
    with HttpServer(asgi_app(registry, tasks=options)) as running:
        rpc = Rpc(running.url)
        for tool in ("crunch", "crunch_sync"):
            task_id = started(rpc, tool, {"n": 1})
            failed = rpc.until(task_id, "failed")
            message = (
                "The task ran past its lifetime (0.2 s) and was stopped: the tool was "
                "interrupted while running, may have had effects and may still be running."
            )
            assert failed["statusMessage"] == message
            assert failed["error"] == {"code": -32001, "message": message}
            assert text(rpc.until(started(rpc, "double", {"x": 2}), "completed")["result"]) == "4"
        assert "crunch cancelled" in seen  # the async tool was cancelled
        assert "crunch_sync returned" not in seen  # the thread runs on (till the gate opens)
        gate.set()


def test_a_confirmation_is_asked_through_input_requests() -> None:
    with HttpServer(asgi_app(registry)) as running:
        rpc = Rpc(running.url)
        can_ask = {**TASKS, "elicitation": {"form": {}}}
        for action, content, expected in (
            ("accept", {"confirm": True}, "wiped sda"),
            ("decline", None, None),
            ("accept", {"confirm": "yes"}, None),  # only an explicit true approves
        ):
            task_id = started(rpc, "wipe", {"disk": "sda"}, capabilities=can_ask)
            waiting = rpc.until(task_id, "input_required")
            ((key, request),) = waiting["inputRequests"].items()
            assert request["method"] == "elicitation/create"
            assert request["params"]["message"] == """Run the tool 'wipe' with {"disk": "sda"}?"""
            answer = (
                {"action": action} if content is None else {"action": action, "content": content}
            )
            rpc(
                "tasks/update",
                {"taskId": task_id, "inputResponses": {key: answer}},
                capabilities=can_ask,
            )
            done = rpc.until(task_id, "completed")
            if expected is None:
                assert done["result"]["isError"] is True
            else:
                assert text(done["result"]) == expected
        # a client that cannot answer a form gets the refusal a local dispatch gives
        task_id = started(rpc, "wipe", {"disk": "sdb"})
        assert rpc.until(task_id, "completed")["result"]["isError"] is True


@pytest.mark.slow  # importing FastMCP alone takes seconds
def test_fastmcps_client_drives_a_toolreg_task_transparently(server: HttpServer) -> None:
    fastmcp = pytest.importorskip("fastmcp")
    pytest.importorskip("fastmcp_tasks")
    from fastmcp_tasks.client import call_tool_task

    async def main() -> tuple[str, str, str]:
        async with fastmcp.Client(server.url) as client:
            handle = await call_tool_task(client, "crunch", {"n": 4})
            status = await handle.status()
            gate.set()
            result = await handle.result()
            plain = await client.call_tool("double", {"x": 21})
            return status.status, result.content[0].text, plain.content[0].text

    assert asyncio.run(main()) == ("working", "crunched 4", "42")


def test_task_is_checked_at_registration() -> None:
    with pytest.raises(ToolDefinitionError, match="task='always' must be 'optional'"):
        ToolRegistry().register_tool(task="always")(double)  # type: ignore[call-overload]
    for bad in (
        {"max_running": 0},
        {"ttl": -1},
        {"poll_interval": float("nan")},
        {"max_per_caller": 0},
        {"max_per_caller": 40},
        {"max_lifetime": 0},
        {"max_lifetime": float("inf")},
    ):
        with pytest.raises(UsageError):
            TaskOptions(**bad)
    assert TaskOptions().max_per_caller == 8  # a quarter of max_running by default
    assert TaskOptions(max_running=2).max_per_caller == 1
    assert TaskOptions().max_lifetime == 3600
    assert TaskOptions(max_lifetime=None).max_lifetime is None
    with pytest.raises(UsageError, match="max_kept=1"):
        TaskOptions(max_running=2, max_kept=1)
    with pytest.raises(UsageError, match="tasks= takes TaskOptions"):
        asgi_app(registry, tasks={"ttl": 5})  # type: ignore[arg-type]


def test_running_tasks_are_cancelled_when_the_servers_lifespan_ends() -> None:
    """Mounted in a host app (its `lifespan=`), and as the ASGI app itself: by the time the
    lifespan has ended, a running task's tool was cancelled (not left to the event loop's
    own teardown, nor running on in a loop that goes on)."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.routing import Mount as Route

    at_shutdown: list[list[str]] = []
    inner = asgi_app(registry)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with inner.lifespan(app):
            yield
        at_shutdown.append(list(seen))

    host = Starlette(routes=[Route("/", app=inner)], lifespan=lifespan)

    async def bare(scope: Any, receive: Any, send: Any) -> None:
        """The app itself under the ASGI server: what it had done when it said it was done."""

        async def sent(message: dict[str, Any]) -> None:
            if message["type"] == "lifespan.shutdown.complete":
                at_shutdown.append(list(seen))
            await send(message)

        await plain(scope, receive, sent)

    plain = asgi_app(registry)
    for app in (host, bare):
        seen.clear()
        at_shutdown.clear()
        running = HttpServer(app).start()
        try:
            rpc = Rpc(running.url + "/mcp")
            task_id = started(rpc, "crunch", {"n": 7})
            for _ in range(POLLS):  # the tool is running: its progress is in the task
                if rpc.get(task_id)["result"].get("statusMessage"):
                    break
            rpc.http.close()
        finally:
            running.close()
        assert at_shutdown == [["crunch cancelled"]]


@pytest.mark.parametrize("subject", ["zoë", "用户", "emoji 🦜", "lone \ud800 surrogate"])
def test_a_non_ascii_token_subject_reaches_its_own_tasks(subject: str) -> None:
    """A real JWT (the auth extra) whose subject is not ASCII: the owner check compares
    bytes, so get, update and cancel of the caller's own task work, and a subject one
    letter away (NFC vs NFD, another accent) is another caller."""
    jwt = pytest.importorskip("jwt")
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    from toolreg.mcp import JwtVerifier

    key = ec.generate_private_key(ec.SECP256R1())
    jwks = {"keys": [{**json.loads(ECAlgorithm.to_jwk(key.public_key())), "kid": "k1"}]}
    resource = "https://mcp.example.com/mcp"
    verifier = JwtVerifier(jwks, issuer="https://auth.example.com", audience=resource)

    def bearer(sub: str) -> dict[str, str]:
        now = int(time.time())
        claims = {"iss": "https://auth.example.com", "aud": resource, "sub": sub}
        token = jwt.encode(
            {**claims, "iat": now, "exp": now + 300}, key, algorithm="ES256", headers={"kid": "k1"}
        )
        return {"authorization": f"Bearer {token}"}

    other = unicodedata.normalize("NFD", subject) if subject == "zoë" else subject + "x"
    app = asgi_app(registry, auth=ResourceServer(verifier, resource=resource))
    with HttpServer(app) as running:
        owner, stranger = Rpc(running.url, bearer(subject)), Rpc(running.url, bearer(other))
        task_id = started(owner, "crunch", {"n": 2})
        for method, extra in (
            ("tasks/get", {}),
            ("tasks/update", {"inputResponses": {"input-1": {"action": "accept"}}}),
            ("tasks/cancel", {}),
        ):
            answer = stranger(method, {"taskId": task_id, **extra})
            assert answer["error"] == {"code": -32602, "message": "Task not found."}
            assert "result" in owner(method, {"taskId": task_id, **extra}), method
        assert owner.until(task_id, "cancelled")["statusMessage"] == "Cancelled by the client."
