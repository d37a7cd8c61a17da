"""What a model may read of an exception raised by the application's code.

`errors="redact"` (the default) sends the exception's type and message with what must not
leave the process replaced by `[redacted]`: credentials in URLs, absolute file paths, long
token-like strings, and every string value of the context the call was given (a user id, a
session token, a database URL: the application's, never the model's). `errors="mask"` sends
only that the tool failed; `errors="full"` sends the message as it is.

`ToolError` messages and validation messages are the application's and toolreg's own words
for the model: they are sent as written in every mode. A `RemoteFailure` (a mounted MCP
server's failure text) is not: it is another process's words, treated like a local
exception's message (redacted, masked or as it is), without a type name in front.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from ..params import ToolContext

__all__ = ["ERROR_MODES", "REDACTED", "ErrorMode", "RemoteFailure", "failure_text", "redact"]

ErrorMode = Literal["redact", "mask", "full"]
ERROR_MODES: Final = ("redact", "mask", "full")
REDACTED: Final = "[redacted]"


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Credentials in URLs, absolute paths, tokens: compiled on the first failure to redact
    (about half a millisecond `import toolreg` does not spend)."""
    url_credentials = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{1,20}://)[^\s/@:]*(?::[^\s/@]*)?@")
    absolute_path = re.compile(
        r"(?<![\w/.:-])(?:[A-Za-z]:\\[^\s'\"<>|:,;]*|~?/(?:[\w.@+-]+/)+[\w.@+-]*|~?/[\w.@+-]+\.\w+)"
    )
    # 24 or more characters of a key's alphabet that mix letters and digits: API keys,
    # tokens, hashes, session ids. Plain words and numbers stay.
    token = re.compile(
        r"(?<![\w+/=-])(?=[\w+/=-]*\d)(?=[\w+/=-]*[A-Za-z])[\w+/=-]{24,}(?![\w+/=-])"
    )
    return url_credentials, absolute_path, token


_MIN_SECRET = 4  # shorter context strings ("en", "1") would redact ordinary words
_MAX_WALK = 200  # context values looked at, at most


class RemoteFailure(Exception):
    """A tool's failure told by another process (a mounted MCP server's `isError` result or
    error answer) in `text`: what the model reads of it follows `errors=` like a local
    exception's message, never sent as written the way a `ToolError` is."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(text)


def redact(text: str, context: Any = None) -> str:
    """`text` with credentials, paths, tokens and the context's string values redacted."""
    for secret in sorted(_context_strings(context), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    url_credentials, absolute_path, token = _patterns()
    text = url_credentials.sub(lambda m: m.group(1) + REDACTED + "@", text)
    text = absolute_path.sub(REDACTED, text)
    return token.sub(REDACTED, text)


def failure_text(tool: str, exc: BaseException, detail: str, mode: ErrorMode, context: Any) -> str:
    """The model's message for a tool that raised `exc` (not a `ToolError`); `detail` is
    `exception_text(exc)`, made once by the caller (an `__str__` may be slow or raise: then
    the message names the exception's type only)."""
    if mode == "mask":
        return f"Tool '{tool}' failed."
    if isinstance(exc, RemoteFailure):  # the server's own message, kept whole
        return redact(exc.text, context) if mode == "redact" else exc.text
    if detail and mode == "redact":
        detail = redact(detail, context)
    return f"Tool '{tool}' failed: {type(exc).__name__}" + (f": {detail}" if detail else "")


def _context_strings(context: Any) -> set[str]:
    """The string values found in the call's context, a bounded walk through containers,
    dataclasses and plain objects."""
    if context is None:
        return set()
    found: set[str] = set()
    stack: list[tuple[Any, int]] = [(context, 0)]
    seen = 0
    while stack and seen < _MAX_WALK:
        value, depth = stack.pop()
        seen += 1
        if isinstance(value, str):
            if len(value) >= _MIN_SECRET:
                found.add(value)
            continue
        if depth >= 4 or isinstance(value, (int, float, bool, bytes)) or value is None:
            continue
        if isinstance(value, ToolContext):
            children: Any = [value.deps]
        elif isinstance(value, Mapping):
            children = list(value.values())  # the keys are names, not secrets
        elif isinstance(value, (list, tuple, set, frozenset)):
            children = list(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            children = [getattr(value, f.name, None) for f in dataclasses.fields(value)]
        else:
            children = list(getattr(value, "__dict__", {}).values())
        stack.extend((child, depth + 1) for child in children[:_MAX_WALK])
    return found
