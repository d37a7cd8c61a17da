"""Tools that outlive a request: MCP's tasks extension (SEP-2663, final), both ways.

The wire, as toolreg speaks it (extension `io.modelcontextprotocol/tasks`, defined only on
the 2026-07-28 protocol; on the 2025 ones nothing here applies and calls run inline):

- **Negotiation.** The server lists the extension in `server/discover`
  (`capabilities.extensions["io.modelcontextprotocol/tasks"] = {}`). A client declares it
  per request, in `params._meta["io.modelcontextprotocol/clientCapabilities"].extensions`.
  The server alone decides, call by call, whether to answer with a task; it must never
  answer a task to a request that did not declare the extension. A call that can only run
  as a task, from a client that did not declare it, is JSON-RPC error -32021 (missing
  required client capability) with `data.requiredCapabilities.extensions` naming it.
- **Creation.** `tools/call` is answered with a `CreateTaskResult`: the flat task object
  with `resultType: "task"` — `taskId` (unguessable: it is the handle), `status`,
  `statusMessage?`, `createdAt`, `lastUpdatedAt` (ISO 8601), `ttlMs` (from creation;
  null: unlimited; may change), `pollIntervalMs?` (the client should wait that long
  between polls). The task exists (a `tasks/get` finds it) before the answer is sent.
- **Statuses.** `working`, `input_required` (with `inputRequests`: server-to-client
  requests such as `elicitation/create`, keyed, each key used once per task), and the
  terminal `completed` (`result`: the `CallToolResult`, `isError: true` included),
  `failed` (`error`: a JSON-RPC error, only for protocol-level failures) and `cancelled`.
- **`tasks/get {taskId}`** answers the task as it is now, with its payload, and
  `resultType: "complete"`. An unknown (or expired, or someone else's) id is -32602.
  There is no `tasks/result` (-32601) and no `tasks/list` (nothing can leak other
  callers' tasks).
- **`tasks/update {taskId, inputResponses}`** answers outstanding `inputRequests` (keys
  not outstanding are ignored); **`tasks/cancel {taskId}`** asks the task to stop. Both
  are acknowledged with an empty result (`resultType: "complete"`) and take effect
  eventually: a task may still complete after a cancel. `notifications/cancelled` is not
  used for tasks. All three need the extension declared on the request (else -32021).
- **Progress.** `notifications/progress` and `notifications/message` do not exist for tasks;
  a task's progress is its `statusMessage` (toolreg writes `ToolContext.report_progress`
  there). `notifications/tasks` (pushed status, after `subscriptions/listen` with
  `taskIds`) is optional; toolreg does not send it: clients poll.
- **HTTP.** `tasks/*` requests carry `Mcp-Name: <taskId>` (so a load balancer can route
  them to the process that holds the task; a mismatch with the body is refused).
- **Shutdown.** When the server stops (the end of a stdio connection, of an HTTP app's
  lifespan, or of a host app's `lifespan=mcp_app.lifespan`), the tasks still running are
  cancelled and end as `cancelled` ("Cancelled: the server is stopping.") before it is done.
- **Security.** Every `tasks/*` request is checked against the identity that created the
  task (the verified token's subject, else the client's address; and the HTTP session,
  when there is one): another caller's id is as unknown as a made-up one.

The installed `mcp` SDK (2.3) has no types for this extension (its `Task` types are the
2025-11-25 experimental ones), but it lets a server add request methods and advertise
extensions, passes a result with an unknown `resultType` through unsieved, and lets a client
extension claim `resultType: "task"` results (`ResultClaim`). This module builds on those.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field, ValidationError, field_validator

from ..errors import UsageError
from ..idempotency import META_KEY, idempotency_key, received_key
from ..stores.redis import redacted
from ..tool import Tool
from .auth import Caller
from .context import McpRequest, Note

EXTENSION = "io.modelcontextprotocol/tasks"
"""The extension's identifier."""

__all__ = [
    "EXTENSION",
    "Task",
    "TaskBackend",
    "TaskHandle",
    "TaskJob",
    "TaskOptions",
    "TaskStore",
    "declares_tasks",
    "needs_tasks",
]

_log = logging.getLogger("toolreg.mcp")

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL = frozenset({"completed", "failed", "cancelled"})
BUSY = -32000
"""The JSON-RPC error of a `tools/call` refused because `max_running` tasks are running, or
`max_per_caller` of its caller."""
EXPIRED = REQUEST_TIMEOUT
"""The JSON-RPC error (-32001) of a task stopped at `max_lifetime`."""
_MAX_ID = 128  # characters of a task id worth looking up (toolreg's are 43)
_NOT_FOUND = "Task not found."
_CLOSE_WAIT = 5.0  # seconds a stopping server waits for its cancelled tasks to end


@dataclass(frozen=True, slots=True)
class TaskOptions:
    """How a server runs tasks (`tasks=` of `asgi_app`, `build_server`, `serve`).

    At most `max_running` tasks run (or wait for input) at once, and at most
    `max_per_caller` of one caller (its token's subject, else its address; default: a
    quarter of `max_running`, at least 1), so that one caller cannot take every slot; a
    `tools/call` over either bound is refused (JSON-RPC -32000) and the tool does not run.
    A task still running `max_lifetime` seconds after it started (None: no limit) is
    stopped and ends `failed` (error -32001): an async tool is cancelled, a sync tool's
    thread runs on (Python cannot stop one) and its result is discarded; the message says
    the tool was interrupted while running and may still be. A finished task's result is
    kept `ttl` seconds after it finished, then forgotten; at most `max_kept` tasks are
    held (the oldest finished one goes first). `poll_interval` is the wait between polls
    the server suggests (`pollIntervalMs`).

    Tasks live in the serving process unless `backend=` names a shared one: a Redis URL
    (`redis://`, `rediss://`, `unix://`; the `tasks` extra), where every worker and
    machine serving the same `queue` keeps and runs them (see `shared_tasks`): a task
    created through one is read, answered and cancelled through any other, runs in
    whichever has a free slot, and outlives a restart of every one; the bounds above
    hold across all of them (`max_kept` bounds the in-process store only: in Redis a
    finished task expires `ttl` after it ended). A worker that dies (or stops) while its
    task runs stops renewing its claim on it; `reclaim_after` seconds later another
    worker takes the task over and runs it again, or ends it `failed`, as the tool's
    `on_worker_lost=` says.
    """

    max_running: int = 32
    max_kept: int = 1024
    ttl: float = 600.0
    poll_interval: float = 0.5
    max_per_caller: int | None = None
    max_lifetime: float | None = 3600.0
    backend: str | None = field(default=None, repr=False)
    queue: str = "toolreg"
    reclaim_after: float = 30.0

    def __post_init__(self) -> None:
        for key in ("max_running", "max_kept"):
            _whole(key, getattr(self, key))
        if self.max_kept < self.max_running:
            raise UsageError(
                f"TaskOptions(max_kept={self.max_kept}) must be at least max_running="
                f"{self.max_running} (every running task is kept)"
            )
        if self.max_per_caller is None:
            object.__setattr__(self, "max_per_caller", max(1, self.max_running // 4))
        else:
            _whole("max_per_caller", self.max_per_caller)
            if self.max_per_caller > self.max_running:
                raise UsageError(
                    f"TaskOptions(max_per_caller={self.max_per_caller}) must be at most "
                    f"max_running={self.max_running} (a caller's share of the running tasks)"
                )
        _check_backend(self.backend, self.queue)
        for key in ("ttl", "poll_interval", "max_lifetime", "reclaim_after"):
            value = getattr(self, key)
            if value is None and key == "max_lifetime":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(f"TaskOptions({key}={value!r}): must be a number of seconds")
            if not math.isfinite(value) or value <= 0:
                raise UsageError(f"TaskOptions({key}={value!r}): must be a positive number")


_SCHEMES = ("redis", "rediss", "unix")
_QUEUE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _check_backend(backend: object, queue: object) -> None:
    if not isinstance(queue, str) or not _QUEUE.fullmatch(queue):
        raise UsageError(
            f"TaskOptions(queue={queue!r}): 1 to 64 letters, digits, '_', '.' or '-' (the "
            "name the workers serving the same tools share), e.g. queue='billing'"
        )
    if backend is None:
        return
    scheme = backend.partition("://")[0].lower() if isinstance(backend, str) else ""
    if scheme not in _SCHEMES or "://" not in str(backend):
        shown = redacted(backend) if isinstance(backend, str) else repr(backend)
        raise UsageError(
            f"TaskOptions(backend={shown}): a shared task backend is a Redis URL, starting "
            "with redis://, rediss:// or unix://, e.g. backend='redis://127.0.0.1:6379/0' "
            "(None: tasks live in the serving process)"
        )


def _whole(key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"TaskOptions({key}={value!r}): must be a whole number >= 1")


def declares_tasks(meta: Mapping[str, Any] | None, protocol_version: str | None) -> bool:
    """Whether a request declared the tasks extension (only the 2026-07-28 protocol has it)."""
    if protocol_version not in MODERN_PROTOCOL_VERSIONS or not isinstance(meta, Mapping):
        return False
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and isinstance(extensions.get(EXTENSION), Mapping)


def can_elicit(meta: Mapping[str, Any] | None) -> bool:
    """Whether a modern request's client capabilities include form elicitation."""
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    return isinstance(capabilities, Mapping) and isinstance(
        capabilities.get("elicitation"), Mapping
    )


def needs_tasks(what: str) -> MCPError:
    """-32021: `what` needs the tasks extension, which the request did not declare."""
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"{what} needs the tasks extension ({EXTENSION}): declare it in the request's "
        "client capabilities.",
        data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


class TaskParams(types.RequestParams):
    """The params of `tasks/get` and `tasks/cancel`."""

    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """The params of `tasks/update`."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


def _bytes(identity: str) -> bytes:
    """An owner as bytes for a constant-time comparison: `compare_digest` takes only ASCII
    `str`, and a token's subject may be any text (`zoë`, `用户`, even a lone surrogate that
    JSON lets through)."""
    return identity.encode("utf-8", "surrogatepass")


def timestamp() -> str:
    """Now, as a task's `createdAt` / `lastUpdatedAt` (ISO 8601, UTC, milliseconds)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


INTERRUPTED = types.INTERNAL_ERROR
"""The JSON-RPC error (-32603) of a task whose worker was lost while its tool ran, for a
tool registered `on_worker_lost="fail"`."""
LOST_MESSAGE = (
    "The worker running this task stopped (it crashed or was shut down) while the tool "
    "ran: the tool was interrupted while running and may have had effects. It was not "
    "run again (the tool is registered on_worker_lost='fail')."
)


def task_key(task_id: str, tool: str, arguments: Mapping[str, Any] | None) -> str:
    """The idempotency key of a task's call when its caller sent none:
    `idempotency_key("mcp-task", task_id, task_id, tool, arguments)` (the task stands for
    the turn and the call). The same for every run of the task, in any worker."""
    return idempotency_key("mcp-task", task_id, task_id, tool, arguments)


def keyed(meta: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    """`meta` with `key` as the call's idempotency key (`META_KEY`), unless it carries a
    well-formed one of the caller's (`received_key`)."""
    out = dict(meta or {})
    if received_key(out.get(META_KEY)) is None:
        out[META_KEY] = key
    return out


def lost_policy(tool: Tool) -> Literal["rerun", "fail"]:
    """What happens to `tool`'s task when its worker is lost (`Tool.on_worker_lost`;
    None: a read-only or idempotent tool runs again, any other fails)."""
    if tool.on_worker_lost is not None:
        return tool.on_worker_lost
    return "rerun" if tool.read_only or tool.idempotent else "fail"


_SECRET_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


@dataclass(frozen=True, slots=True)
class TaskJob:
    """What one task runs: the tool call and the request it came in, as data a shared
    backend keeps with the task (`stored`) and any worker runs again (`restored`).

    Kept without secrets: no `Authorization`, `Cookie` or `Proxy-Authorization` header,
    and the caller's access token without its raw text (`token=""`; its subject, scopes,
    claims and client id are kept), so a `context=` factory that runs for a task on a
    shared backend reads the request as stored.
    """

    tool: str
    arguments: dict[str, Any] | None
    request: McpRequest
    meta: Mapping[str, Any] | None
    caller: Caller
    asks: bool = False

    def stored(self) -> dict[str, Any]:
        """The job as JSON-able data (see the class's text for what is left out)."""
        request = self.request
        token = self.caller.token
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "request": {
                "transport": request.transport,
                "protocol_version": request.protocol_version,
                "headers": {
                    k: v for k, v in request.headers.items() if k.lower() not in _SECRET_HEADERS
                },
                "session_id": request.session_id,
                "client": None if request.client is None else dict(request.client),
            },
            "meta": None if self.meta is None else dict(self.meta),
            "caller": self.caller.identity,
            "scopes": None if self.caller.scopes is None else sorted(self.caller.scopes),
            "token": None if token is None else token.model_dump(mode="json", exclude={"token"}),
            "asks": self.asks,
        }

    @classmethod
    def restored(cls, data: Mapping[str, Any]) -> TaskJob:
        """A job from `stored` data (a `KeyError`, `TypeError` or `ValueError` when the
        data is not one)."""
        from mcp.server.auth.provider import AccessToken

        request = data["request"]
        token = None
        if data.get("token") is not None:
            token = AccessToken.model_validate({**data["token"], "token": ""})
        scopes = data.get("scopes")
        caller = Caller(str(data["caller"]), None if scopes is None else frozenset(scopes), token)
        arguments = data.get("arguments")
        return cls(
            tool=str(data["tool"]),
            arguments=None if arguments is None else dict(arguments),
            request=McpRequest(
                transport=request["transport"],
                tool=str(data["tool"]),
                protocol_version=request["protocol_version"],
                headers=dict(request.get("headers") or {}),
                session_id=request.get("session_id"),
                client=request.get("client"),
                token=token,
            ),
            meta=data.get("meta"),
            caller=caller,
            asks=bool(data.get("asks")),
        )


class TaskHandle(Protocol):
    """What a running task's call sees of its task: `id`, `attempt` (1, or more when a
    shared backend runs it again after its worker was lost), `note` (progress: the task's
    status message) and `ask` (a question to the client through `inputRequests`)."""

    @property
    def id(self) -> str: ...

    @property
    def attempt(self) -> int: ...

    async def note(self, note: Note) -> None: ...

    async def ask(self, request: dict[str, Any], timeout: float) -> Any: ...


JobRunner = Callable[[TaskHandle, TaskJob], Awaitable[dict[str, Any]]]
"""Runs a task's job: the `CallToolResult` (wire form), or raises `MCPError` (the task
ends `failed` with that error)."""


class TaskBackend(Protocol):
    """Where a server's tasks live and run: `TaskStore` (this process) or
    `shared_tasks.SharedTaskStore` (Redis, shared by every worker). Each method checks the
    task's owner: another caller's task is as unknown as a made-up id (-32602)."""

    options: TaskOptions

    async def start(self, owner: str, job: TaskJob) -> dict[str, Any]:
        """Create a task of `owner` (counted in its caller's share) that runs `job`; its
        `CreateTaskResult`. -32000 over `max_running` or `max_per_caller`."""
        ...

    async def get(self, owner: str, task_id: str) -> dict[str, Any]:
        """`tasks/get`: the task as it is now."""
        ...

    async def update(self, owner: str, task_id: str, responses: Mapping[str, Any]) -> None:
        """`tasks/update`: answers for the task's outstanding input requests."""
        ...

    async def cancel(self, owner: str, task_id: str) -> None:
        """`tasks/cancel`: ask the task to stop."""
        ...

    def serving(self) -> AbstractAsyncContextManager[None]:
        """The server's lifetime (tasks run only while it lasts)."""
        ...


def not_found() -> MCPError:
    """-32602 for a task id that is unknown, expired, or another caller's."""
    return MCPError(code=types.INVALID_PARAMS, message=_NOT_FOUND)


def busy(options: TaskOptions, per_caller: bool) -> MCPError:
    """-32000: `max_running` (or the caller's `max_per_caller`) tasks are running."""
    if per_caller:
        return MCPError(
            code=BUSY,
            message=f"Too many tasks of this caller running ({options.max_per_caller}); "
            "try again later.",
        )
    return MCPError(
        code=BUSY, message=f"Too many tasks running ({options.max_running}); try again later."
    )


def lifetime_message(lifetime: float) -> str:
    """The message of a task stopped at `max_lifetime`."""
    return (
        f"The task ran past its lifetime ({lifetime:g} s) and was stopped: the tool "
        "was interrupted while running, may have had effects and may still be running."
    )


def progress_text(note: Note) -> str:
    """A progress line as a task's status message: `"1/5: warming up"`."""
    shown = f"{note.progress:g}" if note.total is None else f"{note.progress:g}/{note.total:g}"
    return shown if not note.message else f"{shown}: {note.message}"


def owned(owner: str, claimed: str) -> bool:
    """Whether `claimed` (a task's recorded owner) is `owner`, in constant time."""
    return secrets.compare_digest(_bytes(owner), _bytes(claimed))


class Task:
    """One task of the in-process store: who owns it, where it is, what it ended with."""

    __slots__ = (
        "_asked",
        "_questions",
        "attempt",
        "caller",
        "created",
        "error",
        "finished",
        "id",
        "job",
        "message",
        "owner",
        "result",
        "started",
        "status",
        "updated",
    )

    def __init__(self, owner: str, caller: str | None = None) -> None:
        self.id = secrets.token_urlsafe(32)
        self.owner = owner
        self.caller = owner if caller is None else caller  # whose share it counts in
        self.attempt = 1
        self.status: Status = "working"
        self.message: str | None = None
        self.created = self.updated = timestamp()
        self.started = time.monotonic()
        self.finished: float | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.job: asyncio.Task[None] | None = None
        self._questions: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]] = {}
        self._asked = 0

    def _touch(self) -> None:
        self.updated = timestamp()

    async def note(self, note: Note) -> None:
        """A `ToolContext.report_progress` line becomes the task's status message."""
        if note.kind != "progress" or self.status in TERMINAL:
            return  # log lines have nowhere to go in a task
        self.message = progress_text(note)
        self._touch()

    async def ask(self, request: dict[str, Any], timeout: float) -> Any:
        """Put a server-to-client request (`{"method", "params"}`) to the client through
        `inputRequests`, and wait at most `timeout` seconds for its `tasks/update` answer
        (None when none came)."""
        self._asked += 1
        key = f"input-{self._asked}"  # never reused within the task
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._questions[key] = (request, future)
        self.status = "input_required"
        self._touch()
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            del self._questions[key]
            if not self._questions and self.status == "input_required":
                self.status = "working"
                self._touch()

    def answer(self, responses: Mapping[str, Any]) -> None:
        """`tasks/update`: answers for outstanding requests; other keys are ignored."""
        for key, value in responses.items():
            asked = self._questions.get(key)
            if asked is not None and not asked[1].done():
                asked[1].set_result(value)

    def end(
        self,
        status: Status,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        self.status, self.result, self.error = status, result, error
        if message is not None:
            self.message = message
        self.finished = time.monotonic()
        self._touch()

    def wire(self, options: TaskOptions, result_type: str = "complete") -> dict[str, Any]:
        """The task as `tasks/get` answers it (`result_type="task"`: a `CreateTaskResult`)."""
        ttl = None
        if self.finished is not None:  # kept `ttl` seconds after it ended; unlimited before
            ttl = round((self.finished - self.started + options.ttl) * 1000)
        data: dict[str, Any] = {
            "resultType": result_type,
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": ttl,
            "pollIntervalMs": round(options.poll_interval * 1000),
        }
        if self.message is not None:
            data["statusMessage"] = self.message
        if self.status == "completed":
            data["result"] = self.result
        elif self.status == "failed":
            data["error"] = self.error
        elif self.status == "input_required":
            data["inputRequests"] = {k: q for k, (q, f) in self._questions.items() if not f.done()}
        return data


class TaskStore:
    """The tasks of one server, in its process: created by `start`, looked up by id and
    owner, forgotten `ttl` after they end. Every method runs on the server's event loop."""

    def __init__(self, options: TaskOptions, runner: JobRunner) -> None:
        self.options = options
        self._runner = runner
        self._tasks: dict[str, Task] = {}
        self._serving = 0
        self._stopping = False
        self.running = 0
        self._running_of: dict[str, int] = {}  # running tasks by caller

    async def start(self, owner: str, job: TaskJob) -> dict[str, Any]:
        self._forget_expired()
        options = self.options
        if self.running >= options.max_running:
            raise busy(options, per_caller=False)
        share = job.caller.identity
        if self._running_of.get(share, 0) >= (options.max_per_caller or options.max_running):
            raise busy(options, per_caller=True)
        if len(self._tasks) >= self.options.max_kept:
            oldest = min(
                (t for t in self._tasks.values() if t.finished is not None),
                key=lambda t: t.finished or 0.0,
            )
            del self._tasks[oldest.id]
        task = Task(owner, share)
        self._tasks[task.id] = task
        self.running += 1
        self._running_of[share] = self._running_of.get(share, 0) + 1
        task.job = asyncio.ensure_future(self._run(task, job))
        return task.wire(self.options, "task")

    async def _run(self, task: Task, job: TaskJob) -> None:
        lifetime = self.options.max_lifetime
        try:
            result = await asyncio.wait_for(self._runner(task, job), lifetime)
        except asyncio.CancelledError:
            why = ": the server is stopping" if self._stopping else " by the client"
            task.end("cancelled", message=f"Cancelled{why}.")
        except asyncio.TimeoutError:  # wait_for's own: the runner turns a tool's time
            # limit into a result, so only the lifetime ends up here
            message = lifetime_message(lifetime or 0.0)
            task.end("failed", error={"code": EXPIRED, "message": message}, message=message)
        except MCPError as exc:
            error = exc.error.model_dump(mode="json", exclude_none=True)
            task.end("failed", error=error, message=exc.error.message)
        except Exception:
            _log.exception("a task of the MCP server failed")
            task.end("failed", error={"code": types.INTERNAL_ERROR, "message": "Internal error"})
        else:
            task.end("completed", result=result)
        finally:
            self.running -= 1
            left = self._running_of[task.caller] - 1
            if left:
                self._running_of[task.caller] = left
            else:
                del self._running_of[task.caller]

    def find(self, owner: str, task_id: str) -> Task:
        """The task `task_id` of `owner`; -32602 if there is none (unknown, expired, or
        another caller's: the same answer)."""
        self._forget_expired()
        task = self._tasks.get(task_id) if len(task_id) <= _MAX_ID else None
        if task is None or not owned(owner, task.owner):
            raise not_found()
        return task

    async def get(self, owner: str, task_id: str) -> dict[str, Any]:
        return self.find(owner, task_id).wire(self.options)

    async def update(self, owner: str, task_id: str, responses: Mapping[str, Any]) -> None:
        self.find(owner, task_id).answer(responses)

    async def cancel(self, owner: str, task_id: str) -> None:
        """Ask the task to stop: an async tool is cancelled; a sync tool's thread runs on
        and its result is discarded. A finished task stays as it ended."""
        task = self.find(owner, task_id)
        if task.job is not None and not task.job.done():
            task.job.cancel()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The server's lifetime: when the last of its runs ends (stdio's one connection,
        an HTTP app's lifespan), the tasks still running are cancelled (`aclose`)."""
        self._serving += 1
        try:
            yield
        finally:
            self._serving -= 1
            if self._serving == 0:
                await self.aclose()

    async def aclose(self) -> None:
        """Cancel every running task and wait (at most `_CLOSE_WAIT` seconds) until each has
        ended as `cancelled`: an async tool is cancelled, a sync tool's thread runs on and
        its result is discarded. Finished tasks are kept; new ones may start again."""
        jobs = [t.job for t in self._tasks.values() if t.job is not None and not t.job.done()]
        self._stopping = True
        try:
            for job in jobs:
                job.cancel()
            if jobs:
                await asyncio.wait(jobs, timeout=_CLOSE_WAIT)
        finally:
            self._stopping = False

    def _forget_expired(self) -> None:
        now, ttl = time.monotonic(), self.options.ttl
        expired = [
            k for k, t in self._tasks.items() if t.finished is not None and now - t.finished > ttl
        ]
        for key in expired:
            del self._tasks[key]


# -- the client half: a mounted server's tasks --------------------------------------------
#
# A `Mount`'s client declares the extension on every request of the 2026-07-28 protocol
# (the SDK's client extensions are fixed when the client is built, before it knows the
# server), so a server that offers tasks may answer any call with one; on the 2025
# protocols nothing is declared and calls run inline. The server alone decides which calls
# become tasks: on the 2026-07-28 protocol no tool listing says which tools may (FastMCP
# drops the 2025 `execution.taskSupport` there), so a tool's "mode" is what its server
# does with the call. A task is accepted only from a server that lists the extension in
# its capabilities; everything in it is the server's word: checked, bounded, never echoed.

_FIRST_POLL = 0.05  # seconds before the first poll; doubled up to the server's interval
_MAX_POLL = 30.0  # seconds between polls at most, whatever the server suggests
_DEFAULT_POLL = 1.0  # seconds between polls at most when the server suggests nothing
_MAX_REMOTE_ID = 256  # characters of a remote task id
_MAX_STATUS = 500  # characters of a remote status message passed on as progress
_MAX_INPUTS = 16  # input requests of one poll
_MAX_ANSWERS = 64  # input requests answered in one task
_CANCEL_WAIT = 5.0  # seconds a tasks/cancel may take


def _remote_id(value: str) -> str:
    if not 0 < len(value) <= _MAX_REMOTE_ID or not value.isprintable() or value != value.strip():
        raise ValueError(f"a task id is 1 to {_MAX_REMOTE_ID} printable characters")
    return value


class _RemoteTask(types.Result):
    """The task fields toolreg reads from a server (`CreateTaskResult`, `tasks/get`)."""

    task_id: str = Field(alias="taskId")
    status: Status
    status_message: str | None = Field(default=None, alias="statusMessage")
    poll_interval_ms: float | None = Field(default=None, alias="pollIntervalMs")

    @field_validator("task_id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _remote_id(value)

    @field_validator("poll_interval_ms")
    @classmethod
    def _interval(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("pollIntervalMs is not a finite number")
        return value


class CreatedTask(_RemoteTask):
    """A `tools/call` answered with a task (`resultType: "task"`)."""

    result_type: Literal["task"] = Field(alias="resultType")


class PolledTask(_RemoteTask):
    """A `tasks/get` answer: the task and, by status, its result, error or input requests."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


class _GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"  # the Mcp-Name header (SEP-2663)


class _CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class _UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class RemoteTaskError(Exception):
    """A mounted server's task went wrong in a way the model may read (`Mount` turns it
    into the call's failure): its words, to be passed on under the `errors=` policy, or
    toolreg's own (`remote=False`)."""

    def __init__(self, message: str, *, remote: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.remote = remote


@dataclass(slots=True)
class TaskCall:
    """One mounted call on its way, for the task it may become: where its progress goes
    (`progress`: the call's `ToolContext.report_progress`), how the mount answers a
    question (`answer`: an `elicitation/create`'s params -> `ElicitResult`), and where the
    `tasks/cancel` of an abandoned task runs (`spawn`, so that it outlives the call)."""

    progress: Callable[[float, float | None, str | None], None]
    answer: Callable[[Any], Awaitable[types.ElicitResult]]
    spawn: Callable[[Awaitable[None]], None]
    task_id: str | None = None
    abandoned: bool = False
    """The caller gave up before the server's answer came: a task it is, is cancelled."""
    _shown: str | None = None
    _count: int = 0

    def status(self, message: str | None) -> None:
        """A status message not seen before is the call's next progress line: counted
        (progress only grows), cut to `_MAX_STATUS` characters, unprintables replaced."""
        if not message or message == self._shown:
            return
        self._shown = message
        self._count += 1
        self.report(float(self._count), None, shown_text(message))

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        try:
            self.progress(progress, total, message)
        except Exception:  # the caller's reporter: its failure is not the call's
            _log.debug("a mounted call's progress could not be reported", exc_info=True)


def shown_text(text: str) -> str:
    """A remote status text as progress: printable, at most `_MAX_STATUS` characters."""
    text = "".join(c if c.isprintable() else " " for c in text[: _MAX_STATUS + 1])
    return text if len(text) <= _MAX_STATUS else text[:_MAX_STATUS] + "…"


CURRENT_CALL: ContextVar[TaskCall | None] = ContextVar("toolreg_mcp_task_call", default=None)
"""The mounted call the SDK's client is making in this context (set by `Mount`)."""


class TasksClient(ClientExtension):
    """The client half of the extension, for a `Mount`'s SDK client: declares it, and
    claims `resultType: "task"` answers to `tools/call`, which `drive` finishes."""

    identifier = EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (
            ResultClaim(
                result_type="task",
                model=CreatedTask,
                resolve=_resolve,
                protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
            ),
        )


async def _resolve(created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
    call = CURRENT_CALL.get()
    if call is None:  # never: every call of the mount's client is made by the mount
        raise RemoteTaskError("its MCP server answered with a task nobody waits for.")
    return await drive(context.session, created, call)


def offers_tasks(session: Any) -> bool:
    """Whether the server lists the extension in its capabilities (2026-07-28)."""
    capabilities = getattr(session, "server_capabilities", None)
    extensions = getattr(capabilities, "extensions", None)
    return isinstance(extensions, Mapping) and EXTENSION in extensions


async def drive(session: Any, created: CreatedTask, call: TaskCall) -> types.CallToolResult:
    """Poll the task `created` until it ends; its `CallToolResult`.

    Polls come after 50 ms, then twice as long each time up to the server's
    `pollIntervalMs` (at most 30 s). Status messages become the call's progress; an
    `elicitation/create` in `inputRequests` is answered by `call.answer` (each key once);
    a `completed` task's result is the call's, `failed` and `cancelled` fail the call.
    Any other way out (the caller's time limit, its cancellation, a malformed answer)
    sends `tasks/cancel` first, in the background: the call never runs twice, and the
    task is not left running.
    """
    task_id = call.task_id = created.task_id
    ended = False
    try:
        if not offers_tasks(session):
            raise RemoteTaskError(
                "its MCP server answered with a task, but does not offer the tasks extension."
            )
        state: _RemoteTask = created
        delay = 0.0 if created.status in TERMINAL else _FIRST_POLL  # ended already: get it
        answered: set[str] = set()
        while True:
            if call.abandoned:
                raise RemoteTaskError("the call was abandoned before its task was created.")
            call.status(state.status_message)
            if isinstance(state, PolledTask):
                if state.status in TERMINAL:
                    ended = True
                    return _outcome(state)
                if state.status == "input_required":
                    await _answer(session, state, call, answered)
                    delay = _FIRST_POLL
            if delay:
                await asyncio.sleep(min(delay, _ceiling(state.poll_interval_ms)))
            request = _GetTask(params=TaskParams.model_validate({"taskId": task_id}))
            state = await session.send_request(request, PolledTask)
            if state.task_id != task_id:
                raise RemoteTaskError("its MCP server answered tasks/get about another task.")
            delay = min(max(delay * 2, _FIRST_POLL), _MAX_POLL)
    finally:
        if not ended:
            call.spawn(_cancel(session, task_id))


def _ceiling(poll_interval_ms: float | None) -> float:
    """The longest wait between polls: the server's interval, within 50 ms and 30 s."""
    if poll_interval_ms is None or poll_interval_ms <= 0:
        return _DEFAULT_POLL
    return min(max(poll_interval_ms / 1000, _FIRST_POLL), _MAX_POLL)


def _outcome(task: PolledTask) -> types.CallToolResult:
    if task.status == "completed":
        if task.result is None:
            raise RemoteTaskError("its MCP server's completed task has no result.")
        return types.CallToolResult.model_validate(task.result)
    if task.status == "failed":
        error = task.error if isinstance(task.error, Mapping) else {}
        message = error.get("message")
        if isinstance(message, str) and message.strip():
            raise RemoteTaskError(message, remote=True)
        raise RemoteTaskError("its MCP server's task failed.")
    raise RemoteTaskError("its MCP server cancelled the task.")


async def _answer(session: Any, task: PolledTask, call: TaskCall, answered: set[str]) -> None:
    """Answer the task's new input requests with `tasks/update` (elicitation only)."""
    requests = task.input_requests or {}
    if len(requests) > _MAX_INPUTS:
        raise RemoteTaskError(f"its MCP server asked for more than {_MAX_INPUTS} inputs at once.")
    responses: dict[str, Any] = {}
    for key, request in requests.items():
        if key in answered:
            continue
        if len(key) > _MAX_REMOTE_ID or len(answered) >= _MAX_ANSWERS:
            raise RemoteTaskError("its MCP server asked for input too many times.")
        try:
            asked = types.ElicitRequest.model_validate(request)
        except ValidationError:
            raise RemoteTaskError(
                "its MCP server's task asked for input the mount cannot give "
                "(only elicitation/create is answered)."
            ) from None
        answer = await call.answer(asked.params)
        responses[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        answered.add(key)
    if responses:
        params = UpdateParams.model_validate({"taskId": task.task_id, "inputResponses": responses})
        await session.send_request(_UpdateTask(params=params), types.Result)


async def _cancel(session: Any, task_id: str) -> None:
    """`tasks/cancel`, at most `_CANCEL_WAIT` seconds; a failure is only logged."""
    try:
        request = _CancelTask(params=TaskParams.model_validate({"taskId": task_id}))
        await session.send_request(request, types.Result, request_read_timeout_seconds=_CANCEL_WAIT)
    except Exception as exc:
        _log.debug("tasks/cancel of a mounted server's task failed: %s", type(exc).__name__)
