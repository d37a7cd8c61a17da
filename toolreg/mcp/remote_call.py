"""One call of a mounted server's tool: send it, pass its progress on, follow the task the
server may answer with, cancel it when its caller gives up, and read what comes back.

A `Mount` holds one `RemoteCalls` for all its calls, on its own session or on a user's
(`users`); it says which client sends each call, whether that call was confirmed here, and
how to tell that a connection broke. What a call brings back:

- the server's text, structured content, content blocks and, when it holds images, audio
  or embedded files, its parts (`RemoteResult`; bounded and checked by `results`);
- a result with `isError`, or a protocol error, as the server's words (`remote_failure`:
  under the registry's `errors=` policy, like a local exception's message);
- a malformed answer, a result that breaks its tool's `outputSchema`, a connection that
  broke: that call's `ToolError`, in toolreg's words (never the server's value).

Progress notifications of an inline call and the status messages of a task are the call's
`ToolContext.report_progress` (finite numbers, a printable bounded message). A call whose
caller is cancelled, or times out, is cancelled there: a task being polled gets
`tasks/cancel` (`tasks`), sent once, and the mount waits for those (`settle`) before it
disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ..content import Part, fallback_text
from ..errors import ToolError, exception_text
from .results import has_media, remote_failure, remote_parts, remote_result, result_problem, shown
from .tasks import CURRENT_CALL, RemoteTaskError, TaskCall, offers_tasks, shown_text

__all__ = ["Progress", "RemoteCalls", "RemoteResult", "remote_text", "result_text"]

_log = logging.getLogger("toolreg.mcp")
_CREATING = 5.0  # seconds an abandoned call may still take to answer (a task, to cancel)

Progress = Callable[[float, float | None, str | None], None]
"""A call's progress reporter: `ToolContext.report_progress`."""


@dataclass(frozen=True, slots=True)
class RemoteResult:
    """A mounted tool's successful result, as `ToolResult.value`: the server's text (what
    the model reads, `ToolResult.content`), its `structuredContent`, its content blocks,
    and, when it holds images, audio or embedded files, its parts (`ToolResult.parts`: see
    `toolreg.content`; the text is then their text fallback)."""

    text: str
    structured: Any = None
    content: tuple[dict[str, Any], ...] = ()
    parts: tuple[Part, ...] = ()


def remote_text(result: types.CallToolResult) -> str:
    """The text of a `CallToolResult`: its text blocks, one per line; an image, a sound or
    an embedded file as a marker (`[image left out]`: its data is no text); any other block
    as JSON; the structured content as JSON when there is no block at all."""
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, (types.ImageContent, types.AudioContent, types.EmbeddedResource)):
            kind = "file" if isinstance(block, types.EmbeddedResource) else block.type
            parts.append(f"[{kind} left out]")
        else:
            dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
            parts.append(json.dumps(dumped, ensure_ascii=False))
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def result_text(value: RemoteResult) -> str | tuple[Part, ...]:
    """What dispatch renders of a remote result (a mounted tool's `result_filter`): its
    parts when it has media (a rich result), else its text."""
    return value.parts if value.parts else value.text


class RemoteCalls:
    """The calls of one mount to its server.

    `label()` names the server in log lines; `answer_question(params)` answers a task's
    input request (as the mount answers the server's elicitations); `lost(client)` is told
    when `client`'s connection broke (later calls then fail at once). It keeps the calls
    that were confirmed here and are on their way (`confirmed`), and the `tasks/cancel` of
    calls given up (`settle`).
    """

    def __init__(
        self,
        label: Callable[[], str],
        answer_question: Callable[[Any], Awaitable[types.ElicitResult]],
        lost: Callable[[Client], None],
    ) -> None:
        self._label = label
        self._answer_question = answer_question
        self._lost = lost
        self._confirmed: dict[str, int] = {}  # remote name -> calls confirmed here, in flight
        self._cancels: set[asyncio.Task[None]] = set()  # tasks/cancel of abandoned tasks

    def confirmed(self, remote: str) -> bool:
        """Whether a call of the remote tool `remote` that was confirmed here (by
        `confirm=`) is on its way now."""
        return self._confirmed.get(remote, 0) > 0

    async def settle(self, timeout: float) -> None:
        """Wait at most `timeout` seconds for the `tasks/cancel` of abandoned calls to go
        out (before the connection ends)."""
        if self._cancels:
            await asyncio.wait(set(self._cancels), timeout=timeout)

    async def call(
        self,
        client: Client,
        remote: str,
        local: str,
        arguments: dict[str, Any],
        *,
        meta: dict[str, Any] | None = None,
        progress: Progress | None = None,
        confirmed: bool = False,
    ) -> RemoteResult:
        """Call the server's tool `remote` (mounted as `local`) with `arguments` on
        `client`; `confirmed`: the call was confirmed here (the server may ask again)."""
        if confirmed:
            self._confirmed[remote] = self._confirmed.get(remote, 0) + 1
        call = TaskCall(progress or _no_progress, self._answer_question, self._send_cancel)
        current = CURRENT_CALL.set(call)  # for a task the server answers instead (`tasks`)
        try:
            sent = asyncio.ensure_future(
                client.call_tool(
                    remote,
                    arguments,
                    progress_callback=_progress_to(call),
                    meta=meta,  # type: ignore[arg-type]
                )
            )
            result = await self._answer_of(client, sent, call)
        except RemoteTaskError as exc:
            if exc.remote:  # the server's words, like its isError texts
                raise remote_failure(local, f"Tool '{local}' failed: {exc.message}") from None
            raise ToolError(f"Tool '{local}' failed: {exc.message}") from None
        except ValidationError as exc:  # a result of no shape the protocol knows: this call
            where = _where(exc)
            _log.warning("the MCP server %s answered %r malformed%s", self._label(), remote, where)
            raise ToolError(
                f"Tool '{local}' failed: its MCP server answered with a malformed result{where}."
            ) from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lost(client)  # later calls fail at once, and `connected` says so
                raise ToolError(
                    f"Tool '{local}' failed: the MCP server closed the connection."
                ) from exc
            # the server's words, like its isError texts: under the registry's errors= policy
            failure = remote_failure(local, f"Tool '{local}' failed: {exception_text(exc, 300)}")
            raise failure from exc
        except Exception as exc:
            problem = result_problem(exc)
            if problem is not None:  # a result that breaks its schema: this call alone fails
                _log.warning("the MCP server %s answered %r: %s", self._label(), remote, problem)
                raise ToolError(f"Tool '{local}' failed: {problem}") from exc
            # the transport broke: a dead process, a dropped connection
            self._lost(client)
            reason = type(exc).__name__
            raise ToolError(
                f"Tool '{local}' failed: the MCP server could not be reached ({reason})."
            ) from exc
        finally:
            CURRENT_CALL.reset(current)
            if confirmed:
                self._confirmed[remote] -= 1
        return self._result(remote, local, result)

    def _result(self, remote: str, local: str, result: types.CallToolResult) -> RemoteResult:
        text = remote_text(result)
        if result.is_error:  # the server's words: under the registry's errors= policy
            raise remote_failure(local, text)
        blocks = tuple(
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        )
        rich = remote_parts(result.content)
        if rich is None:
            text = remote_result(text)  # however much the server sent
            return RemoteResult(text, result.structured_content, blocks)
        parts, refused = rich
        if refused:
            _log.warning(
                "the MCP server %s answered %r with %d image, audio or file part(s) left out "
                "(malformed, mislabelled or too large)",
                self._label(),
                remote,
                refused,
            )
        text = remote_result(fallback_text(parts))
        if not has_media(parts):  # every one refused: the markers are the text
            parts = ()
        return RemoteResult(text, result.structured_content, blocks, parts)

    async def _answer_of(
        self, client: Client, sent: asyncio.Future[types.CallToolResult], call: TaskCall
    ) -> types.CallToolResult:
        """The answer to the call `sent`. When its caller is cancelled (or times out): a
        task being polled is cancelled there (`tasks`); a call whose answer has not come
        yet, to a server that offers tasks, gets `_CREATING` more seconds for it in the
        background, so that a task it turns out to be is cancelled too; any other call is
        cancelled (the SDK tells the server)."""
        try:
            return await asyncio.shield(sent)
        except asyncio.CancelledError:
            call.abandoned = True
            if call.task_id is None and not sent.done() and offers_tasks(client.session):
                self._send_cancel(_reaped(sent, _CREATING))
            else:
                sent.cancel()
                sent.add_done_callback(_retrieved)
            raise

    def _send_cancel(self, cancel: Awaitable[None]) -> None:
        """Run a `tasks/cancel` (or the wait for an abandoned call's answer) on the mount's
        loop, past the call that gave up (`settle` waits for it before disconnecting)."""
        task = asyncio.ensure_future(cancel)
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)


async def _reaped(sent: asyncio.Future[Any], grace: float) -> None:
    """Wait at most `grace` seconds for an abandoned call's answer (a task it created is
    cancelled by `tasks.drive`, which sees the call abandoned), then cancel the call."""
    done, _ = await asyncio.wait({sent}, timeout=grace)
    if not done:
        sent.cancel()
    with contextlib.suppress(BaseException):
        await sent


def _retrieved(sent: asyncio.Future[Any]) -> None:
    """Read the outcome of a call nobody waits for any more."""
    if not sent.cancelled():
        sent.exception()


def _no_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    pass


def _progress_to(call: TaskCall) -> ProgressFnT:
    """The SDK's `progress_callback` of an inline call: the server's progress notifications,
    checked (finite numbers, a printable bounded message), to the call's reporter."""

    async def report(progress: float, total: float | None, message: str | None) -> None:
        if not _finite(progress) or (total is not None and not _finite(total)):
            return
        text = shown_text(message) if isinstance(message, str) and message else None
        call.report(float(progress), None if total is None else float(total), text)

    return report


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _where(exc: ValidationError) -> str:
    """Where a malformed answer broke its shape (the path only, never the server's value)."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return ""
    path = ".".join(str(part) for part in errors[0].get("loc", ()))[:80]
    return f" (at {shown(path)})" if path else ""
