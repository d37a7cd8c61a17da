"""The typed events of a turn: what `Conversation.stream()` / `AsyncConversation.stream()` yield.

```python
for event in chat.stream("What's the weather in Beijing?"):
    match event:
        case TextDelta(text=text):
            print(text, end="")
        case ToolStarted(call=call):
            print(f"[{call.name} started]")
        case ToolProgress(progress=done, total=total):
            print(f"[{done}/{total}]")
        case ToolFinished(result=result):
            print(f"[{result.tool_name}: {'ok' if result.ok else 'failed'}]")
        case TurnFinished(reply=reply):
            print(reply.stop_reason)
```

Every event is a frozen dataclass. A turn's events come in this order: for each model
call, its `TextDelta`s (as the stream delivers them, or the whole text at once when the
conversation does not stream); for each call, `ToolCallReady` (its arguments are complete),
`ToolStarted`, any `ToolProgress` it reports (`ToolContext.report_progress`) and
`ToolFinished` (its result); `ApprovalRequired` when the turn stops for approvals; and
last, always, `TurnFinished` with the turn's `Reply`.

A call started early (eager start: `stream=True`, a read-only or idempotent tool) is ready
and started while the answer still streams: its `ToolCallReady` and `ToolStarted` come
between the answer's `TextDelta`s (`early=True`). Calls of one round run side by side, so
their `ToolProgress` and `ToolFinished` events interleave in the order things happen; the
results still go back to the model in the model's order.

A call the loop answers itself (a refused repeat, a vetoed call, a call past a limit) has
no `ToolStarted`; its `ToolFinished` is not sent either: `Reply.tool_results` has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, Union

from ..result import ToolCall, ToolResult

if TYPE_CHECKING:
    from .reply import PendingCall, Reply

__all__ = [
    "ApprovalRequired",
    "StreamEvent",
    "TextDelta",
    "ToolCallReady",
    "ToolFinished",
    "ToolProgress",
    "ToolStarted",
    "TurnFinished",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's answer text, as it arrived."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A call's arguments are complete: `early` when the answer is still streaming."""

    call: ToolCall
    early: bool = False


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A call has started running (`early`: while the answer still streams)."""

    call: ToolCall
    early: bool = False


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running call reported progress (`ctx.report_progress(progress, total, message)`)."""

    call_id: str | None
    tool_name: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A call has finished: its `result`, as the model will read it."""

    call: ToolCall
    result: ToolResult


@dataclass(frozen=True, slots=True)
class ApprovalRequired:
    """The turn stops: these calls wait for a person (`confirm="defer"`; `resume()` them)."""

    pending: tuple[PendingCall, ...]


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The turn is over: its `Reply` (always the last event)."""

    reply: Reply


StreamEvent: TypeAlias = Union[
    TextDelta,
    ToolCallReady,
    ToolStarted,
    ToolProgress,
    ToolFinished,
    ApprovalRequired,
    TurnFinished,
]
"""Any event `stream()` yields: `TextDelta`, `ToolCallReady`, `ToolStarted`,
`ToolProgress`, `ToolFinished`, `ApprovalRequired`, and last `TurnFinished` (with the
`Reply`). Tell them apart with `isinstance` or a `match` on the class."""
