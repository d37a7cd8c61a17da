"""A toolset as an MCP server: the SDK's low-level `Server` with toolreg's two handlers.

What is served is any `Toolset` (`toolreg.toolsets`): a `ToolRegistry`, or a composition
such as `combined(registry, prefixed(Mount(a), "a_"), prefixed(Mount(b), "b_"))`, so one
server re-exports several mounted servers beside local tools (a name clash is an error when
the view is composed). It is read on every request: a mount's refresh shows through.

`tools/list` answers the toolset's `mcp` export (see `catalog`). `tools/call` goes through
the toolset's dispatcher (`adispatch_tool`) with every step of local dispatch; a failure
is a result with `isError: true` and the text a model gets locally. An unknown tool name
is a protocol error (JSON-RPC -32602, as the MCP specification asks), with dispatch's text
as its message.

A tool that needs confirmation (`destructive=True` or `requires_confirmation=True`) is
confirmed by the person behind the client with MCP elicitation: a server-to-client
`elicitation/create` request when the connection has a back-channel (stdio and stateful
HTTP on the 2025 protocol), an `InputRequiredResult` the client answers by retrying the call
(the 2026-07-28 protocol). A client that cannot elicit gets the answer a local dispatch
without `confirm=` gives: refused.

`ToolService` holds what both the SDK's handlers and the HTTP fast path (`http`) do per
call: build the context, dispatch, render.

Sync tools run in threads (Python cannot stop one), so a server bounds them: at most
`max_threads` calls of sync tools run at once (default `DEFAULT_MAX_THREADS`, 32); the
next ones wait for a free slot, first come first served, and a client that gives up while
waiting is dropped. A running sync call keeps its slot until its thread ends: until the
tool returns, even when its client has gone or its time limit has ended the call (answered
"interrupted while running": the thread runs on, so the bound holds for such calls too). A
call of a tool with a time limit waits for a slot at most that long, then is answered "did
not start ... It did not run". A call waiting for its confirmation gives its slot back
meanwhile. Async tools take no slot.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import inspect
import json
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.jsonrpc import HEADER_MISMATCH
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..dispatch import ConfirmCallback, Dispatcher
from ..dispatch.calling import THREAD_WATCH, make_context
from ..errors import ToolDeniedError, ToolTimeoutError, UsageError
from ..idempotency import META_KEY, received_key
from ..params import ToolContext
from ..result import ToolResult
from ..telemetry import extracted, sanitize_meta
from ..tool import Tool
from ..toolsets import Toolset, pinned, versions_of
from ..toolsets.versions import same_version_text
from .auth import UNRESTRICTED, Caller, address_caller, token_caller
from .cache import ResultCache
from .catalog import Catalog, call_result, requested_version
from .context import LogLevels, McpRequest, Note, Reporter
from .tasks import (
    EXTENSION,
    INTERRUPTED,
    LOST_MESSAGE,
    JobRunner,
    TaskBackend,
    TaskHandle,
    TaskJob,
    TaskOptions,
    TaskParams,
    TaskStore,
    UpdateParams,
    can_elicit,
    declares_tasks,
    keyed,
    lost_policy,
    needs_tasks,
    task_key,
)

__all__ = ["DEFAULT_MAX_THREADS", "ContextFactory", "ThreadSlots", "ToolService", "build_server"]

ContextFactory = Callable[[McpRequest], Any]
"""`context=`: `McpRequest -> deps` (or an awaitable of them) for the tool's `ToolContext`."""

CONFIRM_KEY = "toolreg/confirm"
"""The key of the confirmation in an `InputRequiredResult` and in the client's answer."""

CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Run the tool",
            "description": "true to run the tool with these arguments",
        }
    },
    "required": ["confirm"],
}
_MAX_SHOWN = 2000  # characters of the arguments shown in a confirmation question
CALLER_KEY = "toolreg.caller"
"""The ASGI scope key under which toolreg's HTTP gate leaves the request's `Caller`."""
DEFAULT_MAX_THREADS = 32
"""Sync tool calls a server runs at once (`max_threads=`); more wait for a free slot."""


class ThreadSlots:
    """At most `size` sync tool calls of one server at once; the others wait in arrival
    order. Safe across threads and event loops (each waiter is woken on its own loop).
    `running` and `waiting` say how many calls hold a slot and how many wait for one."""

    __slots__ = ("_lock", "_waiters", "running", "size")

    def __init__(self, size: int = DEFAULT_MAX_THREADS) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise UsageError(
                f"max_threads={size!r}: must be a whole number >= 1 (the sync tool calls "
                f"the server runs at once; default {DEFAULT_MAX_THREADS})"
            )
        self.size = size
        self.running = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def acquire(self) -> None:
        """Take a slot, waiting for one if need be; cancelled while waiting, hold none."""
        with self._lock:
            if self.running < self.size and not self._waiters:
                self.running += 1
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            with self._lock:
                granted = waiter not in self._waiters
                if not granted:
                    self._waiters.remove(waiter)
            if granted:  # handed a slot as the wait was cancelled: hand it on
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back: to the first waiter whose loop still runs, else free it."""
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                try:
                    waiter.get_loop().call_soon_threadsafe(_wake, waiter)
                except RuntimeError:  # its loop has closed: nobody waits there any more
                    continue
                return
            self.running -= 1


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class _Slot:
    """One call's claim on a `ThreadSlots` slot. It is held until both the call's dispatch
    and the thread its sync tool runs in have ended: a tool past its time limit runs on in
    its thread (Python cannot stop one), and the bound is on threads, not on answers. A
    confirmation gives it back meanwhile (`give_back`, then `take`). Thread-safe: the
    thread reports its end from itself."""

    __slots__ = ("_dispatching", "_lock", "_threads", "held", "slots")

    def __init__(self, slots: ThreadSlots) -> None:
        self.slots = slots
        self.held = False
        self._dispatching = True
        self._threads = 0
        self._lock = threading.Lock()

    async def take(self, limit: float | None = None) -> bool:
        """Wait for a slot (at most `limit` seconds, when given): whether one was taken."""
        if limit is None:
            await self.slots.acquire()
        else:
            try:
                await asyncio.wait_for(self.slots.acquire(), limit)
            except asyncio.TimeoutError:
                return False
        with self._lock:
            self.held = True
        return True

    def give_back(self, *_: object) -> None:
        with self._lock:
            if not self.held:
                return
            self.held = False
        self.slots.release()

    def thread(self) -> Callable[[], None]:
        """`calling.THREAD_WATCH`: the call's tool starts its thread; the thread calls the
        function returned when the tool has returned."""
        with self._lock:
            self._threads += 1
        return self._thread_ended

    def _thread_ended(self) -> None:
        with self._lock:
            self._threads -= 1
            last = self._threads == 0 and not self._dispatching
        if last:
            self.give_back()

    def dispatched(self, *_: object) -> None:
        """The call's dispatch has ended (answered, timed out, or abandoned)."""
        with self._lock:
            self._dispatching = False
            last = self._threads == 0
        if last:
            self.give_back()


class ToolService:
    """Runs MCP tool calls against a toolset: context, dispatch and the wire result."""

    __slots__ = (
        "_pinned",
        "cache",
        "catalog",
        "context",
        "restricted",
        "tasks",
        "threads",
        "toolset",
    )

    def __init__(
        self,
        toolset: Toolset,
        context: ContextFactory | None = None,
        *,
        max_threads: int = DEFAULT_MAX_THREADS,
        restricted: bool = False,
        cache: ResultCache | None = None,
        tasks: TaskOptions | None = None,
    ) -> None:
        if cache is not None and not isinstance(cache, ResultCache):
            raise UsageError("cache= takes ResultCache(ttl=60, max_entries=1024), or None")
        if context is not None and not callable(context):
            raise UsageError("context= must be a function of the MCP request, or None")
        toolset = served(toolset)
        if context is None:
            needy = [t.name for t in toolset.tools() if t.plan.needs_context]
            if needy:
                raise UsageError(
                    f"{', '.join(map(repr, needy))} {'needs' if len(needy) == 1 else 'need'} "
                    "a context and none would be built: "
                    "pass context=lambda request: ... (the deps, from the MCP request; "
                    "toolreg serve: --context JSON)"
                )
        self.threads = ThreadSlots(max_threads)
        self.toolset = toolset
        self.catalog = Catalog(toolset)
        self.context = context
        self.restricted = restricted
        self.cache = cache
        self.tasks = task_store(tasks, self.run_job)
        self._pinned: dict[tuple[str, str], Toolset] = {}  # a version asked for: its view

    def list_result(self, caller: Caller = UNRESTRICTED) -> dict[str, Any]:
        """A `ListToolsResult` (wire form): the tools `caller` may see."""
        return {"tools": self.catalog.entries(caller.permits)}

    def tool_for(
        self, name: str, caller: Caller = UNRESTRICTED, version: str | None = None
    ) -> Tool | None:
        """The tool `name` (with `version`: that version of it, see `requested_version`;
        a tool without versions is every version, as FastMCP has it), if `caller`'s scopes
        allow it (else None, as for no tool)."""
        tool = self.toolset.get(name)
        if tool is not None and version is not None and tool.version is not None:
            found = versions_of(self.toolset, name)
            tool = next((t for t in found if same_version_text(t, version)), None)
        return tool if tool is not None and caller.permits(tool.scopes) else None

    def dispatcher_for(self, tool: Tool) -> Dispatcher:
        """The dispatcher that runs `tool`: the toolset's for the tool its name has there,
        a view pinned to its version for another version of it."""
        if tool.version is None or self.toolset.get(tool.name) is tool:
            return self.toolset.dispatcher
        key = (tool.name, tool.version)
        view = self._pinned.get(key)
        if view is None or view.get(tool.name) is not tool:
            view = self._pinned[key] = pinned(self.toolset, {tool.name: tool.version})
        return view.dispatcher

    def unknown_version(self, name: str, version: str, caller: Caller = UNRESTRICTED) -> MCPError:
        """The protocol error for a version of a tool that the toolset does not hold (or
        that `caller` may not see)."""
        held = [t.version for t in versions_of(self.toolset, name) if caller.permits(t.scopes)]
        shown = ", ".join(v for v in held if v is not None) or "none"
        asked = version if version.isprintable() and len(version) <= 64 else "?"
        return MCPError(
            code=types.INVALID_PARAMS,
            message=f"Tool '{name}' has no version '{asked}' (its versions: {shown}).",
        )

    def caller_of(self, ctx: ServerRequestContext[Any]) -> Caller:
        """Who sent an SDK request: what toolreg's HTTP gate found, the SDK's authenticated
        user, the client's address (HTTP without auth), or the local user (stdio)."""
        scope = getattr(ctx.request, "scope", None)
        if isinstance(scope, Mapping):
            known = scope.get(CALLER_KEY)
            if isinstance(known, Caller):
                return known
            token = getattr(scope.get("user"), "access_token", None)
            if token is not None:
                return token_caller(token)
            return address_caller(scope.get("client"))
        return Caller("local") if self.restricted else UNRESTRICTED

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.toolset.get(name)
        return None if tool is None else tool.parameters

    async def call(
        self,
        tool: Tool,
        arguments: dict[str, Any] | None,
        request: Callable[[], McpRequest],
        *,
        call_id: str | None,
        reporter: Reporter | None = None,
        confirm: ConfirmCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        caller: Caller = UNRESTRICTED,
    ) -> ToolResult:
        """Dispatch one call of a registered tool; never raises for the call's failures (a
        tool that needs a context and gets none raises `MissingContextError`: the server's
        mistake, which the SDK answers as an internal error). With a `cache`, a read-only
        or idempotent tool's result may come from it (same tool, arguments and caller), but
        only after `context=` has run for this call: the factory is where an application
        refuses a caller, and a refusal takes effect at once, cached results or not."""
        deps: Any = None
        if self.context is not None:
            try:
                deps = await make_context(self.context, request(), tool.name)
            except ToolDeniedError as err:
                return ToolResult(
                    tool.name, call_id, False, err.message, error=err, outcome="not_started"
                )
        cache = self.cache
        key = None
        if cache is not None and cache.applies(tool):
            key = cache.key(tool, arguments, caller.identity)
            cached = None if key is None else cache.get(key, tool, call_id)
            if cached is not None:
                return cached
        result = await self._call(tool, arguments, deps, call_id, reporter, confirm, meta)
        if key is not None and cache is not None:
            cache.put(key, tool, result)
        return result

    async def _call(
        self,
        tool: Tool,
        arguments: dict[str, Any] | None,
        deps: Any,
        call_id: str | None,
        reporter: Reporter | None,
        confirm: ConfirmCallback | None,
        meta: Mapping[str, Any] | None,
    ) -> ToolResult:
        context = _tool_context(tool, deps, reporter)
        key = None if meta is None else received_key(meta.get(META_KEY))  # the caller's
        with extracted(meta):  # the caller's trace, when it sent one and toolreg is traced
            dispatcher = self.dispatcher_for(tool)
            if tool.is_async:  # cancelled with its caller (e.g. a client gone)
                return await dispatcher.adispatch_tool(
                    tool.name,
                    arguments,
                    context=context,
                    call_id=call_id,
                    confirm=confirm,
                    idempotency_key=key,
                )
            slot = _Slot(self.threads)
            if not await slot.take(tool.timeout):  # waiting counts against its time limit
                return self._no_thread(tool, call_id)
            watching = THREAD_WATCH.set(slot.thread)  # the dispatch task copies the context
            try:
                task = asyncio.ensure_future(
                    dispatcher.adispatch_tool(
                        tool.name,
                        arguments,
                        context=context,
                        call_id=call_id,
                        confirm=_unheld(confirm, slot),
                        idempotency_key=key,
                    )
                )
            except BaseException:
                slot.give_back()
                raise
            finally:
                THREAD_WATCH.reset(watching)
            task.add_done_callback(slot.dispatched)
            task.add_done_callback(_retrieve)
            # A sync tool's thread runs on if its caller goes: it keeps its slot till then.
            return await asyncio.shield(task)

    def _no_thread(self, tool: Tool, call_id: str | None) -> ToolResult:
        """The answer to a sync call that found no free thread within its time limit."""
        limit = tool.timeout or 0.0
        error = ToolTimeoutError(
            f"Tool '{tool.name}' did not start within {limit:g} s: all {self.threads.size} "
            "threads for sync tools are busy. It did not run; try again later.",
            tool_name=tool.name,
            timeout=limit,
        )
        return ToolResult(
            tool.name, call_id, False, error.message, error=error, outcome="not_started"
        )

    async def start_task(
        self,
        tool: Tool,
        arguments: dict[str, Any] | None,
        about: McpRequest,
        *,
        owner: str,
        meta: Mapping[str, Any] | None,
        caller: Caller,
    ) -> dict[str, Any]:
        """Run one call as a task the client polls (see `tasks`); its `CreateTaskResult`.
        A confirmation is asked through the task's `inputRequests` when the client can
        answer a form, and waits for the answer at most the tasks' `ttl`."""
        asks = tool.needs_confirmation and can_elicit(meta)
        job = TaskJob(tool.name, arguments, about, meta, caller, asks)
        return await self.tasks.start(owner, job)

    async def run_job(self, task: TaskHandle, job: TaskJob) -> dict[str, Any]:
        """Run a task's call (in whichever worker holds it): its `CallToolResult`. A run
        after the first (its worker was lost) happens only for a tool that allows it
        (`on_worker_lost`); it has the same idempotency key as the first."""
        tool = self.tool_for(job.tool, job.caller, requested_version(job.meta))
        if tool is None:  # a worker serving other tools, or a tool since removed
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Tool '{job.tool}' is not served by the worker that took the task.",
            )
        if task.attempt > 1 and lost_policy(tool) == "fail":
            raise MCPError(code=INTERRUPTED, message=LOST_MESSAGE)
        meta = keyed(job.meta, task_key(task.id, tool.name, job.arguments))
        reporter = Reporter(task.note)  # progress: the task's statusMessage
        ttl = self.tasks.options.ttl
        try:
            result = await self.call(
                tool,
                job.arguments,
                lambda: job.request,
                call_id=task.id,
                reporter=reporter,
                confirm=_asked_in(task, ttl) if job.asks else None,
                meta=meta,
                caller=job.caller,
            )
        finally:
            await reporter.close()
        return self.result(tool, result)

    def result(self, tool: Tool, result: ToolResult) -> dict[str, Any]:
        """The `CallToolResult` (wire form) of a dispatched call."""
        return call_result(result, self.catalog.output_schema(tool) is not None)

    async def unknown(self, name: str, caller: Caller = UNRESTRICTED) -> MCPError:
        """The protocol error for a tool name the toolset does not hold, or that `caller`
        may not see (the same words: only the tools it may see are named)."""
        visible = None
        if caller.scopes is not None:
            visible = [t.name for t in self.toolset.tools() if caller.permits(t.scopes)]
        if visible is not None and name in visible:  # never: a visible tool is not unknown
            visible.remove(name)
        answer = await self.toolset.dispatcher.adispatch_tool(name, {}, allowed=visible)
        return MCPError(code=types.INVALID_PARAMS, message=answer.content)


def task_store(options: TaskOptions | None, runner: JobRunner) -> TaskBackend:
    """The backend `options` name: in this process, or shared (`options.backend`)."""
    if options is not None and not isinstance(options, TaskOptions):
        raise UsageError("tasks= takes TaskOptions(max_running=32, ttl=600), or None")
    options = options or TaskOptions()
    if options.backend is None:
        return TaskStore(options, runner)
    from .shared_tasks import SharedTaskStore  # needs pydocket: the `tasks` extra

    return SharedTaskStore(options, runner)


def _unheld(confirm: ConfirmCallback | None, slot: _Slot) -> ConfirmCallback | None:
    """`confirm`, giving the call's slot back while the person behind the client answers."""
    if confirm is None:
        return None

    async def ask(tool: Tool, arguments: dict[str, Any]) -> bool:
        slot.give_back()
        try:
            answer = confirm(tool, arguments)
            if inspect.isawaitable(answer):
                answer = await answer
        finally:
            await slot.take()
        return answer is True

    return ask


def _asked_in(task: TaskHandle, timeout: float) -> ConfirmCallback:
    """`confirm=` for a call run as a task: the question goes in the task's
    `inputRequests`; only an explicit yes, sent with `tasks/update`, approves."""

    async def ask(tool: Tool, arguments: dict[str, Any]) -> bool:
        params = {"mode": "form", "message": question(tool, arguments)}
        request = {
            "method": "elicitation/create",
            "params": {**params, "requestedSchema": CONFIRM_SCHEMA},
        }
        answer = await task.ask(request, timeout)
        try:
            return approved(types.ElicitResult.model_validate(answer))
        except ValidationError:  # None (no answer in time) or not an ElicitResult
            return False

    return ask


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Read the outcome of a call nobody awaits any more (its caller was cancelled)."""
    if not task.cancelled():
        task.exception()


def _tool_context(tool: Tool, deps: Any, reporter: Reporter | None) -> Any:
    """What dispatch gets as `context=`: the deps, in a `ToolContext` that reports to the
    client when there is a reporter (a parameter that takes the raw context gets the deps)."""
    if reporter is None or isinstance(deps, ToolContext):
        return deps
    if any(kind == "raw" for _, kind in tool.plan.context):
        return deps
    return ToolContext(deps, report_progress=reporter.progress, log=reporter.log)


def served(toolset: object) -> Toolset:
    """`toolset` if it is one (a `ToolRegistry`, a `Mount`, a view), else a `UsageError`."""
    if isinstance(toolset, Toolset):
        return toolset
    raise UsageError(
        f"the tools to serve must be a Toolset (a ToolRegistry, a Mount, or a view such as "
        f"combined(registry, prefixed(Mount(url), 'remote_'))), not {type(toolset).__name__}"
    )


def build_server(
    toolset: Toolset,
    *,
    name: str = "toolreg",
    context: ContextFactory | None = None,
    instructions: str | None = None,
    max_threads: int = DEFAULT_MAX_THREADS,
    auth: Any = None,
    tasks: TaskOptions | None = None,
) -> Server[Any]:
    """The toolset (a `ToolRegistry`, a `Mount`, a view) as the `mcp` SDK's low-level
    `Server` (run it on any SDK transport).

    `context=` builds each call's `ToolContext.deps` from the `McpRequest`; `max_threads`
    bounds the sync tool calls run at once (more wait for a free slot). `auth=` (what
    `asgi_app` takes) checks per-tool scopes against the SDK's authenticated user: run the
    server under the SDK's HTTP app with `token_verifier=` and `auth=` from
    `resource_server(auth).sdk_settings()`. Without `auth=`, a stdio client (the person
    who started the server) sees every tool. `tasks=` bounds the tools registered `task=`
    run as MCP tasks (`TaskOptions`).

    `name` is the server's name clients see; `instructions` the text sent at
    initialization, about how to use its tools.
    """
    if auth is not None:
        from .auth import resource_server

        resource_server(auth)  # checked now, not at the first request
    service = ToolService(
        toolset, context, max_threads=max_threads, restricted=auth is not None, tasks=tasks
    )
    return sdk_server(service, name=name, instructions=instructions)


def sdk_server(service: ToolService, *, name: str, instructions: str | None) -> Server[Any]:
    """The SDK `Server` whose handlers answer from `service`."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult.model_validate(service.list_result(service.caller_of(ctx)))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        caller = service.caller_of(ctx)
        version = requested_version(_meta_of(ctx))
        tool = service.tool_for(params.name, caller, version)
        if tool is None:
            if version is not None and service.tool_for(params.name, caller) is not None:
                raise service.unknown_version(params.name, version, caller)
            raise await service.unknown(params.name, caller)
        if tool.task is not None:
            meta = _meta_of(ctx)
            if declares_tasks(meta, ctx.protocol_version):
                about = _request_of(ctx, tool.name, caller)
                owner = _owner(ctx, caller)
                return await service.start_task(
                    tool, params.arguments, about, owner=owner, meta=meta, caller=caller
                )
            if tool.task == "required":
                raise needs_tasks(f"Tool '{tool.name}' runs only as a task: it")
        confirmation = Confirmation(ctx, params) if tool.needs_confirmation else None
        reporter = Reporter(_sender(ctx, tool.name))
        try:
            result = await service.call(
                tool,
                params.arguments,
                lambda: _request_of(ctx, tool.name, caller),
                call_id=None if ctx.request_id is None else str(ctx.request_id),
                reporter=reporter,
                confirm=None if confirmation is None else confirmation.callback(),
                meta=_meta_of(ctx),
                caller=caller,
            )
        finally:
            await reporter.close()
        if confirmation is not None and confirmation.pending is not None:
            return confirmation.pending
        return types.CallToolResult.model_validate(service.result(tool, result))

    def owner_of(ctx: ServerRequestContext[Any], params: TaskParams) -> str:
        """Who asks about the task a `tasks/*` request names (checked by the store)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found")
        if not declares_tasks(_meta_of(ctx), ctx.protocol_version):
            raise needs_tasks(f"'{ctx.method}'")
        headers = getattr(ctx.request, "headers", None)
        named = None if headers is None else headers.get(MCP_NAME_HEADER)
        if named is not None and decode_header_value(named) != params.task_id:
            raise MCPError(
                code=HEADER_MISMATCH, message="The Mcp-Name header is not the request's taskId."
            )
        return _owner(ctx, service.caller_of(ctx))

    async def get_task(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        return await service.tasks.get(owner_of(ctx, params), params.task_id)

    async def update_task(ctx: ServerRequestContext[Any], params: UpdateParams) -> dict[str, Any]:
        await service.tasks.update(owner_of(ctx, params), params.task_id, params.input_responses)
        return {}

    async def cancel_task(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        await service.tasks.cancel(owner_of(ctx, params), params.task_id)
        return {}

    async def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> Any:
        """`logging/setLevel` (the 2025 protocols; 2026-07-28 asks per request instead):
        the session's lines from then on are at that level or above."""
        levels = ctx.lifespan_context
        if isinstance(levels, LogLevels):
            levels.set(_session_of(ctx), params.level)
        return types.EmptyResult()

    @contextlib.asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[LogLevels]:
        async with service.tasks.serving():  # stopping: running tasks are cancelled
            yield LogLevels()  # per run: stdio's one connection, or every HTTP session

    server: Server[Any] = Server(
        name,
        instructions=instructions,
        lifespan=lifespan,
        on_list_tools=list_tools,
        get_tool_input_schema=service.input_schema,
    )
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    # declares the `logging` capability: tools send their `ctx.log` lines to the client
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_request_handler("tasks/get", TaskParams, get_task)
    server.add_request_handler("tasks/update", UpdateParams, update_task)
    server.add_request_handler("tasks/cancel", TaskParams, cancel_task)
    server.extensions[EXTENSION] = {}
    server.middleware.insert(0, _client_meta)  # before the SDK's OpenTelemetry middleware
    return server


async def _client_meta(ctx: ServerRequestContext[Any], call_next: Any) -> Any:
    """Every request's `_meta` as the server takes it from a client it does not control
    (`telemetry.sanitize_meta`): the SDK's own OpenTelemetry middleware would otherwise
    raise on `{"baggage": 5}`, continue a trace from a list or a line break, and take the
    client's baggage. The fast path (`http`) reads the trace context the same way."""
    meta = ctx.meta
    if isinstance(meta, Mapping):
        clean = sanitize_meta(meta)
        if clean is not meta:
            params = ctx.params
            if params is not None and isinstance(params.get("_meta"), Mapping):
                params = {**params, "_meta": clean}
            ctx = dataclasses.replace(ctx, meta=clean, params=params)  # type: ignore[arg-type]
    return await call_next(ctx)


def _session_of(ctx: ServerRequestContext[Any]) -> str | None:
    """The session a request belongs to, for its log level: "" for the one connection of
    a stdio run (or an in-process client), the streamable-HTTP session id, or None for a
    stateless HTTP request (no session: nothing is remembered between its requests)."""
    if ctx.request is None:
        return ""
    headers = getattr(ctx.request, "headers", None)
    session = None if headers is None else headers.get("mcp-session-id")
    return f"http:{session}" if session else None


def _sender(ctx: ServerRequestContext[Any], tool: str) -> Callable[[Note], Any]:
    levels = allowed_log_levels(ctx.protocol_version, ctx.meta)  # the 2026 per-request opt-in
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS and isinstance(
        ctx.lifespan_context, LogLevels
    ):
        levels = ctx.lifespan_context.allowed(_session_of(ctx)) or levels  # logging/setLevel

    async def send(note: Note) -> None:
        if note.kind == "progress":
            await ctx.session.report_progress(note.progress, note.total, note.message)
        elif note.level in levels:
            message = types.LoggingMessageNotification(
                params=types.LoggingMessageNotificationParams(
                    level=note.level, data=note.message, logger=tool
                )
            )
            await ctx.session.send_notification(message, related_request_id=ctx.request_id)

    return send


def _owner(ctx: ServerRequestContext[Any], caller: Caller) -> str:
    """Whose a task is: the caller, and its HTTP session when it has one."""
    headers = getattr(ctx.request, "headers", None)
    session = None if headers is None else headers.get("mcp-session-id")
    return caller.identity if not session else f"{caller.identity} session:{session}"


def _meta_of(ctx: ServerRequestContext[Any]) -> Mapping[str, Any] | None:
    """The request's `_meta` as plain data (it carries the caller's trace context)."""
    meta = ctx.meta
    dump = getattr(meta, "model_dump", None)
    data = dump(by_alias=True) if callable(dump) else meta
    return data if isinstance(data, Mapping) else None


def _request_of(ctx: ServerRequestContext[Any], tool: str, caller: Caller) -> McpRequest:
    http = ctx.request
    headers = getattr(http, "headers", None)
    header_map = {} if headers is None else {k.lower(): v for k, v in headers.items()}
    client_params = ctx.session.client_params
    client = None
    if client_params is not None:
        client = client_params.client_info.model_dump(mode="json", exclude_none=True)
    return McpRequest(
        transport="stdio" if http is None else "http",
        tool=tool,
        protocol_version=ctx.protocol_version,
        headers=header_map,
        session_id=header_map.get("mcp-session-id"),
        client=client,
        token=caller.token,
    )


class Confirmation:
    """Asks the person behind the client to approve one call, the way the connection allows.

    `callback()` is the `confirm=` for dispatch: None when the client cannot be asked (the
    call is then refused exactly as a local dispatch without `confirm=` refuses it). On the
    2026-07-28 protocol the first round answers `pending` (an `InputRequiredResult`) and
    the client's retry carries the answer.
    """

    __slots__ = ("_ctx", "_params", "pending")

    def __init__(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
        self._ctx = ctx
        self._params = params
        self.pending: types.InputRequiredResult | None = None

    def callback(self) -> ConfirmCallback | None:
        session = self._ctx.session
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return None
        if session.can_send_request:
            return self._ask_now
        if self._ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._ask_by_retry
        return None  # stateless HTTP on the 2025 protocol: no way to ask

    async def _ask_now(self, tool: Tool, arguments: dict[str, Any]) -> bool:
        answer = await self._ctx.session.elicit_form(
            question(tool, arguments), CONFIRM_SCHEMA, related_request_id=self._ctx.request_id
        )
        return approved(answer)

    def _ask_by_retry(self, tool: Tool, arguments: dict[str, Any]) -> bool:
        answer = (self._params.input_responses or {}).get(CONFIRM_KEY)
        if isinstance(answer, types.ElicitResult):
            return approved(answer)
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=question(tool, arguments), requested_schema=CONFIRM_SCHEMA
            )
        )
        self.pending = types.InputRequiredResult(input_requests={CONFIRM_KEY: request})
        return False


def question(tool: Tool, arguments: dict[str, Any]) -> str:
    """The confirmation question: the tool and the exact arguments it would run with."""
    shown = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(shown) > _MAX_SHOWN:
        shown = shown[:_MAX_SHOWN] + "…"
    return f"{_ASK}{tool.name}' with {shown}?"


_ASK = "Run the tool '"


def asked_about(message: str, requested_schema: Any) -> str | None:
    """The tool a toolreg confirmation question names (None for any other question)."""
    if requested_schema != CONFIRM_SCHEMA or not message.startswith(_ASK):
        return None
    name, quote, _ = message[len(_ASK) :].partition("' with ")
    return name if quote else None


def approved(answer: types.ElicitResult) -> bool:
    """Only an explicit yes approves: `accept` with `confirm: true`."""
    return answer.action == "accept" and (answer.content or {}).get("confirm") is True
