"""What a mounted tool's call can bring back that is not a plain result: a result too long
(cut at `MAX_RESULT_CHARS`), a result the server did send but that breaks its own tool's
`outputSchema` (that call fails alone; the connection is fine), and the server's failure
text (passed on under the registry's
`errors=` policy, like a local exception's message: see `dispatch.redaction.RemoteFailure`).
"""

from __future__ import annotations

from typing import Any

from ..dispatch.redaction import RemoteFailure
from ..dispatch.render import truncate

__all__ = [
    "MAX_FAILURE_CHARS",
    "MAX_RESULT_CHARS",
    "remote_failure",
    "remote_result",
    "result_problem",
]

MAX_FAILURE_CHARS = 2000
"""A remote failure text is cut here (the model reads it as the call's error message)."""

MAX_RESULT_CHARS = 100_000
"""A remote result's text is cut here, whatever the server sent (inline or as a task's
result); a registry's own `max_result_chars` may cut it shorter."""


def remote_result(text: str) -> str:
    """A remote result's text, at most `MAX_RESULT_CHARS` characters (with a marker)."""
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return truncate(text, MAX_RESULT_CHARS)


_MAX_SHOWN = 60  # characters of a schema value quoted in a result problem


def remote_failure(local: str, text: str) -> RemoteFailure:
    """The failure of the mounted tool `local` in the server's words `text` (an `isError`
    result's text or a JSON-RPC error's message), at most `MAX_FAILURE_CHARS` characters."""
    if not text.strip():
        text = f"Tool '{local}' failed."
    elif len(text) > MAX_FAILURE_CHARS:
        text = f"{text[:MAX_FAILURE_CHARS]} [cut: {len(text) - MAX_FAILURE_CHARS} characters]"
    return RemoteFailure(text)


def result_problem(exc: BaseException) -> str | None:
    """What is wrong with a result the server sent, in toolreg's words, when `exc` is the
    SDK's refusal of it (its structured content against the tool's `outputSchema`); None
    when `exc` is about something else (the transport). The server's values are not
    quoted: only where the result breaks the schema, and the schema's rule there."""
    if not isinstance(exc, RuntimeError):
        return None
    from jsonschema.exceptions import ValidationError

    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return (
            "its result does not match the tool's output schema at "
            f"{_path(cause.json_path)} ({cause.validator}: {_shown(cause.validator_value)})."
        )
    text = str(exc)
    if text.startswith("Tool ") and text.endswith("did not return structured content"):
        return "its result has no structuredContent, which the tool's output schema requires."
    if text.startswith("Invalid schema for tool "):
        return "its output schema is not a valid JSON Schema, so no result of it can be checked."
    return None


def _path(path: str) -> str:
    return path if len(path) <= _MAX_SHOWN else path[: _MAX_SHOWN - 3] + "..."


def _shown(value: Any) -> str:
    shown = ascii(value)
    return shown if len(shown) <= _MAX_SHOWN else shown[: _MAX_SHOWN - 4] + "...'"
