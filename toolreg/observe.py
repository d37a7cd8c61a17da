"""The instrumentation slot: what toolreg reports while something observes it.

Dispatch and the conversation drivers ask `OBSERVER.current` at the start of each tool call,
model call and turn; while it is None (the default) they report nothing and pay one
attribute read. `toolreg.instrument()` (in `telemetry`) installs an observer that turns the
reports into OpenTelemetry spans and metrics; nothing here imports OpenTelemetry.

An observer's callbacks are toolreg's own code, not the application's: they must not raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .result import ToolResult
    from .tool import Tool

__all__ = ["OBSERVER", "ModelCallTrace", "Observer", "ObserverSlot", "Trace", "TurnTrace"]


class Trace(Protocol):
    """One tool call under observation: `end` is called exactly once with its result, or
    `abort` with the exception that dispatch raised to its caller instead."""

    def end(self, result: ToolResult) -> None: ...

    def abort(self, error: BaseException) -> None: ...


class ModelCallTrace(Protocol):
    """One model call under observation.

    `end` gets the normalized response (`message`, `finish_reason`, `usage`, `id`, `model`)
    or `fail` the exception; `parent()` makes this call the parent of what runs inside it
    (the tool calls it asked for), even after it ended.
    """

    def end(self, response: Mapping[str, Any]) -> None: ...

    def fail(self, error: BaseException) -> None: ...

    def parent(self) -> AbstractContextManager[None]: ...

    def event(self, event: object) -> None:
        """An event of a streamed answer, as it arrives (a `TextDelta`, a `ToolCallReady`
        of a call started early: `toolreg.conversation.events`), before `end`."""
        ...


class TurnTrace(Protocol):
    """One conversation turn (`send`, `run`, `resume`): its model and tool calls are its
    children.

    It reads the turn's events, in order, as the stream has them (`event`), and ends once:
    when the turn's last event, `TurnFinished`, has been read (`end(None)`), or with the
    exception that ended the turn instead (a reader that stopped early: `GeneratorExit`).
    """

    def end(self, error: BaseException | None) -> None: ...

    def parent(self) -> AbstractContextManager[None]: ...

    def event(self, event: object) -> None:
        """An event of the turn (`toolreg.conversation.events`), `TurnFinished` last."""
        ...


class Observer(Protocol):
    def tool_call(self, name: object, call_id: str | None, tools: Mapping[str, Tool]) -> Trace:
        """A dispatch begins (`name` as the model sent it: possibly unknown, not a str)."""
        ...

    def model_call(
        self, request: Mapping[str, Any], client: Any, provider: str = "openai"
    ) -> ModelCallTrace:
        """A request to the model is about to be sent through `client`, in the wire API
        `provider` (its `gen_ai.provider.name`: "openai", "anthropic")."""
        ...

    def turn(self, name: str, model: str, provider: str = "openai") -> TurnTrace:
        """A conversation turn of the conversation called `name` begins."""
        ...

    def guardrail(self, stage: str, tool: str, guardrail: str, verdict: str) -> None:
        """A guardrail (`stage` "input" or "output") allowed or rejected (`verdict`) a call
        of `tool`, inside the current turn."""
        ...


class ObserverSlot:
    """Holds the observer, if any. One per process: instrumentation is process-wide, like
    OpenTelemetry's own global providers."""

    __slots__ = ("current",)

    def __init__(self) -> None:
        self.current: Observer | None = None


OBSERVER = ObserverSlot()
