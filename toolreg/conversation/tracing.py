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

from ..observe import OBSERVER, ModelCallTrace
from .providers import Answer

__all__ = ["ModelCall", "guardrail_verdict", "model_call", "turn"]


@contextlib.contextmanager
def turn(name: str, model: str, provider: str) -> Iterator[None]:
    """One `send` / `run`: everything inside is part of it."""
    observer = OBSERVER.current
    if observer is None:
        yield
        return
    trace = observer.turn(name, model, provider)
    with trace.parent():
        try:
            yield
        except BaseException as exc:
            trace.end(exc)
            raise
    trace.end(None)


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
