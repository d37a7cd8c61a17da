"""What a mounted tool's call can bring back that is not a plain result: a result too long
(cut at `MAX_RESULT_CHARS`), a result the server did send but that breaks its own tool's
`outputSchema` (that call fails alone; the connection is fine), the server's failure
text (passed on under the registry's
`errors=` policy, like a local exception's message: see `dispatch.redaction.RemoteFailure`),
and images, audio and embedded files (`remote_parts`: bounded, checked, kept as parts).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import mcp_types as types

from ..content import MAX_PARTS, MAX_RESULT_BYTES, Media, Part, bounded, from_wire
from ..dispatch.redaction import RemoteFailure
from ..dispatch.render import truncate

__all__ = [
    "MAX_FAILURE_CHARS",
    "MAX_REMOTE_BYTES",
    "MAX_RESULT_CHARS",
    "has_media",
    "remote_failure",
    "remote_parts",
    "remote_result",
    "result_problem",
    "shown",
]

MAX_FAILURE_CHARS = 2000
"""A remote failure text is cut here (the model reads it as the call's error message)."""

MAX_RESULT_CHARS = 100_000
"""A remote result's text is cut here, whatever the server sent (inline or as a task's
result); a registry's own `max_result_chars` may cut it shorter."""


MAX_REMOTE_BYTES = MAX_RESULT_BYTES
"""The bytes of a remote result's images, audio and files together, whatever the server
sent (10 MiB); a registry's own `max_result_bytes` may bound them lower."""


def remote_parts(blocks: Sequence[Any]) -> tuple[tuple[Part, ...], int] | None:
    """A remote result's content blocks as parts, and how many of its media were refused;
    None when it holds no image, audio or embedded resource (its text is then the result).

    The server's blocks are untrusted: at most `content.MAX_PARTS` are read (a marker says
    how many more there were), text is cut at `MAX_RESULT_CHARS` in all, media past
    `MAX_REMOTE_BYTES` in all are left out; an image or sound whose data is not base64, whose
    media type is malformed or of another kind, or whose bytes are not the type it says
    (`content.SIGNATURES`), is left out with a marker saying so (`content.from_wire`): the
    call still answers the rest. A resource link (not embedded) is its JSON, as text."""
    if not any(
        isinstance(b, (types.ImageContent, types.AudioContent, types.EmbeddedResource))
        for b in blocks
    ):
        return None
    parts: list[Part] = []
    refused = 0
    more = len(blocks) - MAX_PARTS + 1 if len(blocks) > MAX_PARTS else 0
    for block in blocks[: MAX_PARTS - 1] if more else blocks:
        part = _part(block)
        if isinstance(part, str) and not isinstance(block, (types.TextContent, types.ResourceLink)):
            refused += 1
        parts.append(part)
    kept = bounded(parts, MAX_RESULT_CHARS, MAX_REMOTE_BYTES)
    if more:  # at most MAX_PARTS in all, as dispatch bounds any result
        kept += (f"[{more} more content blocks left out: at most {MAX_PARTS} in one result]",)
    return kept, refused


def _part(block: Any) -> Part:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return from_wire("image", block.data, block.mime_type, limit=MAX_REMOTE_BYTES)
    if isinstance(block, types.AudioContent):
        return from_wire("audio", block.data, block.mime_type, limit=MAX_REMOTE_BYTES)
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            media_type = resource.mime_type or "text/plain"
            return from_wire(
                "file",
                None,
                media_type,
                text=resource.text,
                uri=resource.uri,
                limit=MAX_REMOTE_BYTES,
            )
        media_type = resource.mime_type or "application/octet-stream"
        return from_wire(
            "file", resource.blob, media_type, uri=resource.uri, limit=MAX_REMOTE_BYTES
        )
    dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(dumped, ensure_ascii=False)


def has_media(parts: Sequence[Part]) -> bool:
    """Whether any part is an image, a sound or a file."""
    return any(isinstance(p, Media) for p in parts)


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
            f"{_path(cause.json_path)} "
            f"({cause.validator}: {shown(cause.validator_value, _MAX_SHOWN)})."
        )
    text = str(exc)
    if text.startswith("Tool ") and text.endswith("did not return structured content"):
        return "its result has no structuredContent, which the tool's output schema requires."
    if text.startswith("Invalid schema for tool "):
        return "its output schema is not a valid JSON Schema, so no result of it can be checked."
    return None


def _path(path: str) -> str:
    return path if len(path) <= _MAX_SHOWN else path[: _MAX_SHOWN - 3] + "..."


def shown(value: object, limit: int = 80) -> str:
    """`value` quoted for a message or a log line: control and non-ASCII characters
    escaped, at most `limit` characters."""
    text = ascii(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
