"""`ToolCall` (what the model asked) and `ToolResult` (what dispatch answers)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .content import Part
from .errors import ToolCallError

__all__ = ["OUTCOMES", "Outcome", "ToolCall", "ToolResult"]

Outcome = Literal["not_started", "interrupted", "completed"]
"""How a call ended: `"not_started"` (refused, or stopped before it began: nothing ran),
`"interrupted"` (it was running when it was stopped: its time limit, a stopped turn; what it
did is not known unless its text says), `"completed"` (the tool returned or raised)."""
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call requested by a model: a tool name, its arguments, and the provider's id.

    `idempotency_key`: the key dispatch hands the tool (`ToolContext.idempotency_key`); a
    conversation gives every call one (see `toolreg.idempotency`). Not part of equality:
    two calls are the same call whatever keys they carry."""

    name: str
    arguments: str | bytes | dict[str, Any] | None = None
    call_id: str | None = None
    idempotency_key: str | None = field(default=None, compare=False)


@dataclass(slots=True)
class ToolResult:
    """The outcome of one dispatched call.

    `content` is the text for the model. `value` is the tool's raw return value (when it
    ran). On failure `ok` is False and `error` holds the `ToolCallError` (its `kind` is
    one of `unknown_tool`, `invalid_json`, `invalid_arguments`, `denied`, `timeout`,
    `execution_error`, and `repeated` for a call the conversation loop refused to repeat;
    `error.message` equals `content`). `exception` keeps the tool's
    original exception for logging: it never reaches `content`.

    `outcome` says whether the tool ran: `"not_started"`, `"interrupted"` (stopped while it
    ran: a time limit, a stopped turn) or `"completed"` (see `Outcome`).
    `idempotency_key` is the key the call ran with (None: none was given).

    `parts`: a rich result's parts (text, `Image`, `Audio`, `File`: see `toolreg.content`),
    bounded; empty for a plain result and for a failure. `content` is then the text
    fallback: the text parts with a marker for each part left out of text. Each provider
    format sends the parts its API takes in a tool result and that text for the others.

    Not frozen, so that building one stays cheap on the hot path; treat it as read-only.
    """

    tool_name: str
    call_id: str | None
    ok: bool
    content: str
    value: Any = None
    error: ToolCallError | None = None
    exception: BaseException | None = field(default=None, repr=False)
    return_direct: bool = False
    elapsed: float = 0.0
    arguments: dict[str, Any] | None = None
    outcome: Outcome = "completed"
    idempotency_key: str | None = None
    parts: tuple[Part, ...] = ()

    @property
    def error_kind(self) -> str | None:
        return None if self.error is None else self.error.kind

    def with_note(self, note: str) -> ToolResult:
        """A copy whose text begins with `note` (its first part too, for a rich result)."""
        parts = (note.rstrip("\n"), *self.parts) if self.parts else ()
        return dataclasses.replace(self, content=note + self.content, parts=parts)

    def __str__(self) -> str:
        """The text for the model: `content` (ChatGLM3's `dispatch_tool` returns this)."""
        return self.content
