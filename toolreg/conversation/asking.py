"""A tool's `ctx.ask` in a conversation: the turn pauses exactly like an approval.

A call the conversation runs gets a `ReplayChannel` holding the answers given to that call
so far. Its first question without an answer stops the call (`InputRequired`, raised
through the tool) and the round pauses: the call is pending with its question and schema
(`PendingCall.question`, `.schema`), `reply.stop_reason == "input_required"`, and the
saved state holds them (signed, like an approval). `resume({call_id: answer})` checks the
answer against the schema and runs the call again **from the start**, with every earlier
answer and this one: its `ctx.ask` calls return them in order, and a further question
pauses the turn again. So a tool must be idempotent up to its last question (as pydantic-ai's
deferred calls are); it runs again with the same idempotency key. A tool that asks another
question on the re-run than it asked before (not the same text and schema at that place)
is asked it anew.

An answer given to `resume` is a `toolreg.Answer`, a dict (accepted with that content), or
`False` (declined).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..asking import Question, ask_channel, form_question
from ..errors import ConversationStateError, InvalidAnswerError, ToolError, UsageError
from ..jsonvalues import copy_json
from ..params import Answer, ToolContext
from ..result import ToolResult
from .reply import PendingCall

__all__ = [
    "MAX_ASKS",
    "WAITING",
    "Asked",
    "InputRequired",
    "ReplayChannel",
    "answer_for",
    "asked_in",
    "asked_json",
    "asked_record",
    "asking_arun",
    "asking_run",
    "pending_ask",
    "read_asked",
    "replayed",
    "settle_asks",
    "with_asked",
]

WAITING = frozenset({"approval_required", "input_required"})
"""The stop reasons of a turn that waits for `resume`."""

MAX_ASKS = 32
"""Questions one call may have answered at most (a tool asking in a loop is stopped)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One question of a call and the user's answer to it (checked already)."""

    question: str
    schema: dict[str, Any]
    action: str
    content: dict[str, Any] | None = None

    def json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "schema": copy_json(self.schema),
            "action": self.action,
            "content": copy_json(self.content),
        }


class InputRequired(ToolError):
    """Raised by `ctx.ask` in a conversation when its question has no answer yet: the call
    stops and the turn pauses for it. A tool must let it through."""

    def __init__(self, tool_name: str, question: Question, asked: tuple[Asked, ...]) -> None:
        self.question = question
        self.asked = asked  # the answers this run used, before this question
        super().__init__(f"Tool '{tool_name}' waits for the user's answer to its question.")


class ReplayChannel:
    """The answers given so far to one call's questions, in order."""

    __slots__ = ("_answers", "_lock", "_next")

    def __init__(self, answers: Sequence[Asked] = ()) -> None:
        self._answers = tuple(answers)
        self._next = 0
        self._lock = threading.Lock()

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        with self._lock:
            index = self._next
            self._next += 1
        known = self._answers[index] if index < len(self._answers) else None
        if known is not None and (known.question, known.schema) == (
            question.message,
            question.schema,
        ):
            return known.action, copy_json(known.content)
        if index >= MAX_ASKS:
            raise UsageError(
                f"tool '{ctx.tool_name}' asked more than {MAX_ASKS} questions in one call"
            )
        raise InputRequired(ctx.tool_name, question, self._answers[:index])

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        return self.ask(ctx, question)


def asked_in(result: ToolResult) -> InputRequired | None:
    """The question that stopped a call's run, if one did."""
    seen: BaseException | None = result.error
    for _ in range(8):  # the tool's own exceptions may wrap it: a short chain only
        if seen is None:
            return None
        if isinstance(seen, InputRequired):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def pending_ask(
    call_id: str, result: ToolResult, asked: InputRequired, key: str | None
) -> PendingCall:
    """The pending call of a run stopped by its question."""
    return PendingCall(
        call_id,
        result.tool_name,
        dict(result.arguments or {}),
        idempotency_key=key,
        question=asked.question.message,
        schema=copy_json(asked.question.schema),
        answers=tuple(a.json() for a in asked.asked),
    )


def answer_for(pending: PendingCall, decision: object) -> Asked:
    """The answer `resume` was given for a pending question, checked against its schema;
    a `UsageError` that names the field otherwise."""
    if pending.question is None or pending.schema is None:
        raise UsageError(f"resume(): {pending.call_id!r} waits for an approval, not an answer")
    if isinstance(decision, Answer):
        action, content = decision.action, decision.data
    elif isinstance(decision, Mapping):
        action, content = "accept", dict(decision)
    elif decision is False:
        action, content = "decline", None
    else:
        raise UsageError(
            f"resume(): the answer for {pending.call_id!r} (it asks {pending.question[:80]!r}) "
            "must be a toolreg.Answer, a dict of the form's fields (accepted), or False "
            f"(declined), not {type(decision).__name__}"
        )
    question = form_question(pending.question, pending.schema)
    try:
        answer = question.answer(action, content)
    except InvalidAnswerError as exc:
        fields = ", ".join(repr(where) for where, _ in exc.problems) or "the answer"
        raise UsageError(
            f"resume(): the answer for {pending.call_id!r} does not fit its question's form "
            f"({fields}): {exc.message}"
        ) from None
    return Asked(pending.question, dict(question.schema), answer.action, answer.data)


def replayed(pending: PendingCall) -> tuple[Asked, ...]:
    """The answers a pending question's call was given before it."""
    return tuple(
        Asked(a["question"], a["schema"], a["action"], a.get("content")) for a in pending.answers
    )


def settle_asks(paused: Any, check: Callable[[str, Any], dict[str, Any]]) -> None:
    """Give each pending question's call the arguments dispatch validated (what an
    approval's pending call holds, and what a saved state's check compares)."""
    for index, pending in paused.pending.items():
        if pending.question is not None:
            arguments = check(pending.tool_name, paused.calls[index].arguments)
            paused.pending[index] = dataclasses.replace(pending, arguments=arguments)


def asked_json(pending: PendingCall) -> dict[str, Any]:
    """A pending question's entries in a saved state's pending call (none for an approval)."""
    if pending.question is None:
        return {}
    return {
        "question": pending.question,
        "schema": copy_json(pending.schema),
        "answers": [copy_json(a) for a in pending.answers],
    }


def read_asked(entry: Mapping[str, Any], pending: PendingCall) -> PendingCall:
    """A saved pending call with its question, checked as `ctx.ask` checks one (a state
    is untrusted input); `ConversationStateError` when it is malformed."""
    if "question" not in entry:
        return pending
    question, schema, answers = entry.get("question"), entry.get("schema"), entry.get("answers")
    try:
        form_question(question, schema)
        if not isinstance(answers, list) or len(answers) > MAX_ASKS:
            raise UsageError("its answers are not a list of at most 32")
        for answer in answers:
            _check_answer(answer)
    except (UsageError, InvalidAnswerError) as exc:
        raise ConversationStateError(
            f"not a usable conversation state: the pending call {pending.call_id[:64]!r} has "
            f"a malformed question ({exc})"
        ) from None
    if not isinstance(question, str) or not isinstance(schema, dict):  # form_question checked
        raise ConversationStateError("not a usable conversation state: a malformed question")
    return dataclasses.replace(
        pending, question=question, schema=schema, answers=tuple(copy_json(a) for a in answers)
    )


def _check_answer(answer: object) -> None:
    if not isinstance(answer, dict) or set(answer) != {"question", "schema", "action", "content"}:
        raise UsageError("an answer is not {question, schema, action, content}")
    form_question(answer["question"], answer["schema"]).answer(answer["action"], answer["content"])


def asking_run(run: Callable[[], ToolResult], answers: Sequence[Asked]) -> Callable[[], ToolResult]:
    """`run` (a call's dispatch) with its `ctx.ask` answered from `answers`, in order; its
    first question without one stops it (`InputRequired`)."""

    def asking() -> ToolResult:
        token = ask_channel.set(ReplayChannel(answers))
        try:
            return run()
        finally:
            ask_channel.reset(token)

    return asking


def asking_arun(
    run: Callable[[], Awaitable[ToolResult]], answers: Sequence[Asked]
) -> Callable[[], Awaitable[ToolResult]]:
    """`asking_run` for the async driver."""

    async def asking() -> ToolResult:
        token = ask_channel.set(ReplayChannel(answers))
        try:
            return await run()
        finally:
            ask_channel.reset(token)

    return asking


def asked_record(result: ToolResult) -> dict[str, Any] | None:
    """The question that stopped a call's run, as JSON (a durable step records it with the
    result, whose exceptions are not recorded); None when none did."""
    asked = asked_in(result)
    if asked is None:
        return None
    return {
        "question": asked.question.message,
        "schema": copy_json(asked.question.schema),
        "answers": [a.json() for a in asked.asked],
    }


def with_asked(result: ToolResult, record: object) -> ToolResult:
    """`result` (read back from a record) stopped by the question `record` holds, as the
    live run was: the turn pauses for it again. A malformed record: `ValueError`."""
    if not isinstance(record, dict) or set(record) != {"question", "schema", "answers"}:
        raise ValueError("its question is not {question, schema, answers}")
    entry = {**record, "call_id": result.call_id or ""}
    try:
        pending = read_asked(entry, PendingCall(result.call_id or "", result.tool_name, {}))
    except ConversationStateError as exc:
        raise ValueError(str(exc)) from None
    assert pending.question is not None  # read_asked read one
    question = form_question(pending.question, pending.schema)
    stopped = InputRequired(result.tool_name, question, replayed(pending))
    if result.error is not None:
        result.error.__cause__ = stopped
    return result
