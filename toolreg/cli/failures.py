"""Where a failing tool's traceback goes in the command: nowhere by default (the printed
observation says what failed), to stderr with `--debug`, from the tool's own frames."""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from collections.abc import Iterator
from types import TracebackType

from .target import readable

__all__ = ["tool_failures"]


# Frames of the machinery that ran a tool, left out of its traceback under --debug.
_MACHINERY = frozenset({"toolreg", "asyncio", "concurrent", "threading", "contextlib"})
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _own_frames(tb: TracebackType | None) -> TracebackType | None:
    """`tb` from its first frame that is not toolreg's or the machinery's; None if none is."""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module.split(".")[0] not in _MACHINERY:
            return tb
        tb = tb.tb_next
    return None


def _tool_traceback(exc: BaseException) -> str:
    """The traceback of a tool's exception from the tool's own frames, and the exceptions
    it chains: toolreg's frames (and the thread or event loop that ran the tool) are left
    out, and so is a chained exception that happened in them only."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb = _own_frames(current.__traceback__)
        if tb is None and current is not exc:
            break  # toolreg's own business, not the tool's
        lines = traceback.format_exception(
            type(current), current, tb or current.__traceback__, chain=False
        )
        parts.append("".join(lines))
        if current.__cause__ is not None:
            parts.append(_CAUSE)
            current = current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            parts.append(_CONTEXT)
            current = current.__context__
        else:
            current = None
    if parts and parts[-1] in (_CAUSE, _CONTEXT):
        parts.pop()
    return readable("".join(reversed(parts)).rstrip("\n"))


class _ToolTraceback(logging.Formatter):
    """Formats toolreg's records; a tool's failure (the record dispatch logs, with the
    tool's exception as `tool_exception`) is followed by `_tool_traceback`."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        exc = getattr(record, "tool_exception", None)
        if isinstance(exc, BaseException):
            text += "\n" + _tool_traceback(exc)
        return text


@contextlib.contextmanager
def tool_failures(debug: bool, command: str) -> Iterator[None]:
    """Where a failing tool's traceback goes: with --debug to stderr, from the tool's own
    frames; otherwise nowhere. Without --debug, a failure's one-line warning goes nowhere
    either, since the observation printed says what failed; `serve` prints no
    observations: there the line goes to stderr (logging's last resort)."""
    logger = logging.getLogger("toolreg")
    handler: logging.Handler
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(_ToolTraceback("toolreg: %(message)s"))
    elif command != "serve":
        handler = logging.NullHandler()
    else:
        yield
        return
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
