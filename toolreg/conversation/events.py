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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, Union

from ..result import ToolCall, ToolResult

if TYPE_CHECKING:
    from .reply import PendingCall, Reply

__all__ = [
    "DEPRECATED_EVENTS",
    "ApprovalRequired",
    "Hooks",
    "ModelCallEvent",
    "ModelResponseEvent",
    "StreamEvent",
    "TextDelta",
    "ToolCallReady",
    "ToolFinished",
    "ToolProgress",
    "ToolStarted",
    "TurnFinished",
    "deprecated_event",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's answer text, as it arrived."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A call's arguments are complete: `early` when the answer is still streaming.

    The `before_tool_call` hook gets one before the call runs (and may veto it), with
    `round`: the model call of the turn that made it (1 first); `stream()`'s leave it None.
    """

    call: ToolCall
    early: bool = False
    round: int | None = None


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
    """A call has finished: its `result`, as the model will read it.

    The `after_tool_call` hook gets one for every call of a round, run or refused (a
    veto, a limit, a guardrail), with `round`: the model calls of the turn so far;
    `stream()`'s leave it None (a refused call has none there: `Reply.tool_results`)."""

    call: ToolCall
    result: ToolResult
    round: int | None = None


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


# -- the hooks: veto points that read the same events ----------------------------------


@dataclass(frozen=True, slots=True)
class ModelCallEvent:
    """Before a model call: `request` is the keyword arguments about to be sent."""

    round: int
    request: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelResponseEvent:
    """After a model call: the assistant message as received and its finish reason."""

    round: int
    message: dict[str, Any]
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class Hooks:
    """Optional callables run by the conversation loop, each with one event.

    A hook's exception is not caught: it ends the `send` / `run` (the conversation's
    history stays as it was), since a broken hook is a bug in the application.
    `before_tool_call` may veto a call by returning False or a message for the model.
    `AsyncConversation` awaits a hook that is `async def` (or returns an awaitable), so
    its veto holds too; `Conversation` refuses one with a `UsageError`, never ignores it.
    """

    before_model_call: Callable[[ModelCallEvent], Any] | None = None
    after_model_call: Callable[[ModelResponseEvent], Any] | None = None
    before_tool_call: Callable[[ToolCallReady], Any] | None = None
    after_tool_call: Callable[[ToolFinished], Any] | None = None


DEPRECATED_EVENTS = {"ToolCallEvent": "ToolCallReady", "ToolResultEvent": "ToolFinished"}
"""The hook events that are now the stream's (removed in 0.3): the same fields (`round`,
`call`; `round`, `result`), and more."""


def deprecated_event(module: str, name: str) -> Any:
    """`module.name` for a name of `DEPRECATED_EVENTS`: its new class, with a warning;
    an `AttributeError` for any other name (a module's `__getattr__`)."""
    new = DEPRECATED_EVENTS.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    import warnings

    warnings.warn(
        f"{module}.{name} is {module}.{new} (the stream's event; removed in 0.3)",
        DeprecationWarning,
        3,
    )
    return ToolCallReady if new == "ToolCallReady" else ToolFinished
