"""What every provider's endpoint shares: its URL as errors name it (redacted), and the
SDK's failures as `ConversationError`s."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

from ..errors import ConversationError

__all__ = ["endpoint_errors", "endpoint_url"]


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
    inner = body.get("error") if isinstance(body, dict) else None
    if message is None and isinstance(inner, dict):  # Anthropic: {"type": "error", "error": ...}
        message = inner.get("message")
    message = message or getattr(exc, "message", None) or str(exc)
    if status is not None:
        return ConversationError(
            f"the endpoint answered HTTP {status}: {message}", status_code=status
        )
    return ConversationError(f"the endpoint failed: {type(exc).__name__}: {message}")


_TRANSPORT_MODULES = ("openai", "anthropic", "httpx", "httpcore")  # httpx2 too


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
