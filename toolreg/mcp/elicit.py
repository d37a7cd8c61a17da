"""A served tool's `ctx.ask` / `ctx.aask` as MCP elicitation (form mode).

`ClientChannel`: the question goes to the client as an `elicitation/create` request
(`mode: "form"`, the question's flat `requestedSchema`) over the call's session, when the
client declared the `elicitation` capability and the connection has a back-channel (stdio,
stateful streamable HTTP). `TaskChannel`: in a call run as an MCP task, the request goes in
the task's `inputRequests` and the answer comes with `tasks/update` (at most the tasks'
`ttl`; no answer in time is a "cancel"). `RetryChannel`: on the 2026-07-28 protocol, which
has no server-to-client requests, the call is answered with an `InputRequiredResult` that
holds the question (`inputRequests`, key `toolreg/ask/N`) and the answers so far
(`requestState`); the client's retry brings the answer and the tool runs again from the
start, its earlier questions answered from that state (the conversation's re-run model:
the tool must be idempotent up to its last question). Anywhere else (a client without the
capability, a stateless HTTP request on the 2025 protocol) the tool's `ask` raises
`CannotAskError`, and the model reads that the tool needs to ask the user, which this
caller cannot.

A sync tool's `ask` blocks its thread (which keeps its slot of `max_threads`) until the
answer comes; it gives up, with `ToolCancelled`, when the call is cancelled meanwhile.
The client's answer is checked against the schema before the tool sees it
(`InvalidAnswerError` otherwise).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from ..asking import Asking, NoChannel, Question
from ..errors import InvalidAnswerError, ToolCancelled, ToolError
from ..params import ToolContext
from .tasks import TaskHandle, can_elicit

__all__ = [
    "ASK_KEY",
    "ClientChannel",
    "RetryChannel",
    "TaskChannel",
    "client_asking",
    "pending_question",
    "restored",
    "retry_asking",
    "task_asking",
]

ASK_KEY = "toolreg/ask/"
"""The prefix of a question's key in an `InputRequiredResult` (`toolreg/ask/0`, ...)."""
_MAX_STATE = 256_000  # characters of a retry's requestState toolreg reads at most
_MAX_ASKS = 32

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


class AskByRetry(ToolError):
    """Raised through a tool by `RetryChannel`: its question goes back to the client."""


class RetryChannel:
    """2026-07-28: a question goes back in an `InputRequiredResult` (`pending`); the
    client's retry answers it (`inputResponses`) and brings the earlier answers back
    (`requestState`), each checked again as the tool asks again."""

    def __init__(self, responses: Mapping[str, Any] | None, state: object) -> None:
        self._responses = responses or {}
        self._answers = _read_state(state).get("answers", [])
        self._next = 0
        self.pending: types.InputRequiredResult | None = None

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        index, self._next = self._next, self._next + 1
        if index < len(self._answers):
            known = self._answers[index]
            if (known["question"], known["schema"]) == (question.message, question.schema):
                return known["action"], known["content"]
            del self._answers[index:]  # another question than before: asked anew
        key = f"{ASK_KEY}{index}"
        given = self._responses.get(key)
        if isinstance(given, types.ElicitResult) and index == len(self._answers):
            self._answers.append(
                {
                    "question": question.message,
                    "schema": question.schema,
                    "action": given.action,
                    "content": given.content,
                }
            )
            return given.action, given.content
        if index >= _MAX_ASKS:
            raise AskByRetry(f"Tool '{ctx.tool_name}' asked more than {_MAX_ASKS} questions.")
        form = types.ElicitRequestFormParams(
            message=question.message, requested_schema=question.schema
        )
        kept = {  # other answers of this call (its confirmation): the retry brings them back
            k: v.model_dump(mode="json", by_alias=True, exclude_none=True)
            for k, v in self._responses.items()
            if not k.startswith(ASK_KEY) and isinstance(v, types.ElicitResult)
        }
        state = {"answers": self._answers[:index], "responses": kept}
        self.pending = types.InputRequiredResult(
            input_requests={key: types.ElicitRequest(params=form)},
            request_state=json.dumps(state, ensure_ascii=False),
        )
        raise AskByRetry(f"Tool '{ctx.tool_name}' waits for the user's answer.")

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        return self.ask(ctx, question)


def _read_state(state: object) -> dict[str, Any]:
    """What a retry's `requestState` brings back: the answers so far, and the call's other
    answers (its confirmation). They are the client's own answers: each is checked again
    when it is used. Nothing usable: nothing."""
    if not isinstance(state, str) or len(state) > _MAX_STATE:
        return {}
    try:
        data = json.loads(state)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    answers, responses = data.get("answers"), data.get("responses")
    keys = {"question", "schema", "action", "content"}
    if not isinstance(answers, list) or len(answers) > _MAX_ASKS:
        answers = []
    if not all(isinstance(a, dict) and set(a) == keys for a in answers):
        answers = []
    return {"answers": answers, "responses": responses if isinstance(responses, dict) else {}}


def restored(params: types.CallToolRequestParams) -> types.CallToolRequestParams:
    """A 2026-07-28 retry's params with the answers its `requestState` kept (a confirmation
    given before the tool asked) among its `inputResponses` (those sent now win)."""
    kept = _read_state(params.request_state).get("responses") or {}
    if not kept:
        return params
    saved: dict[str, Any] = {}
    for key, value in list(kept.items())[:_MAX_ASKS]:
        try:
            saved[key] = types.ElicitResult.model_validate(value)
        except ValidationError:
            continue
    return params.model_copy(
        update={"input_responses": {**saved, **(params.input_responses or {})}}
    )


def retry_asking(meta: Any, responses: Mapping[str, Any] | None, state: object) -> Asking | None:
    """The asker of a 2026-07-28 call whose client can answer a form (else None)."""
    if not can_elicit(meta):
        return None
    return Asking(RetryChannel(responses, state))


def client_asking(
    session: Any, request_id: Any, params: Any = None, meta: Any = None, modern: bool = False
) -> Asking:
    """The asker of a call that came in on `session`: on 2026-07-28, by the client's retry
    (`RetryChannel`); else elicitation when the client declared it and the connection can
    carry a request to it; else one that cannot ask."""
    if modern:
        asking = retry_asking(
            meta, getattr(params, "input_responses", None), getattr(params, "request_state", None)
        )
        return asking or Asking(NoChannel("the client did not declare elicitation"))
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return Asking(NoChannel("the client did not declare elicitation"))
    if not session.can_send_request:
        return Asking(NoChannel("the connection has no way to send the client a request"))
    return Asking(ClientChannel(session, request_id))


def pending_question(asking: Asking | None) -> types.InputRequiredResult | None:
    """The question a call's `RetryChannel` sends back instead of a result, if any."""
    channel = None if asking is None else asking.channel
    return channel.pending if isinstance(channel, RetryChannel) else None


def task_asking(task: TaskHandle, meta: Any, timeout: float) -> Asking:
    """The asker of a call run as a task: through `inputRequests` when the client can
    answer a form, else one that cannot ask."""
    if not can_elicit(meta):
        return Asking(NoChannel("the client did not declare elicitation"))
    return Asking(TaskChannel(task, timeout))
