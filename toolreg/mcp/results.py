"""What a mounted tool's call can bring back that is not a plain result: a result the
server did send but that breaks its own tool's `outputSchema` (that call fails alone; the
connection is fine), and the server's failure text (passed on under the registry's
`errors=` policy, like a local exception's message: see `dispatch.redaction.RemoteFailure`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["result_problem"]

_MAX_SHOWN = 60  # characters of a schema value quoted in a result problem


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
