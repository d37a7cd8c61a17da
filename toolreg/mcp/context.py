"""Per-request facts for a server's `context=` factory, and a tool's progress and log lines.

`McpRequest` is what a `context=` factory receives: it builds the tool's `ToolContext.deps`
from the request (headers, session), never from anything the model sent.

`Reporter` carries `ctx.report_progress(...)` and `ctx.log(...)` of one call to the client.
A tool may call them from its own thread (sync tools run in one) or from the event loop;
lines are queued in order, sent one by one, and flushed before the call's result, so that
none arrives after it. At most `MAX_NOTES` lines per call are sent; longer texts are cut.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..params import LogLevel

__all__ = ["LEVEL_ORDER", "MAX_NOTES", "LogLevels", "McpRequest", "Note", "Reporter"]

MAX_NOTES = 1000
"""Progress and log notifications sent for one call at most; the rest are dropped."""
_MAX_TEXT = 8192

_log = logging.getLogger("toolreg.mcp")


@dataclass(frozen=True, slots=True)
class McpRequest:
    """The MCP request a tool call came in: what a server's `context=` factory reads.

    `headers` are the HTTP request's (lower-case names; empty over stdio), `session_id` the
    streamable-HTTP session (None over stdio and stateless HTTP), `client` the client's
    `{"name", "version"}` when it said, `tool` the name of the tool called, `token` the
    caller's verified access token (an SDK `AccessToken`: `subject`, `scopes`, `claims`)
    when the server has `auth=`.
    """

    transport: Literal["stdio", "http"]
    tool: str
    protocol_version: str
    headers: Mapping[str, str] = field(default_factory=dict)
    session_id: str | None = None
    client: Mapping[str, Any] | None = None
    token: Any = None


@dataclass(frozen=True, slots=True)
class Note:
    """One progress or log line of a call, on its way to the client."""

    kind: Literal["progress", "log"]
    progress: float = 0.0
    total: float | None = None
    message: str | None = None
    level: LogLevel = "info"


LEVEL_ORDER: tuple[LogLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""The log levels from the least to the most severe (RFC 5424, as MCP orders them)."""
_LEVELS = frozenset(LEVEL_ORDER)


class Reporter:
    """`report_progress` and `log` for one call's `ToolContext`; `close()` flushes them."""

    def __init__(self, send: Callable[[Note], Awaitable[None]]) -> None:
        self._send = send
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Note | None] = asyncio.Queue()
        self._count = 0
        self._task: asyncio.Task[None] | None = None

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        if not _is_number(progress) or (total is not None and not _is_number(total)):
            return  # a tool's mistake must not break its call
        self._put(Note("progress", float(progress), _float(total), _text(message)))

    def log(self, message: str, level: LogLevel = "info") -> None:
        self._put(
            Note("log", message=_text(message) or "", level=level if level in _LEVELS else "info")
        )

    def _put(self, note: Note) -> None:
        """Any thread: hand the line to the event loop, in order."""
        if self._count >= MAX_NOTES:
            return
        self._count += 1
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            self._loop.call_soon_threadsafe(self._enqueue, note)

    def _enqueue(self, note: Note) -> None:
        if self._task is None:  # started by the first line: most calls send none
            self._task = self._loop.create_task(self._drain())
        self._queue.put_nowait(note)

    async def _drain(self) -> None:
        while (note := await self._queue.get()) is not None:
            try:
                await self._send(note)
            except Exception:  # the client went away: the call still finishes
                _log.debug("a progress or log notification could not be sent", exc_info=True)

    async def close(self) -> None:
        """Send what is queued; called after the tool returned, before the result goes out."""
        await asyncio.sleep(0)  # lines queued with call_soon_threadsafe are enqueued first
        if self._task is None:
            return
        self._queue.put_nowait(None)
        await self._task


class LogLevels:
    """The least severe level each session of a server asked for with `logging/setLevel`
    (the 2025 protocols): a session is a stdio connection or a streamable-HTTP session id;
    a stateless request has none, so nothing is remembered for it. At most `limit`
    sessions are remembered (the least recently set go first: they get every line again)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._limit = limit
        self._levels: collections.OrderedDict[str, LogLevel] = collections.OrderedDict()

    def set(self, session: str | None, level: LogLevel) -> None:
        if session is None:
            return
        self._levels[session] = level
        self._levels.move_to_end(session)
        while len(self._levels) > self._limit:
            self._levels.popitem(last=False)

    def allowed(self, session: str | None) -> frozenset[LogLevel] | None:
        """The levels a session's lines may have (None: it set none, every level)."""
        level = None if session is None else self._levels.get(session)
        return None if level is None else frozenset(LEVEL_ORDER[LEVEL_ORDER.index(level) :])


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _text(message: object) -> str | None:
    if message is None:
        return None
    text = message if isinstance(message, str) else str(message)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"
