"""What a conversation returns (`Reply`, `Usage`, `PendingCall`, the stop reasons)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Generic, Literal, get_args

from typing_extensions import TypeVar

from ..errors import ConversationError
from ..result import ToolResult

__all__ = [
    "REPLY_FIELDS",
    "STOP_REASONS",
    "OutputT",
    "PendingCall",
    "Reply",
    "StopReason",
    "Usage",
]

# Why a turn ended: every value `Reply.stop_reason` takes, declared here only (the loop
# guide's table of them, docs/guides/loop/index.md, is checked against this).
StopReason = Literal[
    "answer",  # the model answered (finish reason "stop", or none given)
    "return_direct",  # every tool of the last round is return_direct: their output is the text
    "max_rounds",  # max_rounds rounds of tool calls; the last call forbade tools
    "repeated_calls",  # the same call was refused after max_repeats rounds; tools forbidden
    "retry_limit",  # a tool's calls needed more retries than its budget (retries=, tool_retries=)
    "call_limit",  # on_call_limit="stop": a call past max_calls / max_tool_calls was refused
    "length",  # the answer was cut off at the token limit (finish reason "length")
    "content_filter",  # the endpoint filtered the answer
    "approval_required",  # confirm="defer": the calls in Reply.pending wait for a person
    "input_required",  # a tool asked the user (ctx.ask): its question is in Reply.pending
]
"""Why a conversation turn ended: the type of `Reply.stop_reason`, one of the strings in
`STOP_REASONS`. Compare a reply's against them: `if reply.stop_reason == "approval_required":`.
"""
STOP_REASONS: tuple[StopReason, ...] = get_args(StopReason)
"""Every value `Reply.stop_reason` takes, in order: `"answer"`, `"return_direct"`,
`"max_rounds"`, `"repeated_calls"`, `"retry_limit"`, `"call_limit"`, `"length"`,
`"content_filter"`, `"approval_required"`, `"input_required"`. The loop guide's table
explains each.
"""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens summed over every model call of a reply.

    The Responses API's `input_tokens` / `output_tokens` are counted as `prompt_tokens` /
    `completion_tokens` (also readable under the Responses API's names).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        return self.prompt_tokens

    @property
    def output_tokens(self) -> int:
        return self.completion_tokens

    def add(self, usage: Mapping[str, Any] | None) -> Usage:
        if not usage:
            return self
        if not isinstance(usage, Mapping):
            raise ConversationError("the endpoint answered a usage that is not an object")
        prompt = _tokens(usage, "prompt_tokens", "input_tokens")
        completion = _tokens(usage, "completion_tokens", "output_tokens")
        total = _tokens(usage, "total_tokens") or prompt + completion
        return Usage(
            self.prompt_tokens + prompt,
            self.completion_tokens + completion,
            self.total_tokens + total,
        )


def _tokens(usage: Mapping[str, Any], *keys: str) -> int:
    """The first of `keys` that is set, as a count of tokens (0 when none is)."""
    for key in keys:
        value = usage.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConversationError(f"the endpoint answered {key}={value!r}, not a token count")
        if value:
            return value
    return 0


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A call that waits for a person's approval (`confirm="defer"`).

    `arguments` are the validated arguments, as JSON values: what will run if approved.
    `call_id` is the model's id for the call (or one the loop gave it, for dialects whose
    calls have none); `resume({call_id: ...})` answers it.

    `digest` ("sha256:...") binds the call id, the tool's name, these arguments and the
    tool's whole definition (description, schema, flags): `resume({digest: ...})` applies
    a decision only to the very call that was shown, and refuses any other.

    `idempotency_key`: the key the call runs with if it is approved as it is (the same in
    a process that resumes it from a saved state; edited arguments get another).

    A call whose tool asked the user (`ctx.ask`, stop reason "input_required") has its
    `question` and the form's `schema` (None for an approval); `resume({call_id: answer})`
    answers it and the call runs again from the start. `answers` are the answers it was
    given before (`{"question", "schema", "action", "content"}` each).
    """

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    digest: str = field(default="", compare=False, repr=False)
    idempotency_key: str | None = field(default=None, compare=False, repr=False)
    question: str | None = None
    schema: dict[str, Any] | None = None
    answers: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)


OutputT = TypeVar("OutputT", default=Any)
"""The type of `Reply.output`: `T` for `send(..., output_type=T)`, None without one."""


@dataclass(frozen=True, slots=True)
class Reply(Generic[OutputT]):
    """The outcome of a conversation turn.

    `messages` is the whole history (ready to send again), `tool_results` every dispatched
    result in order, `rounds` the number of model calls, `stop_reason` one of
    `STOP_REASONS`; `output` the converted value when an `output_type` was asked for.

    "repeated_calls" ends a loop stopped by a call repeated `max_repeats` rounds in a row
    (its last call forbids tools, like the one after `max_rounds`). After "return_direct"
    the history ends with the tool messages; `text` is their content.

    "approval_required" (with `confirm="defer"`): the calls in `pending` wait for a
    person; the other calls of that round ran. `messages` then ends with calls that are
    not all answered yet, and `text` is what the model said with them. A resumed turn
    counts `rounds`, `usage` and `tool_results` from the `send` that started it.

    `over_history_limit`: `max_history_messages` / `max_history_chars` could not be kept in
    some round, since the system messages, the turn's question and the newest call and its
    results are always sent.
    """

    text: str
    messages: list[dict[str, Any]]
    tool_results: list[ToolResult]
    rounds: int
    usage: Usage
    stop_reason: StopReason
    output: OutputT = None  # type: ignore[assignment]  # None when no output_type was given
    pending: list[PendingCall] = field(default_factory=list)
    over_history_limit: bool = False


REPLY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Reply))
"""The names of every field of a `Reply`, in declaration order (`text`, `messages`,
`tool_results`, `rounds`, `usage`, `stop_reason`, `output`, `pending`,
`over_history_limit`); the loop guide's table of them is checked against it.
"""
