"""Parameter metadata (`Param`) and context injection (`ToolContext`, `Injected`).

```python
def search(
    query: Annotated[str, Param(description="Words to look for", min_length=1)],
    limit: Annotated[int, Param(ge=1, le=50)] = 10,
    ctx: ToolContext[Session] = ...,     # filled by dispatch, never by the model
) -> list[str]: ...
```
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from decimal import Decimal

__all__ = [
    "UNSET",
    "CancelScope",
    "CancelSignal",
    "Injected",
    "LogLevel",
    "LogReporter",
    "Param",
    "ProgressReporter",
    "ProgressSink",
    "ToolContext",
    "cancel_scope",
    "no_progress",
    "progress_sink",
]

DepsT = TypeVar("DepsT")


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""`Param.default` when no default is given (None is a default like any other)."""


@dataclass(frozen=True, slots=True)
class Param:
    """Metadata for one parameter, placed in `typing.Annotated`.

    Every field is optional; `None` means "not set" (for `default`: `UNSET`). Several
    `Param`s (and plain strings, `Doc`, ChatGLM3 booleans, `annotated_types` constraints,
    pydantic's `Field(...)`) in one `Annotated` are merged, the later one winning field by
    field. `default` / `default_factory` give the parameter a default the function itself
    does not declare (dispatch passes it when the model leaves the argument out); `ignored`
    lists metadata toolreg did not understand (`toolreg lint` reports it). A bound
    (`ge`, `gt`, `le`, `lt`, `multiple_of`) may be a `Decimal` on a `Decimal` parameter.
    """

    description: str | None = None
    required: bool | None = None
    ge: float | Decimal | None = None
    gt: float | Decimal | None = None
    le: float | Decimal | None = None
    lt: float | Decimal | None = None
    multiple_of: float | Decimal | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    examples: Sequence[Any] | None = None
    title: str | None = None
    injected: bool = False
    extra: dict[str, Any] = field(default_factory=dict, hash=False)
    default: Any = field(default_factory=lambda: UNSET, hash=False)
    default_factory: Callable[[], Any] | None = None
    ignored: tuple[str, ...] = ()

    def merged(self, other: Param) -> Param:
        """Return a copy where every field set on `other` replaces this one's."""
        changes: dict[str, Any] = {}
        for f in fields(other):
            value = getattr(other, f.name)
            if f.name == "extra":
                if value:
                    changes["extra"] = {**self.extra, **value}
            elif f.name == "injected":
                if value:
                    changes["injected"] = True
            elif f.name == "default":
                if value is not UNSET:
                    changes["default"] = value
            elif f.name == "ignored":
                if value:
                    changes["ignored"] = (*self.ignored, *value)
            elif value is not None:
                changes[f.name] = value
        return replace(self, **changes) if changes else self


EMPTY_PARAM = Param()


class _InjectedMarker:
    """Marks a parameter as filled by the caller of dispatch: `Annotated[T, Injected]`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Injected"


Injected = _InjectedMarker()
"""Put in `Annotated[T, Injected]` to receive dispatch's `context=` object as it is."""


LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The levels of `ToolContext.log` (MCP's, which are syslog's)."""


class ProgressReporter(Protocol):
    """`ctx.report_progress(progress, total=None, message=None)`."""

    def __call__(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None: ...


class LogReporter(Protocol):
    """`ctx.log(message, level="info")`."""

    def __call__(self, message: str, level: LogLevel = "info") -> None: ...


def no_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Progress of a call nobody follows: dropped."""


class ProgressSink(Protocol):
    """Where the progress of the calls dispatch runs goes: `sink(tool_name, call_id,
    progress, total, message)`. It never raises."""

    def __call__(
        self,
        tool_name: str,
        call_id: str | None,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None: ...


progress_sink: ContextVar[ProgressSink | None] = ContextVar("toolreg_progress_sink", default=None)
"""The `ProgressSink` of the calls dispatched in this context: a `ToolContext` that dispatch
makes sends its `report_progress` there (a conversation's `stream()` sets it, to yield
`ToolProgress` events). None (the default): progress is dropped."""


def _no_log(message: str, level: LogLevel = "info") -> None:
    """A log line of a call nobody follows: dropped."""


_GUARD = threading.Lock()  # makes a signal's event, and hands a scope's signals over


class CancelSignal:
    """`ToolContext.cancelled`: set when the call should stop: its time limit ran out, or
    the turn that runs it was stopped (a `stream()` reader that closed it, a cancelled
    task, an interrupt). A sync tool polls it (`ctx.cancelled.is_set()`) or waits on it
    (`ctx.cancelled.wait(0.5)`: True once set) between steps, and stops; an async tool is
    cancelled as a task instead (it may read it too). To tell the model what was and was
    not done, raise `toolreg.ToolCancelled("...")` on the way out."""

    __slots__ = ("_callbacks", "_event", "_set")

    def __init__(self) -> None:
        self._set = False
        self._event: threading.Event | None = None  # made by the first wait()
        self._callbacks: list[Callable[[], None]] | None = None

    def is_set(self) -> bool:
        """Whether the call should stop."""
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the call should stop, at most `timeout` seconds; whether it should."""
        if self._set:
            return True
        with _GUARD:
            if self._event is None:
                self._event = threading.Event()
            event = self._event
            finished = self.is_set()  # set meanwhile, before the event existed
        if finished:
            event.set()
        return event.wait(timeout)

    def set(self) -> None:
        """Ask the call to stop (toolreg does: a tool only reads it). Runs the callbacks
        once (an async tool's task is cancelled by one)."""
        with _GUARD:
            if self._set:
                return
            self._set = True
            event, callbacks, self._callbacks = self._event, self._callbacks, None
        if event is not None:
            event.set()
        for callback in callbacks or ():
            with contextlib.suppress(Exception):  # e.g. a closed event loop: nothing to cancel
                callback()

    def on_set(self, callback: Callable[[], None]) -> None:
        """Run `callback` when the signal is set (now, if it is)."""
        with _GUARD:
            if not self._set:
                self._callbacks = [*(self._callbacks or ()), callback]
                return
        callback()

    def __repr__(self) -> str:
        return f"CancelSignal(set={self._set})"


class CancelScope:
    """The calls a conversation runs in one round (or starts early): `cancel()` sets the
    `CancelSignal` of each call dispatched in it, and of each dispatched after."""

    __slots__ = ("_cancelled", "_heard", "_signals")

    def __init__(self) -> None:
        self._signals: list[CancelSignal] = []
        self._cancelled = False
        self._heard = False

    @property
    def heard(self) -> bool:
        """Whether a call dispatched in it can hear its cancel signal (one was added)."""
        return self._heard

    def add(self, signal: CancelSignal) -> None:
        with _GUARD:
            self._heard = True
            if not self._cancelled:
                self._signals.append(signal)
                return
        signal.set()

    def cancel(self) -> None:
        with _GUARD:
            self._cancelled = True
            signals, self._signals = self._signals, []
        for signal in signals:
            signal.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled


cancel_scope: ContextVar[CancelScope | None] = ContextVar("toolreg_cancel_scope", default=None)
"""The `CancelScope` of the calls dispatched in this context (a conversation's round sets it
in each run's context); None: only the call's own time limit sets its signal."""


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[DepsT]):
    """What dispatch passes to a parameter annotated `ToolContext`.

    `deps` is the `context=` object given to dispatch (a user id, a session, permissions,
    a database handle: anything). The model can never set a context parameter: it is not
    in the schema, and a key with its name in the arguments is rejected as unexpected.

    `report_progress` and `log` reach the client when the tool is served over MCP
    (`toolreg.mcp`: progress and log notifications); anywhere else they do nothing. Both
    are plain calls, from sync and async tools alike, and never raise.

    `idempotency_key` is the call's key (see `toolreg.idempotency`): the same whenever the
    same call runs again (a retry, a resume, a replay), to pass to a payment or ticket API;
    None when the caller of dispatch gave none. `cancelled` is set when the call should
    stop (`CancelSignal`).
    """

    deps: DepsT
    tool_name: str = ""
    call_id: str | None = None
    report_progress: ProgressReporter = field(default=no_progress, repr=False, compare=False)
    log: LogReporter = field(default=_no_log, repr=False, compare=False)
    idempotency_key: str | None = None
    cancelled: CancelSignal = field(default_factory=CancelSignal, repr=False, compare=False)
