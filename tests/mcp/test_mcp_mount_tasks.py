"""Mounted tools that their server runs as MCP tasks (the tasks extension, SEP-2663): the
mount polls each task to its end, passes its status on as the call's progress, answers its
confirmation, and cancels it when the call times out or its caller goes. Over streamable
HTTP on 127.0.0.1 against toolreg's own server (`register_tool(task=...)`), a server that
lies in its task answers (the SDK's low-level `Server`), and one without tasks."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from pydantic import ConfigDict, Field

from toolreg import ToolContext, ToolError, ToolRegistry
from toolreg.mcp import HttpServer, Mount, asgi_app

POLLS = 2000  # a bound on every wait below (each one 5 ms): no test waits forever
EXTENSION = "io.modelcontextprotocol/tasks"

gate = threading.Event()  # released by a test: the gated tools finish
running = threading.Event()  # set by a gated tool once it runs
seen: list[str] = []  # what the served tools saw happen to them

served = ToolRegistry()

INTERRUPTED = "interrupted while running, so it may have had effects."


@served.register_tool(task="optional", read_only=True)
async def crunch(n: int, ctx: ToolContext[None]) -> str:
    """Crunch n numbers, slowly."""
    seen.append(f"crunch {n} started")
    ctx.report_progress(1, n, "warming up")
    running.set()
    try:
        for _ in range(POLLS):
            if gate.is_set():
                return f"crunched {n}"
            await asyncio.sleep(0.005)
        return "the gate never opened"
    except asyncio.CancelledError:
        seen.append("crunch cancelled")
        raise


@served.register_tool(task="required", read_only=True)
def export_all() -> str:
    """Export everything (runs only as a task)."""
    return "exported"


@served.register_tool(task="optional", read_only=True)
def refuse(reason: str) -> str:
    """Refuse, with a reason."""
    raise ToolError(f"Refused: {reason}")


@served.register_tool(task="optional", destructive=True)
def wipe(disk: str) -> str:
    """Wipe a disk."""
    return f"wiped {disk}"


@pytest.fixture(autouse=True)
def closed_gate() -> Iterator[None]:
    gate.clear()
    running.clear()
    seen.clear()
    yield
    gate.set()  # nothing stays blocked after a test


@pytest.fixture(scope="module")
def toolreg_url() -> Iterator[str]:
    with HttpServer(asgi_app(served)) as server:
        yield server.url


def progress_into(lines: list[tuple[float, float | None, str | None]]) -> ToolContext[None]:
    """A call's context whose progress lands in `lines` (from the mount's thread)."""

    def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        lines.append((progress, total, message))

    return ToolContext(None, report_progress=report)


def until(condition: Any) -> None:
    for _ in range(POLLS):
        if condition():
            return
        threading.Event().wait(0.005)
    raise AssertionError("never happened")


def test_a_task_is_polled_to_its_result_and_its_status_is_the_calls_progress(
    toolreg_url: str,
) -> None:
    lines: list[tuple[float, float | None, str | None]] = []
    with Mount(toolreg_url, trust_annotations=True) as remote:
        assert remote.tasks  # toolreg's server offers the extension
        releaser = threading.Thread(
            target=lambda: (running.wait(10), until(lambda: lines), gate.set())
        )
        releaser.start()
        result = remote.dispatcher.dispatch_tool("crunch", {"n": 3}, context=progress_into(lines))
        releaser.join()
    assert (result.ok, result.content) == (True, "crunched 3")
    assert lines[0] == (1.0, None, "1/3: warming up")  # the task's status message
    assert seen == ["crunch 3 started"]  # run once


def test_a_required_task_tool_and_a_failing_one(toolreg_url: str) -> None:
    with Mount(toolreg_url, trust_annotations=True) as remote:
        exported = remote.dispatcher.dispatch_tool("export_all", {})
        refused = remote.dispatcher.dispatch_tool("refuse", {"reason": "not today"})
    assert (exported.ok, exported.content) == (True, "exported")
    assert (refused.ok, refused.error_kind) == (False, "execution_error")
    assert refused.content == "Refused: not today"  # the server's isError text, as inline


def test_a_task_that_asks_for_confirmation_gets_the_approval_given_here(toolreg_url: str) -> None:
    asked: list[dict[str, Any]] = []

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append(arguments)
        return True

    with Mount(toolreg_url) as remote:
        wiped = remote.dispatcher.dispatch_tool("wipe", {"disk": "sda"}, confirm=confirm)
    assert (wiped.ok, wiped.content) == (True, "wiped sda")
    assert asked == [{"disk": "sda"}]  # asked here once; the server's question answered yes


def test_a_task_past_the_tools_timeout_is_cancelled_on_the_server(toolreg_url: str) -> None:
    with Mount(toolreg_url, trust_annotations=True, timeout=0.5) as remote:
        result = remote.dispatcher.dispatch_tool("crunch", {"n": 1})
        assert (result.ok, result.error_kind) == (False, "timeout")
        assert result.content == f"Tool 'crunch' timed out after 0.5 s: {INTERRUPTED}"
        until(lambda: "crunch cancelled" in seen)  # tasks/cancel reached the server
    assert seen == ["crunch 1 started", "crunch cancelled"]


def test_a_cancelled_async_caller_cancels_the_task_on_the_server(toolreg_url: str) -> None:
    lines: list[tuple[float, float | None, str | None]] = []

    async def main() -> None:
        async with Mount(toolreg_url, trust_annotations=True) as remote:
            call = asyncio.ensure_future(
                remote.dispatcher.adispatch_tool("crunch", {"n": 2}, context=progress_into(lines))
            )
            for _ in range(POLLS):  # the task is running, and its progress came back
                if lines:
                    break
                await asyncio.sleep(0.005)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(POLLS):
                if "crunch cancelled" in seen:
                    break
                await asyncio.sleep(0.005)

    asyncio.run(main())
    assert seen == ["crunch 2 started", "crunch cancelled"]


def test_a_server_without_tasks_runs_the_call_inline_with_its_progress() -> None:
    server = MCPServer("plain", log_level="WARNING")

    @server.tool()
    async def count(ctx: Context) -> str:
        """Count to two."""
        await ctx.report_progress(1, 2, "one")
        await ctx.report_progress(2, 2, "two")
        return "counted"

    lines: list[tuple[float, float | None, str | None]] = []
    app = server.streamable_http_app(stateless_http=True)
    with HttpServer(app) as http, Mount(http.url + "/mcp", trust_annotations=True) as remote:
        assert not remote.tasks
        result = remote.dispatcher.dispatch_tool(
            "count", {}, context=progress_into(lines), confirm=lambda tool, args: True
        )
    assert (result.ok, result.content) == (True, "counted")
    assert [line[:2] for line in lines] == [(1.0, 2.0), (2.0, 2.0)]


# -- a server that lies in its tasks ----------------------------------------------------------
ARGS = {"type": "object", "properties": {}}
LEAK = "postgres://admin:hunter2@db.internal/billing refused (key sk-live-4f9a8b7c6d5e4f3a2b1c)"
NOW = "2026-07-28T00:00:00Z"
SAFE = types.ToolAnnotations(read_only_hint=True)


class TaskId(types.RequestParams):
    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(alias="taskId")


def task(task_id: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": NOW,
        "lastUpdatedAt": NOW,
        "ttlMs": None,
        "pollIntervalMs": 1,
        **extra,
    }


def asks(method: str) -> dict[str, Any]:
    return {"method": method, "params": {"messages": [], "maxTokens": 5}}


# what tasks/get answers about each tool's task (the task id is the tool's name)
POLLED: dict[str, dict[str, Any]] = {
    "bad_status": task("bad_status", "exploded"),
    "other_task": task("someone-elses", "completed", result={"content": []}),
    "failed": task("failed", "failed", error={"code": -32603, "message": LEAK}),
    "cancelled": task("cancelled", "cancelled", statusMessage="stopped by an operator"),
    "no_result": task("no_result", "completed"),
    "bad_result": task("bad_result", "completed", result={"content": "not a list"}),
    "sampling": task(
        "sampling", "input_required", inputRequests={"k": asks("sampling/createMessage")}
    ),
    "flood": task(
        "flood",
        "input_required",
        inputRequests={f"k{i}": asks("elicitation/create") for i in range(17)},
    ),
    "long_status": task(
        "long_status",
        "completed",
        statusMessage="working\x1b[2J" + "x" * 100_000,
        result={"content": [{"type": "text", "text": "done"}]},
    ),
}
POLLED["held"] = task("held", "working")  # `held`'s answer waits for `release`
POLLED["huge"] = task(
    "huge", "completed", result={"content": [{"type": "text", "text": "y" * 300_000}]}
)
creating, release = threading.Event(), threading.Event()
CREATED: dict[str, dict[str, Any]] = {  # tools/call answers: a task, or a malformed one
    **{name: {"resultType": "task", **task(name, "working")} for name in POLLED},
    "bad_id": {"resultType": "task", **task("x" * 1000, "working")},
    "no_status": {"resultType": "task", "taskId": "no_status"},
}
EXPECTED = {
    "bad_status": "its MCP server answered with a malformed result (at 'status').",
    "other_task": "its MCP server answered tasks/get about another task.",
    "cancelled": "its MCP server cancelled the task.",
    "no_result": "its MCP server's completed task has no result.",
    "bad_result": "its MCP server answered with a malformed result (at 'content').",
    "sampling": "its MCP server's task asked for input the mount cannot give "
    "(only elicitation/create is answered).",
    "flood": "its MCP server asked for more than 16 inputs at once.",
    "bad_id": "its MCP server answered with a malformed result (at 'task.taskId').",
    "no_status": "its MCP server answered with a malformed result (at 'task.status').",
}


def liar(advertise: bool = True) -> tuple[Server[Any], list[str]]:
    """Answers every call with a task, and tasks/get as `POLLED` says; records the
    tasks/cancel it gets."""
    cancelled: list[str] = []

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema=ARGS, annotations=SAFE) for name in CREATED]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        if params.name == "held":
            creating.set()
            for _ in range(POLLS):
                if release.is_set():
                    break
                await asyncio.sleep(0.005)
        return CREATED[params.name]

    async def get_task(ctx: ServerRequestContext[Any], params: TaskId) -> dict[str, Any]:
        return {"resultType": "complete", **POLLED[params.task_id]}

    async def cancel_task(ctx: ServerRequestContext[Any], params: TaskId) -> dict[str, Any]:
        cancelled.append(params.task_id)
        return {}

    server: Server[Any] = Server("liar", on_list_tools=list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    server.add_request_handler("tasks/get", TaskId, get_task)
    server.add_request_handler("tasks/cancel", TaskId, cancel_task)
    if advertise:
        server.extensions[EXTENSION] = {}
    return server, cancelled


def test_hostile_task_answers_fail_their_call_alone_and_the_task_is_cancelled() -> None:
    server, cancelled = liar()
    lines: list[tuple[float, float | None, str | None]] = []
    app = server.streamable_http_app(stateless_http=True)
    with HttpServer(app) as http, Mount(http.url + "/mcp", trust_annotations=True) as remote:
        outcomes = {
            name: remote.dispatcher.dispatch_tool(name, {}, context=progress_into(lines))
            for name in CREATED
            if name != "held"
        }
        assert remote.connected
    for name, expected in EXPECTED.items():
        result = outcomes[name]
        assert (name, result.ok, result.content) == (
            name,
            False,
            f"Tool '{name}' failed: {expected}",
        )
    failed = outcomes["failed"]  # the server's words: redacted like a remote exception's
    assert failed.content.startswith("Tool 'failed' failed: postgres://[redacted]@")
    assert "hunter2" not in failed.content
    assert "sk-live" not in failed.content
    assert (outcomes["long_status"].ok, outcomes["long_status"].content) == (True, "done")
    huge = outcomes["huge"]  # a task's result is cut like an inline one
    assert huge.content == "y" * 100_000 + "\n[truncated: 200000 of 300000 characters cut]"
    ((_, _, message),) = [line for line in lines if line[2] and line[2].startswith("working")]
    assert message == "working [2J" + "x" * 489 + "…"  # printable, cut at 500 characters
    # every task left unfinished was cancelled (not those that ended, however badly);
    # a malformed creation names no task to cancel
    assert set(cancelled) == {"bad_status", "other_task", "sampling", "flood"}


def test_a_task_from_a_server_that_does_not_offer_tasks_is_refused() -> None:
    server, _ = liar(advertise=False)
    app = server.streamable_http_app(stateless_http=True)
    with HttpServer(app) as http, Mount(http.url + "/mcp", trust_annotations=True) as remote:
        assert not remote.tasks
        result = remote.dispatcher.dispatch_tool("long_status", {})
    assert result.content == (
        "Tool 'long_status' failed: its MCP server answered with a task, but does not offer "
        "the tasks extension."
    )


# -- FastMCP's task server (fastmcp[tasks]), over stdio ----------------------------------------
@pytest.fixture(scope="module")
def fastmcp_place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mount, Path]]:
    pytest.importorskip("fastmcp_tasks")
    place = tmp_path_factory.mktemp("fastmcp")
    server = [
        sys.executable,
        str(Path(__file__).parents[1] / "_fastmcp_tasks_server.py"),
        str(place),
    ]
    with Mount(server, trust_annotations=True, timeout=20, connect_timeout=60) as remote:
        yield remote, place


@pytest.mark.slow  # FastMCP takes seconds to import and start
def test_fastmcps_task_tools_through_a_mount(fastmcp_place: tuple[Mount, Path]) -> None:
    remote, place = fastmcp_place
    assert remote.tasks
    lines: list[tuple[float, float | None, str | None]] = []

    def release() -> None:
        until(lambda: lines)  # the task's status message came back as progress
        (place / "release").write_text("go")

    releaser = threading.Thread(target=release)
    releaser.start()
    crunched = remote.dispatcher.dispatch_tool("crunch", {"n": 3}, context=progress_into(lines))
    releaser.join()
    (place / "release").unlink()
    assert (crunched.ok, crunched.content) == (True, "crunched 3")
    assert lines[0] == (1.0, None, "warming up")
    exported = remote.dispatcher.dispatch_tool("export_all", {})  # mode="required"
    assert (exported.ok, exported.content) == (True, "exported")
    refused = remote.dispatcher.dispatch_tool("refuse", {"reason": "not today"})
    assert (refused.ok, refused.error_kind) == (False, "execution_error")
    assert refused.content == "Refused: not today"
    assert remote.dispatcher.dispatch_tool("double", {"x": 21}).content == "42"  # inline


@pytest.mark.slow
def test_a_cancelled_caller_cancels_the_fastmcp_task_there(
    fastmcp_place: tuple[Mount, Path],
) -> None:
    remote, place = fastmcp_place
    lines: list[tuple[float, float | None, str | None]] = []

    def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        lines.append((progress, total, message))

    async def main() -> Any:
        call = asyncio.ensure_future(
            remote.dispatcher.adispatch_tool(
                "crunch", {"n": 1}, context=ToolContext(None, report_progress=report)
            )
        )
        for _ in range(POLLS):
            if lines:
                break
            await asyncio.sleep(0.005)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(main())
    until(lambda: (place / "cancelled").exists())  # tasks/cancel reached the tool


@pytest.mark.slow
def test_a_fastmcp_task_past_the_tools_timeout_is_cancelled_there(tmp_path: Path) -> None:
    pytest.importorskip("fastmcp_tasks")
    server = [
        sys.executable,
        str(Path(__file__).parents[1] / "_fastmcp_tasks_server.py"),
        str(tmp_path),
    ]
    with Mount(server, trust_annotations=True, timeout=1, connect_timeout=60) as remote:
        result = remote.dispatcher.dispatch_tool("crunch", {"n": 1})
        assert (result.ok, result.content) == (
            False,
            f"Tool 'crunch' timed out after 1 s: {INTERRUPTED}",
        )
        until(lambda: (tmp_path / "cancelled").exists())


def test_a_caller_cancelled_before_the_task_is_created_still_cancels_it() -> None:
    """The caller gives up while the server is still creating the task: the mount waits
    for the answer in the background, and cancels the task it turns out to be."""
    server, cancelled = liar()
    app = server.streamable_http_app(stateless_http=True)

    async def main(url: str) -> None:
        async with Mount(url, trust_annotations=True) as remote:
            call = asyncio.ensure_future(remote.dispatcher.adispatch_tool("held", {}))
            for _ in range(POLLS):
                if creating.is_set():
                    break
                await asyncio.sleep(0.005)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            release.set()  # now the server answers: with a task
            for _ in range(POLLS):
                if cancelled:
                    break
                await asyncio.sleep(0.005)

    with HttpServer(app) as http:
        asyncio.run(main(http.url + "/mcp"))
    assert cancelled == ["held"]
