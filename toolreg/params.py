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

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from decimal import Decimal

__all__ = [
    "UNSET",
    "Injected",
    "LogLevel",
    "LogReporter",
    "Param",
    "ProgressReporter",
    "ProgressSink",
    "ToolContext",
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


def _no_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
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


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[DepsT]):
    """What dispatch passes to a parameter annotated `ToolContext`.

    `deps` is the `context=` object given to dispatch (a user id, a session, permissions,
    a database handle: anything). The model can never set a context parameter: it is not
    in the schema, and a key with its name in the arguments is rejected as unexpected.

    `report_progress` and `log` reach the client when the tool is served over MCP
    (`toolreg.mcp`: progress and log notifications); anywhere else they do nothing. Both
    are plain calls, from sync and async tools alike, and never raise.
    """

    deps: DepsT
    tool_name: str = ""
    call_id: str | None = None
    report_progress: ProgressReporter = field(default=_no_progress, repr=False, compare=False)
    log: LogReporter = field(default=_no_log, repr=False, compare=False)
