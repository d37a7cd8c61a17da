"""MCP tasks on a shared backend: Redis, through pydocket (FastMCP's task queue).

`TaskOptions(backend="redis://host:6379/0")` (`toolreg serve ... --tasks URL`) puts a
server's tasks in Redis, where every worker process and machine serving the same `queue`
sees them:

- **Where a task runs.** `tools/call` writes the task's record and queues its run on a
  pydocket `Docket`; each serving process runs a pydocket `Worker`, and whichever has a free
  slot runs it (not necessarily the one that received the call). `tasks/get`,
  `tasks/update` and `tasks/cancel` are answered by any of them, from the record.
- **The record** is one Redis hash per task, `<prefix>task:<id>`, in JSON (no pickles):
  the owner and the caller (SHA-256 digests, compared in constant time), status, status
  message, result or error, outstanding input requests, the run count, and the job (the
  tool call and the request it came in, without credentials: see `TaskJob`). A finished
  task's record expires `ttl` seconds after it ended, whichever process wrote it, so the
  result is read after a restart of every worker.
- **Limits.** The running tasks are two sorted sets (all, and the caller's) checked and
  written with the record in one Lua script, so `max_running` and `max_per_caller` hold
  across every worker. Each entry's score is the moment it is stale (the task's lifetime,
  plus two `reclaim_after`): a slot is never lost for good, even if every worker dies.
- **Answers** (`tasks/update`) are pushed to a Redis list per question; the running task
  waits on it (`BLPOP`), wherever it runs. **Cancellation** ends the record `cancelled` at
  once and asks pydocket to stop the run (dropped from the queue, or cancelled where it
  runs: an async tool is cancelled, a sync tool's thread runs on, its result discarded).
- **A lost worker.** A worker renews its claim on the runs it holds; a run whose worker
  died (SIGKILL, a lost machine) or stopped (a restart) stays claimed but unrenewed, and
  `reclaim_after` seconds later another worker takes it over (pydocket's redelivery). The
  second run sees the run count and does what the tool says (`on_worker_lost`): runs it
  again, with the same idempotency key, or ends it `failed` saying the tool was
  interrupted while running and may have had effects. Never lost, never left `working`.

Redis is trusted here as the tasks' store: pydocket keeps a queued run's arguments (here,
only the task id) pickled, so whoever may write to that Redis may run code in the workers.
Give it a password (`redis://:password@host`) or a socket only the workers reach, as for
`RateLimit(redis=)` and `RedisStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ..errors import UsageError
from ..stores.redis import redacted
from .context import Note
from .tasks import (
    EXPIRED,
    TERMINAL,
    JobRunner,
    TaskJob,
    TaskOptions,
    busy,
    lifetime_message,
    not_found,
    owned,
    progress_text,
    timestamp,
)

__all__ = ["SharedTaskStore"]

_log = logging.getLogger("toolreg.mcp")

_WORK = "toolreg_task"  # the pydocket task every worker registers
_IO_TIMEOUT = 5.0  # seconds one Redis command may take before the request fails
_WAIT_CHUNK = 5.0  # seconds of one BLPOP while a task waits for an answer
_MAX_ID = 128
_MAX_INPUTS = 64  # questions of one task at once

T = TypeVar("T")

# KEYS: running, the caller's running, the record. ARGV: now (ms), max_running,
# max_per_caller, the entry's score (ms, or "+inf"), the task id, then the record's
# field/value pairs. 0: created; 1: max_running reached; 2: max_per_caller reached.
_START = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 2 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('HSET', KEYS[3], unpack(ARGV, 6))
return 0
"""

# KEYS: the record. The run count after this run began, and the record's cancel flag,
# job, deadline and caller; {0} when the task is gone or has ended.
_BEGIN = """
local status = redis.call('HGET', KEYS[1], 'status')
if (not status) or status == 'completed' or status == 'failed' or status == 'cancelled' then
  return {0}
end
local runs = redis.call('HINCRBY', KEYS[1], 'runs', 1)
return {runs, redis.call('HGET', KEYS[1], 'cancel') or '', redis.call('HGET', KEYS[1], 'job'),
        redis.call('HGET', KEYS[1], 'deadline') or '', redis.call('HGET', KEYS[1], 'caller')}
"""

# KEYS: the record. ARGV: field/value pairs, written only while the task has not ended.
_LIVE = """
local status = redis.call('HGET', KEYS[1], 'status')
if (not status) or status == 'completed' or status == 'failed' or status == 'cancelled' then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
"""

# KEYS: the record, running, the caller's running. ARGV: the task id, the ttl (ms), then
# field/value pairs. Ends the task once: 1 if this call ended it, 0 if it had ended.
_END = """
local status = redis.call('HGET', KEYS[1], 'status')
if (not status) or status == 'completed' or status == 'failed' or status == 'cancelled' then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('HDEL', KEYS[1], 'inputs', 'job')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class SharedTaskStore:
    """The tasks of every server that shares `options.backend` and `options.queue` (see
    the module's text). `serving()` opens the connection and runs this process's worker;
    `start` needs it open. Implements `tasks.TaskBackend`."""

    def __init__(self, options: TaskOptions, runner: JobRunner) -> None:
        try:
            import docket  # noqa: F401  (checked now, not at the first call)
            import redis.asyncio  # noqa: F401
        except ImportError:
            raise UsageError(
                "TaskOptions(backend=) needs pydocket and redis: pip install 'toolreg[tasks]'"
            ) from None
        assert options.backend is not None
        self.options = options
        self._url = options.backend
        self.where = f"Redis at {redacted(options.backend)}"
        self._runner = runner
        self._prefix = f"toolreg:tasks:{options.queue}:"
        self._client: Any = None
        self._docket: Any = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._worker_run: asyncio.Task[None] | None = None
        self._serving = 0
        self._scripts: dict[str, Any] = {}
        self._active: dict[str, asyncio.Future[dict[str, Any]]] = {}  # runs in this process
        self._handing_over: set[str] = set()

    # -- keys ---------------------------------------------------------------------------
    def _record(self, task_id: str) -> str:
        return f"{self._prefix}task:{task_id}"

    def _running(self) -> str:
        return f"{self._prefix}running"

    def _running_of(self, caller_digest: str) -> str:
        return f"{self._prefix}running:{caller_digest[:32]}"

    def _answers(self, task_id: str, key: str) -> str:
        return f"{self._prefix}answer:{task_id}:{key}"

    # -- lifetime -----------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The server's lifetime: this process's worker runs tasks while it lasts. When
        it ends, the runs this worker holds are left claimed: another worker (or this one,
        restarted) takes them over `reclaim_after` seconds later."""
        self._serving += 1
        try:
            if self._serving == 1:
                await self._open()
            yield
        finally:
            self._serving -= 1
            if self._serving == 0:
                await self._close()

    async def _open(self) -> None:
        import redis.asyncio as aioredis
        from docket import Docket, Worker

        options = self.options
        stack = contextlib.AsyncExitStack()
        try:
            self._client = aioredis.Redis.from_url(
                self._url, socket_connect_timeout=_IO_TIMEOUT, health_check_interval=30
            )
            stack.push_async_callback(self._client.aclose)
            for name, script in (("start", _START), ("begin", _BEGIN), ("live", _LIVE)):
                self._scripts[name] = self._client.register_script(script)
            self._scripts["end"] = self._client.register_script(_END)
            docket = await stack.enter_async_context(
                Docket(
                    name=f"toolreg-tasks-{options.queue}",
                    url=self._url,
                    execution_ttl=timedelta(seconds=options.ttl),
                )
            )
            docket.register(self._work, names=[_WORK])
            worker = await stack.enter_async_context(
                Worker(
                    docket,
                    name=f"{socket.gethostname()}#{os.getpid()}#{secrets.token_hex(4)}",
                    concurrency=options.max_running,
                    redelivery_timeout=timedelta(seconds=options.reclaim_after),
                    minimum_check_interval=timedelta(milliseconds=50),
                    schedule_automatic_tasks=False,
                )
            )
        except BaseException:
            await stack.aclose()
            self._client = None
            raise
        self._docket = docket
        self._stack = stack
        self._worker_run = asyncio.ensure_future(worker.run_forever())

    async def _close(self) -> None:
        run, stack = self._worker_run, self._stack
        if run is not None:
            run.cancel()  # no new runs start here; then the running ones are handed over
            for task_id, active in list(self._active.items()):
                self._handing_over.add(task_id)
                active.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await run
        self._worker_run = self._stack = self._docket = None
        if stack is not None:
            try:
                await stack.aclose()
            except Exception:  # a Redis gone while stopping: nothing left to do
                _log.debug("closing the shared task store failed", exc_info=True)
        self._client = None

    async def _io(self, work: Awaitable[T], timeout: float = _IO_TIMEOUT) -> T:
        """One Redis round trip, at most `_IO_TIMEOUT` seconds; a failure is the
        request's error (-32603, saying the store did not answer), not a traceback."""
        if self._client is None:
            if asyncio.iscoroutine(work):
                work.close()
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message="The task store is not open (the server is not serving).",
            )
        try:
            return await asyncio.wait_for(work, timeout)
        except (asyncio.CancelledError, MCPError):
            raise
        except Exception as exc:
            _log.warning("the shared task store (%s) failed: %s", self.where, type(exc).__name__)
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message="The task store did not answer; try again later.",
            ) from None

    # -- the requests -------------------------------------------------------------------
    def _open_now(self) -> None:
        """-32603 unless `serving()` has opened the store."""
        if self._client is None or self._docket is None:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message="The task store is not open (the server is not serving).",
            )

    async def start(self, owner: str, job: TaskJob) -> dict[str, Any]:
        self._open_now()
        options = self.options
        docket = self._docket
        task_id = secrets.token_urlsafe(32)
        now = time.time()
        caller = _digest(job.caller.identity)
        deadline = "" if options.max_lifetime is None else repr(now + options.max_lifetime)
        stale = (
            "+inf"
            if options.max_lifetime is None
            else str(math.ceil((now + options.max_lifetime + 2 * options.reclaim_after) * 1000))
        )
        created = timestamp()
        fields = {
            "owner": _digest(owner),
            "caller": caller,
            "status": "working",
            "created": created,
            "updated": created,
            "created_at": repr(now),
            "deadline": deadline,
            "runs": "0",
            "asked": "0",
            "job": json.dumps(job.stored(), ensure_ascii=False, default=str),
        }
        flat = [item for pair in fields.items() for item in pair]
        args = [
            str(math.floor(now * 1000)),
            str(options.max_running),
            str(options.max_per_caller or options.max_running),
            stale,
            task_id,
            *flat,
        ]
        keys = [self._running(), self._running_of(caller), self._record(task_id)]
        code = int(await self._io(self._scripts["start"](keys=keys, args=args)))
        if code:
            raise busy(options, per_caller=code == 2)
        try:
            await self._io(docket.add(_WORK, key=task_id)(task_id))
        except MCPError:
            message = "The task could not be queued; try again later."
            await self._end(task_id, caller, "failed", error=_error(types.INTERNAL_ERROR, message))
            raise MCPError(code=types.INTERNAL_ERROR, message=message) from None
        return self._wire(task_id, fields, "task")

    async def _find(self, owner: str, task_id: str) -> dict[str, str]:
        """The record of the task `task_id` of `owner`, else -32602 (unknown, expired or
        another caller's: the same answer)."""
        if not 0 < len(task_id) <= _MAX_ID:
            raise not_found()
        self._open_now()
        raw = await self._io(self._client.hgetall(self._record(task_id)))
        data = {k.decode(): v.decode("utf-8", "replace") for k, v in raw.items()}
        if not data.get("status") or not owned(_digest(owner), data.get("owner", "")):
            raise not_found()
        return data

    async def get(self, owner: str, task_id: str) -> dict[str, Any]:
        return self._wire(task_id, await self._find(owner, task_id))

    async def update(self, owner: str, task_id: str, responses: Mapping[str, Any]) -> None:
        """Each answer for an outstanding question is pushed to its list, where the task
        waits for it (whichever worker runs it); other keys are ignored."""
        data = await self._find(owner, task_id)
        if data["status"] != "input_required":
            return
        outstanding = _json(data.get("inputs")) or {}
        ttl = round(self.options.ttl * 1000)
        pipe = self._client.pipeline(transaction=False)
        answered = 0
        for key, value in responses.items():
            if key in outstanding:
                target = self._answers(task_id, key)
                pipe.rpush(target, json.dumps(value, ensure_ascii=False))
                pipe.pexpire(target, ttl)
                answered += 1
        if answered:
            await self._io(pipe.execute())

    async def cancel(self, owner: str, task_id: str) -> None:
        """End the task `cancelled` at once, then stop its run: dropped from the queue if
        no worker has it, cancelled where it runs otherwise."""
        data = await self._find(owner, task_id)
        if data["status"] in TERMINAL:
            return
        await self._live(task_id, cancel="1")
        await self._end(task_id, data["caller"], "cancelled", message="Cancelled by the client.")
        await self._io(self._docket.cancel(task_id))

    # -- the record -----------------------------------------------------------------------
    async def _live(self, task_id: str, **fields: str) -> bool:
        """Write `fields` to a task that has not ended (whether it had not)."""
        flat = [item for pair in fields.items() for item in pair]
        done = await self._io(self._scripts["live"](keys=[self._record(task_id)], args=flat))
        return bool(done)

    async def _end(
        self,
        task_id: str,
        caller: str,
        status: str,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> bool:
        """End the task as `status`, once (whether this call ended it); its record expires
        `ttl` after and its slots are freed."""
        fields = {"status": status, "updated": timestamp(), "finished_at": repr(time.time())}
        if result is not None:
            fields["result"] = json.dumps(result, ensure_ascii=False)
        if error is not None:
            fields["error"] = json.dumps(error, ensure_ascii=False)
            fields["message"] = str(error.get("message", ""))
        if message is not None:
            fields["message"] = message
        flat = [item for pair in fields.items() for item in pair]
        keys = [self._record(task_id), self._running(), self._running_of(caller)]
        args = [task_id, str(round(self.options.ttl * 1000)), *flat]
        return bool(await self._io(self._scripts["end"](keys=keys, args=args)))

    def _wire(
        self, task_id: str, data: Mapping[str, str], result_type: str = "complete"
    ) -> dict[str, Any]:
        """The task as `tasks/get` answers it, from its record."""
        status = data["status"]
        ttl = None
        finished = data.get("finished_at")
        if finished:  # kept `ttl` seconds after it ended; unlimited before
            since = float(finished) - float(data.get("created_at") or finished)
            ttl = round((since + self.options.ttl) * 1000)
        wire: dict[str, Any] = {
            "resultType": result_type,
            "taskId": task_id,
            "status": status,
            "createdAt": data.get("created"),
            "lastUpdatedAt": data.get("updated"),
            "ttlMs": ttl,
            "pollIntervalMs": round(self.options.poll_interval * 1000),
        }
        if data.get("message"):
            wire["statusMessage"] = data["message"]
        if status == "completed":
            wire["result"] = _json(data.get("result"))
        elif status == "failed":
            wire["error"] = _json(data.get("error"))
        elif status == "input_required":
            wire["inputRequests"] = _json(data.get("inputs")) or {}
        return wire

    # -- a run, in whichever worker took it ----------------------------------------------
    async def _work(self, task_id: str) -> None:
        """pydocket's task: one run of the task `task_id`."""
        begun = await self._io(self._scripts["begin"](keys=[self._record(task_id)], args=[]))
        runs = int(begun[0])
        if runs <= 0:
            return  # ended (cancelled before it ran, or by an earlier run) or expired
        cancel, stored, deadline, caller = (part.decode() for part in begun[1:5])
        if cancel:
            await self._end(task_id, caller, "cancelled", message="Cancelled by the client.")
            return
        try:
            job = TaskJob.restored(json.loads(stored))
        except (KeyError, TypeError, ValueError):
            _log.warning("a task's job in %s could not be read", self.where)
            error = _error(types.INTERNAL_ERROR, "Internal error")
            await self._end(task_id, caller, "failed", error=error)
            return
        left = None if not deadline else float(deadline) - time.time()
        lifetime = self.options.max_lifetime or 0.0
        if left is not None and left <= 0:
            error = _error(EXPIRED, lifetime_message(lifetime))
            await self._end(task_id, caller, "failed", error=error)
            return
        if runs > 1:  # an earlier run's questions went with it
            note = f"Running again (run {runs}): the worker that ran it stopped."
            await self._live(
                task_id, status="working", inputs="{}", message=note, updated=timestamp()
            )
        handle = _Run(self, task_id, runs)
        run = asyncio.ensure_future(asyncio.wait_for(self._runner(handle, job), left))
        self._active[task_id] = run
        try:
            result = await run
        except asyncio.CancelledError:
            if task_id in self._handing_over:  # this worker is stopping: another takes over
                self._handing_over.discard(task_id)
                await self._hand_over(task_id)
                return
            if await self._cancelled(task_id):
                await self._end(task_id, caller, "cancelled", message="Cancelled by the client.")
            raise
        except asyncio.TimeoutError:
            error = _error(EXPIRED, lifetime_message(lifetime))
            await self._end(task_id, caller, "failed", error=error)
        except MCPError as exc:
            error = exc.error.model_dump(mode="json", exclude_none=True)
            await self._end(task_id, caller, "failed", error=error)
        except Exception:
            _log.exception("a task of the MCP server failed")
            error = _error(types.INTERNAL_ERROR, "Internal error")
            await self._end(task_id, caller, "failed", error=error)
        else:
            await self._end(task_id, caller, "completed", result=result)
        finally:
            self._active.pop(task_id, None)

    async def _hand_over(self, task_id: str) -> None:
        """Queue the task's run again, for another worker (this one is stopping): the
        next run finds the run count and does what the tool says (`on_worker_lost`).
        If Redis cannot take it now, the run stays claimed by this worker, and is taken
        over `reclaim_after` after this worker stops renewing its claim."""
        try:
            when = datetime.now(timezone.utc)
            await asyncio.wait_for(self._docket.replace(_WORK, when, task_id)(task_id), _IO_TIMEOUT)
        except Exception:
            _log.warning("a running task could not be handed over; it will be reclaimed")
            raise asyncio.CancelledError from None

    async def _cancelled(self, task_id: str) -> bool:
        """Whether the client cancelled the task (a run cancelled for another reason is
        the worker stopping)."""
        try:
            flag = await self._io(self._client.hget(self._record(task_id), "cancel"))
        except MCPError:
            return False
        return bool(flag)


class _Run:
    """One run of a task, as its call sees it (`tasks.TaskHandle`)."""

    __slots__ = ("_questions", "_store", "attempt", "id")

    def __init__(self, store: SharedTaskStore, task_id: str, attempt: int) -> None:
        self._store = store
        self.id = task_id
        self.attempt = attempt
        self._questions: dict[str, dict[str, Any]] = {}

    async def note(self, note: Note) -> None:
        """A progress line becomes the task's status message (log lines go nowhere)."""
        if note.kind == "progress":
            await self._store._live(self.id, message=progress_text(note), updated=timestamp())

    async def ask(self, request: dict[str, Any], timeout: float) -> Any:
        """Put `request` to the client through `inputRequests` and wait at most `timeout`
        seconds for its `tasks/update` answer, which any worker may receive (None when
        none came)."""
        store = self._store
        if len(self._questions) >= _MAX_INPUTS:
            return None
        record = store._record(self.id)
        number = await store._io(store._client.hincrby(record, "asked", 1))
        key = f"input-{number}"  # never reused within the task, whichever run asks
        self._questions[key] = request
        await self._show()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    return None
                wait = min(left, _WAIT_CHUNK)
                got = await store._io(
                    store._client.blpop([store._answers(self.id, key)], timeout=wait),
                    wait + _IO_TIMEOUT,
                )
                if got is not None:
                    return _json(got[1].decode("utf-8", "replace"))
        finally:
            del self._questions[key]
            with contextlib.suppress(MCPError):
                await self._show()

    async def _show(self) -> None:
        status = "input_required" if self._questions else "working"
        inputs = json.dumps(self._questions, ensure_ascii=False)
        await self._store._live(self.id, status=status, inputs=inputs, updated=timestamp())


def _error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


def _json(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
