"""Dispatch: run a model's call to a tool, safely, and answer with a `ToolResult`.

- `dispatcher`: `Dispatcher` (the decisions, and thin sync and async shells) and its settings;
- `decode`: arguments as JSON text, bytes or a mapping -> a dict, within size and depth;
- `binding`: the tool's `CallPlan` applied: validate, coerce, convert, inject, bind;
- `confirm`: asking the `confirm=` callback about destructive calls, one at a time;
- `calling`: the one place user code is called (tools, callbacks, filters, converters, hooks);
- `render`: a return value -> the text the model reads;
- `redaction`: what the model may read of an exception (`errors="redact" | "mask" | "full"`).
"""

from .confirm import ConfirmCallback
from .dispatcher import CallLike, Dispatcher, DispatchSettings, DispatchVerb
from .redaction import ErrorMode

__all__ = [
    "CallLike",
    "ConfirmCallback",
    "DispatchSettings",
    "DispatchVerb",
    "Dispatcher",
    "ErrorMode",
]
