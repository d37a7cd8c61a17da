"""How the drivers report a turn and its model calls to the observer (see `observe`).

Both cost one attribute read while nothing observes toolreg. The tool calls a model call
asked for run with that model call as their parent, so that a trace shows which round of
the conversation asked for which tool.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from ..observe import OBSERVER, ModelCallTrace, TurnTrace
from .events import TurnFinished
from .providers import Answer

__all__ = ["ModelCall", "Observed", "guardrail_verdict", "model_call", "turn"]


class Observed:
    """A turn under observation: its events go to the observer's trace, which ends once,
    whoever ends it first (the turn's last event, a failure, the driver giving up)."""

    __slots__ = ("trace",)

    def __init__(self, trace: TurnTrace) -> None:
        self.trace: TurnTrace | None = trace

    def event(self, event: object) -> None:
        trace = self.trace
        if trace is not None:
            trace.event(event)
            if isinstance(event, TurnFinished):  # the turn's last event: it is over
                self.end(None)

    def end(self, error: BaseException | None) -> None:
        trace, self.trace = self.trace, None
        if trace is not None:
            trace.end(error)


@contextlib.contextmanager
def turn(name: str, model: str, provider: str) -> Iterator[Observed | None]:
    """One `send` / `run` / `resume`: the model and tool calls inside are its children.

    A failure inside ends it; otherwise it ends when its `TurnFinished` event is read (the
    driver passes every event to `Observed.event`), so that the turn's trace also has what
    comes after the loop: the state saved, the approvals asked for, the reply."""
    observer = OBSERVER.current
    if observer is None:
        yield None
        return
    trace = observer.turn(name, model, provider)
    observed = Observed(trace)
    with trace.parent():
        try:
            yield observed
        except BaseException as exc:
            observed.end(exc)
            raise


class ModelCall:
    """A model call in progress: set `response` once it is in; `parent` then makes the call
    the parent of the tool calls that follow it."""

    __slots__ = ("response", "trace")

    def __init__(self, trace: ModelCallTrace | None) -> None:
        self.trace = trace
        self.response: Answer | None = None

    @property
    def parent(self) -> Callable[[], AbstractContextManager[None]]:
        return contextlib.nullcontext if self.trace is None else self.trace.parent


@contextlib.contextmanager
def model_call(request: Mapping[str, Any], client: Any, provider: str) -> Iterator[ModelCall]:
    """One model call through `client` to the wire API `provider` (its
    `gen_ai.provider.name`)."""
    observer = OBSERVER.current
    trace = None if observer is None else observer.model_call(request, client, provider)
    call = ModelCall(trace)
    if call.trace is None:
        yield call
        return
    try:
        yield call
    except BaseException as exc:
        call.trace.fail(exc)
        raise
    call.trace.end({} if call.response is None else call.response.traced())


def guardrail_verdict(stage: str, tool: str, guardrail: str, rejection: str | None) -> None:
    """A guardrail's verdict on a call (`rejection`: None when it allowed the call)."""
    observer = OBSERVER.current
    if observer is not None:
        observer.guardrail(stage, tool, guardrail, "allow" if rejection is None else "reject")
