"""The endpoints a dialect names (`Dialect.api`): how a driver calls each one and reads it.

Both answer in the one shape the loop reads (`stream.Normalized`), plain or streamed.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ConversationError
from .responses_api import ResponseStreamAssembler, normalize_response
from .stream import Normalized, StreamAssembler, normalize_completion

__all__ = ["ENDPOINTS", "Assembler", "Endpoint", "endpoint_errors", "endpoint_url"]


class Assembler(Protocol):
    """Reads a stream piece by piece; `result()` is the normalized answer; `completed()`
    the calls complete so far and not given out yet, each alone in a message that the
    format's `parse_calls` reads."""

    def feed(self, chunk: Any) -> None: ...

    def completed(self) -> list[dict[str, Any]]: ...

    def result(self) -> Normalized: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """`method(client)` is the SDK's create method; `normalize` reads a plain answer and
    `assembler(on_text)` a streamed one; `usage_option`: a stream reports usage only when
    asked with `stream_options={"include_usage": True}`."""

    method: Callable[[Any], Callable[..., Any]]
    normalize: Callable[[Any], Normalized]
    assembler: Callable[[Callable[[str], None] | None], Assembler]
    usage_option: bool


ENDPOINTS: dict[str, Endpoint] = {
    "chat.completions": Endpoint(
        lambda client: client.chat.completions.create,
        normalize_completion,
        StreamAssembler,
        usage_option=True,
    ),
    "responses": Endpoint(
        lambda client: client.responses.create,
        normalize_response,
        ResponseStreamAssembler,
        usage_option=False,
    ),
}


def endpoint_url(client: Any) -> str | None:
    """The client's base URL to show in errors: no user name or password, no query values
    (an API key passed as `?key=...`), no trailing slash; None when it has none."""
    base = getattr(client, "base_url", None)
    if base is None:
        return None
    try:
        parts = urllib.parse.urlsplit(str(base))
    except ValueError:
        return None
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    keys = [k for k, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
    query = "&".join(f"{urllib.parse.quote(k)}=***" for k in keys)
    path = parts.path.rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme, netloc, path, query, "")) or None


def _endpoint_error(exc: Exception) -> ConversationError:
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    message = message or getattr(exc, "message", None) or str(exc)
    if status is not None:
        return ConversationError(
            f"the endpoint answered HTTP {status}: {message}", status_code=status
        )
    return ConversationError(f"the endpoint failed: {type(exc).__name__}: {message}")


_TRANSPORT_MODULES = ("openai", "httpx", "httpcore")  # httpx2 too


@contextlib.contextmanager
def endpoint_errors() -> Iterator[None]:
    """Failures of the endpoint (the SDK's errors) become `ConversationError`s."""
    try:
        yield
    except ConversationError:
        raise
    except Exception as exc:
        if _is_sdk_error(exc):
            raise _endpoint_error(exc) from exc
        raise


def _is_sdk_error(exc: Exception) -> bool:
    """Raised by the SDK or its transport, or a body that is not JSON (a malformed answer).

    Anything else (a TypeError for an unknown request option, an error in `on_text`)
    propagates unchanged: it is a bug to fix, not an endpoint failure.
    """
    if isinstance(exc, json.JSONDecodeError):
        return True
    return any(cls.__module__.startswith(_TRANSPORT_MODULES) for cls in type(exc).__mro__)
