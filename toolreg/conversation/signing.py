"""Signing and fingerprints: what makes a saved conversation state and an approval bind.

- `canonical(value)` (`toolreg.jsonvalues`): the one encoding a state is signed and
  digested in;
- `signing_keys(key)`: `key=` of `export_state` / `from_state` / `state_store=`, checked;
- `sign(key, state)` and `verify(state, keys)`: HMAC-SHA256 over the canonical state
  without its `"signature"` (any of the keys verifies: rotation, newest first);
- `tool_fingerprint(tool)`: a digest of a tool's whole definition (what the model and the
  person were shown, every flag that decides how it runs);
- `call_digest(...)`: a pending call bound to its id, tool, arguments and the fingerprint.

Without a signature, anyone who can write a state can recompute the digests: the digest
protects the application that decides by digest, the signature protects everything.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from ..errors import ConversationStateError, UsageError
from ..jsonvalues import canonical
from ..tool import Tool

__all__ = [
    "MIN_KEY_BYTES",
    "SIGNATURE",
    "call_digest",
    "canonical",
    "sign",
    "signing_keys",
    "tool_fingerprint",
    "verify",
]

MIN_KEY_BYTES = 16
SIGNATURE = "signature"
"""The key of a signed state's signature (`"hmac-sha256:<hex>"`)."""
_SCHEME = "hmac-sha256:"
Json = dict[str, Any]


def signing_keys(key: Any) -> list[bytes] | None:
    """`key=` of `export_state` / `from_state`: bytes or str of at least 16 bytes, or a list
    of them, newest first (it signs with the first and verifies with any). None: unsigned."""
    if key is None:
        return None
    given = list(key) if isinstance(key, (list, tuple)) else [key]
    if not given:
        raise UsageError("key=[]: give at least one signing key (the newest first)")
    keys = []
    for k in given:
        if isinstance(k, str):
            k = k.encode("utf-8", "surrogatepass")
        if not isinstance(k, (bytes, bytearray)):
            raise UsageError(
                f"key must be bytes or str, or a list of them (newest first), not "
                f"{type(k).__name__}"
            )
        if len(k) < MIN_KEY_BYTES:
            raise UsageError(
                f"key is {len(k)} bytes long; a signing key needs at least {MIN_KEY_BYTES} "
                "(e.g. secrets.token_bytes(32), kept with the application's secrets)"
            )
        keys.append(bytes(k))
    return keys


def sign(key: bytes, state: Json) -> str:
    """The signature of `state` (without its own) with `key`."""
    unsigned = {k: v for k, v in state.items() if k != SIGNATURE}
    return _SCHEME + hmac.new(key, canonical(unsigned), hashlib.sha256).hexdigest()


def verify(state: Json, keys: list[bytes] | None) -> None:
    """Check the signature of `state` (its shape checked already) with any of `keys`; an
    unsigned state is refused where keys are given, and a signed one where none are."""
    signed = SIGNATURE in state
    if keys is None:
        if signed:
            raise ConversationStateError(
                "the conversation state is signed: give from_state() the key it was signed "
                "with (key=...)"
            )
        return
    if not signed:
        raise ConversationStateError(
            "the conversation state is not signed, and from_state() was given a key: an "
            "unsigned state is refused where signed ones are expected"
        )
    given = state[SIGNATURE]
    if not isinstance(given, str):
        raise ConversationStateError("not a usable conversation state: its signature is not text")
    try:
        expected = [sign(k, state).encode() for k in keys]
    except (TypeError, ValueError, RecursionError):  # _check_shape leaves none of these
        raise ConversationStateError(
            "not a usable conversation state: it cannot be encoded to verify its signature"
        ) from None
    found = given.encode("utf-8", "surrogatepass")
    if not any(hmac.compare_digest(e, found) for e in expected):
        raise ConversationStateError(
            "the conversation state's signature does not match: it was changed after "
            "export_state(), or signed with another key"
        )


def tool_fingerprint(tool: Tool) -> str:
    """A digest of a tool's whole definition: what the model and the person were shown
    (name, description, parameters) and every flag that decides how it runs."""
    definition = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": tool.strict,
        "read_only": tool.read_only,
        "destructive": tool.destructive,
        "requires_confirmation": tool.requires_confirmation,
        "idempotent": tool.idempotent,
        "timeout": tool.timeout,
        "return_direct": tool.return_direct,
        "max_result_chars": tool.max_result_chars,
        "tags": sorted(tool.tags),
        "coerce": tool.coerce,
        "flatten": tool.flatten,
        "title": tool.title,
    }
    if tool.examples:  # shown to the model: part of what was approved (none: as before)
        definition["examples"] = list(tool.examples)
    if tool.scopes:  # only when set: the digests of tools without scopes stay as they were
        definition["scopes"] = sorted(tool.scopes)
    return "sha256:" + hashlib.sha256(canonical(definition)).hexdigest()


def call_digest(call_id: str, tool_name: str, arguments: Any, fingerprint: str) -> str:
    """`PendingCall.digest`: the call id, the tool's name, the canonical arguments and the
    tool's definition (`tool_fingerprint`), bound together."""
    bound = {"call_id": call_id, "tool_name": tool_name, "arguments": arguments}
    return "sha256:" + hashlib.sha256(canonical({**bound, "tool": fingerprint})).hexdigest()
