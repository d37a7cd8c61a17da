"""Idempotency keys: one stable key per tool call, for tools with side effects to deduplicate.

```python
@register_tool(destructive=True)
def charge(amount: int, ctx: ToolContext[Shop]) -> str:
    ctx.deps.payments.charge(amount, idempotency_key=ctx.idempotency_key)  # once, whatever retries
    return "charged"
```

A conversation gives every call it runs a key (`ToolCall.idempotency_key`, the tool's
`ToolContext.idempotency_key`, `ToolResult.idempotency_key`, hooks, stream events and
telemetry spans), derived by `idempotency_key` from

1. the conversation's id (its `conversation_id` with a state store; otherwise one made when
   the conversation is built, kept by `export_state` / `from_state`),
2. the turn's id (made for the turn's first round of calls, kept with a paused turn),
3. the call's id (the model's, or `toolreg_<round>_<index>` for a call without a usable one:
   the id a pending call gets),
4. the tool's name, and
5. the call's arguments as the model sent them, decoded and written as canonical JSON
   (`canonical_arguments`: sorted keys, no whitespace, `ensure_ascii=False`).

So the key is the same whenever the same call is run again: a resume after approval (in
this process or from a saved state in another), a re-dispatch of a paused turn after a
crash, a durable replay; and a call the model makes again in the same turn, with the same
arguments, after its tool failed while it ran (`ToolRetry`, a time limit, an exception)
keeps the key of the call it repeats. Different arguments (a person's edit included) give a
different key. `dispatch_tool(..., idempotency_key=...)` takes a key from a loop of the
application's own.

Over MCP the key travels in the request's `_meta` under `META_KEY`
(`"io.toolreg/idempotency-key"`: the MCP specification names none; SEP-3182's proposed
`idempotencyKey` parameter was not adopted): a mounted server receives it, and `toolreg
serve` hands a key it receives to the tool's `ToolContext`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from .jsonvalues import strict_decoder

__all__ = [
    "MAX_KEY_CHARS",
    "META_KEY",
    "canonical_arguments",
    "idempotency_key",
    "key_from",
    "key_of",
    "key_prefix",
    "new_id",
    "received_key",
]

META_KEY = "io.toolreg/idempotency-key"
"""The key of a tool call's idempotency key in an MCP request's `_meta`."""

MAX_KEY_CHARS = 255
"""The longest idempotency key dispatch and `toolreg serve` accept from a caller."""

_VERSION = "toolreg-idempotency-1"  # the derivation's own name: a new one changes every key

_text: Callable[[str], str] = json.encoder.encode_basestring
"""A str as `json.dumps(..., ensure_ascii=False)` writes it (C-accelerated)."""


def canonical_arguments(arguments: str | bytes | Mapping[str, Any] | None) -> str:
    """A call's `arguments` as canonical JSON (sorted keys, no whitespace,
    `ensure_ascii=False`), decoded first when they are JSON text or bytes. `None` and `""`
    are `{}` (as dispatch reads them); text that is no JSON (or too deep to decode) is kept
    as one JSON string, so it still gives one key, different from any valid arguments."""
    value: Any = arguments
    if type(arguments) is str:  # what models send: the fast path
        if not arguments:
            return "{}"
        try:
            value = _decode(arguments)
        except (ValueError, RecursionError):
            return _CANONICAL.encode(arguments)
    elif arguments is None:
        return "{}"
    elif isinstance(arguments, (bytes, bytearray)):
        if not arguments:
            return "{}"
        try:
            value = _decode(bytes(arguments).decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            return _CANONICAL.encode(repr(bytes(arguments)))
    elif isinstance(arguments, str):  # a str subclass
        return canonical_arguments(str(arguments))
    try:
        return _CANONICAL.encode(value)
    except (TypeError, ValueError, RecursionError):  # a mapping of non-JSON values
        return _CANONICAL.encode(repr(value))


_decode = strict_decoder.decode


class _Canonical:
    """Canonical JSON, fast: CPython's C encoder made once (`JSONEncoder.encode` makes one
    per call), without the circular check (a cyclic mapping is too deep: RecursionError);
    `JSONEncoder` where there is no C encoder."""

    def __init__(self) -> None:
        self.fallback = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        make = getattr(json.encoder, "c_make_encoder", None)
        self.fast = (
            None if make is None else make(None, _refuse, _text, None, ":", ",", True, False, True)
        )

    def encode(self, value: Any) -> str:
        if self.fast is None or type(value) is str:
            return self.fallback.encode(value)
        return "".join(self.fast(value, 0))


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


_CANONICAL = _Canonical()


def key_prefix(conversation_id: str, turn_id: str) -> str:
    """The part of a key's material a turn's calls share (a conversation makes it once per
    turn): the canonical JSON of the list up to `turn_id`, after `conversation_id`."""
    return f'["{_VERSION}",{_text(conversation_id)},{_text(turn_id)},'


def key_from(prefix: str, call_id: str, tool_name: str, canonical: str) -> str:
    """The key of a call from its turn's `prefix` (`key_prefix`), its `call_id`, its
    `tool_name` and its `canonical` arguments (`canonical_arguments`)."""
    material = f"{prefix}{_text(call_id)},{_text(tool_name)},{canonical}]"
    h = hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()
    # the first 128 bits as an RFC 9562 UUID, version 8 (custom) and its variant bits
    return f"{h[:8]}-{h[8:12]}-8{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"


def key_of(conversation_id: str, turn_id: str, call_id: str, tool_name: str, canonical: str) -> str:
    """`idempotency_key(conversation_id, turn_id, call_id, tool_name, arguments)` with the
    arguments already written by `canonical_arguments` (`canonical`)."""
    return key_from(key_prefix(conversation_id, turn_id), call_id, tool_name, canonical)


def idempotency_key(
    conversation_id: str,
    turn_id: str,
    call_id: str,
    tool_name: str,
    arguments: str | bytes | Mapping[str, Any] | None,
) -> str:
    """The idempotency key of one tool call: the SHA-256 of the canonical JSON of the list
    `["toolreg-idempotency-1", conversation_id, turn_id, call_id, tool_name, arguments]`
    (arguments as `canonical_arguments` writes them), its first 128 bits written as a UUID
    (version 8: 36 characters, which payment and ticket APIs accept as an idempotency key).

    Args:
        conversation_id: the conversation's id (`Conversation.conversation_id`).
        turn_id: the turn's id (kept with a paused turn's state).
        call_id: the call's id: the model's, or `toolreg_<round>_<index>` for a call
            without a usable one.
        tool_name: the name the model called.
        arguments: the model's arguments: JSON text, bytes or a mapping (`None`: `{}`).

    Example:
        key = idempotency_key("chat-42", turn_id, "call_1", "charge", '{"amount": 5}')
    """
    return key_of(conversation_id, turn_id, call_id, tool_name, canonical_arguments(arguments))


_PROCESS = os.urandom(12).hex()  # 96 random bits, made once per process (and per fork)
_SERIAL = itertools.count()


def _new_process() -> None:
    global _PROCESS
    _PROCESS = os.urandom(12).hex()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_process)


def new_id() -> str:
    """A new id, unique across processes (a conversation's or a turn's): 96 random bits
    made once per process, then a count (no system call per id)."""
    return f"{_PROCESS}{next(_SERIAL):08x}"


def received_key(value: object) -> str | None:
    """`value`, an idempotency key from outside (an MCP request's `_meta`, a saved state),
    if it is one: text of 1 to `MAX_KEY_CHARS` printable characters; else None."""
    if type(value) is not str or not 0 < len(value) <= MAX_KEY_CHARS or not value.isprintable():
        return None
    return value
