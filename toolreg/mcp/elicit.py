"""A served tool's `ctx.ask` / `ctx.aask` as MCP elicitation (form mode).

`ClientChannel`: the question goes to the client as an `elicitation/create` request
(`mode: "form"`, the question's flat `requestedSchema`) over the call's session, when the
client declared the `elicitation` capability and the connection has a back-channel (stdio,
stateful streamable HTTP). `TaskChannel`: in a call run as an MCP task, the request goes in
the task's `inputRequests` and the answer comes with `tasks/update` (at most the tasks'
`ttl`; no answer in time is a "cancel"). Anywhere else (a client without the capability, a
stateless HTTP request) the tool's `ask` raises `CannotAskError`, and the model reads that
the tool needs to ask the user, which this caller cannot.

A sync tool's `ask` blocks its thread (which keeps its slot of `max_threads`) until the
answer comes; it gives up, with `ToolCancelled`, when the call is cancelled meanwhile.
The client's answer is checked against the schema before the tool sees it
(`InvalidAnswerError` otherwise).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from ..asking import Asking, NoChannel, Question
from ..errors import InvalidAnswerError, ToolCancelled
from ..params import ToolContext
from .tasks import TaskHandle, can_elicit

__all__ = ["ClientChannel", "TaskChannel", "client_asking", "task_asking"]

_POLL = 0.25  # seconds between a waiting sync tool's looks at its cancel signal


class _Channel:
    """`ask` for a sync tool's thread, over the event loop the call came in on."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()

    async def _ask_here(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        """Ask, on the loop the call came in on."""
        raise NotImplementedError

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        if asyncio.get_running_loop() is self._loop:
            return await self._ask_here(ctx, question)
        # another loop (a mount's own, forwarding its server's question): hop over
        future = asyncio.run_coroutine_threadsafe(self._ask_here(ctx, question), self._loop)
        return await asyncio.wrap_future(future)

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        future = asyncio.run_coroutine_threadsafe(self._ask_here(ctx, question), self._loop)
        while True:
            try:
                return future.result(_POLL)
            except concurrent.futures.TimeoutError:
                if ctx.cancelled.is_set():
                    future.cancel()
                    raise ToolCancelled(
                        f"Tool '{ctx.tool_name}' was stopped while it waited for the user's answer."
                    ) from None


class ClientChannel(_Channel):
    """Questions to the client of one call, over its session."""

    def __init__(self, session: Any, request_id: Any) -> None:
        super().__init__()
        self._session = session
        self._request_id = request_id

    async def _ask_here(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        answer = await self._session.elicit_form(
            question.message, question.schema, related_request_id=self._request_id
        )
        return answer.action, answer.content


class TaskChannel(_Channel):
    """Questions of a call run as a task: in its `inputRequests`, answered by `tasks/update`."""

    def __init__(self, task: TaskHandle, timeout: float) -> None:
        super().__init__()
        self._task = task
        self._timeout = timeout

    async def _ask_here(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        params = {"mode": "form", "message": question.message, "requestedSchema": question.schema}
        answer = await self._task.ask(
            {"method": "elicitation/create", "params": params}, self._timeout
        )
        if answer is None:  # no answer within the ttl
            return "cancel", None
        try:
            result = types.ElicitResult.model_validate(answer)
        except ValidationError:
            raise InvalidAnswerError(
                "The answer to the question is not an elicitation result."
            ) from None
        return result.action, result.content


def client_asking(session: Any, request_id: Any) -> Asking:
    """The asker of a call that came in on `session`: elicitation when the client declared
    it and the connection can carry a request to it, else one that cannot ask."""
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return Asking(NoChannel("the client did not declare elicitation"))
    if not session.can_send_request:
        return Asking(NoChannel("the connection has no way to send the client a request"))
    return Asking(ClientChannel(session, request_id))


def task_asking(task: TaskHandle, meta: Any, timeout: float) -> Asking:
    """The asker of a call run as a task: through `inputRequests` when the client can
    answer a form, else one that cannot ask."""
    if not can_elicit(meta):
        return Asking(NoChannel("the client did not declare elicitation"))
    return Asking(TaskChannel(task, timeout))
