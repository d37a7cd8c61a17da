"""What every store is: the `StateStore` / `AsyncStateStore` protocols, `StoredState`, and
the checks all stores share (ids, tokens, time limits, the JSON text a state is kept as).

A store keeps JSON objects under ids, each with a version the store counts up on every
save: `save(id, state, expected_version)` writes only if the store still holds
`expected_version` (None: only if it holds nothing under `id`), else `StateConflictError`.
`claim(id, token, ttl)` takes a name for `ttl` seconds, once: work that must happen once
(a pending approval resumed) claims it first, and the second claimant is told no.

A state is kept as JSON text of at most `max_bytes` (pure ASCII: a lone surrogate in a
history survives the trip); text read back is data from storage and is checked again (its
size before it is decoded, strict JSON, an object) - a malformed or oversized row is a
`ConversationStateError`, never a crash or an unbounded read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import ConversationStateError, StateConflictError, UsageError, with_article
from ..jsonvalues import strict_decoder

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ID_PATTERN",
    "MAX_ID_LENGTH",
    "MAX_TTL",
    "AsyncStateStore",
    "StateStore",
    "StoredState",
    "check_claim",
    "check_expected",
    "check_id",
    "check_max_bytes",
    "conflict",
    "decode_state",
    "encode_state",
]

MAX_ID_LENGTH = 256
"""The longest conversation id (or claim name) a store accepts, in characters."""
ID_PATTERN = re.compile(rf"[A-Za-z0-9_.:@-]{{1,{MAX_ID_LENGTH}}}")
"""An id or a claim's name: 1 to 256 of ASCII letters, digits and `_ . : @ -`."""
DEFAULT_MAX_BYTES = 32 << 20
"""A stored state's JSON text at most, by default (a conversation state's own bound)."""
MAX_TTL = 30 * 86400.0
"""A claim lasts at most 30 days."""


@dataclass(frozen=True, slots=True)
class StoredState:
    """A state as a store holds it: the JSON object and the version it was saved as."""

    state: dict[str, Any]
    version: int


@runtime_checkable
class StateStore(Protocol):
    """A store for `Conversation(state_store=...)`; `MemoryStore`, `SQLiteStore` and
    `RedisStore` are the built-in ones."""

    def load(self, id: str) -> StoredState | None:
        """The state saved under `id` and its version, or None."""
        ...

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        """Write `state` under `id` if the store holds `expected_version` there (None: if
        it holds nothing); the new version. Otherwise `StateConflictError`."""
        ...

    def claim(self, id: str, token: str, ttl: float) -> bool:
        """Take the name `id` for `ttl` seconds for `token`: True if it is `token`'s now
        (taken by this call, or earlier by the same token), False if another holds it."""
        ...

    def delete(self, id: str) -> bool:
        """Forget the state under `id`; True if there was one."""
        ...


@runtime_checkable
class AsyncStateStore(Protocol):
    """`StateStore` for `AsyncConversation`: the same methods, awaited (the built-in
    stores have both, so one store object serves both drivers)."""

    async def aload(self, id: str) -> StoredState | None: ...

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int: ...

    async def aclaim(self, id: str, token: str, ttl: float) -> bool: ...

    async def adelete(self, id: str) -> bool: ...


def check_id(id: Any, what: str = "id") -> str:
    """`id` if it is a valid id, else a `UsageError` that says what one is."""
    if not isinstance(id, str) or not ID_PATTERN.fullmatch(id):
        shown = repr(id)[:60] if isinstance(id, str) else type(id).__name__
        raise UsageError(
            f"{what} {shown} is not a valid store id: 1 to {MAX_ID_LENGTH} characters of "
            "ASCII letters, digits and _ . : @ - (e.g. a UUID, or 'user-42:chat-7')"
        )
    return id


def check_claim(id: Any, token: Any, ttl: Any) -> float:
    """The checks of `claim`'s arguments; `ttl` in seconds."""
    check_id(id, "claim id")
    check_id(token, "claim token")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= MAX_TTL:
        raise UsageError(f"claim ttl={ttl!r}: seconds, more than 0 and at most {MAX_TTL:.0f}")
    return float(ttl)


def check_expected(version: Any) -> int | None:
    """`save`'s `expected_version`: a version `load` returned, or None."""
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise UsageError(f"expected_version={version!r}: a version load() returned, or None")
    return version


def check_max_bytes(max_bytes: Any) -> int:
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 2:
        raise UsageError(f"max_bytes={max_bytes!r}: a whole number of bytes (at least 2)")
    return max_bytes


def conflict(id: str, expected: int | None, found: int | None) -> StateConflictError:
    held = "nothing" if found is None else f"version {found}"
    wanted = "nothing (a new state)" if expected is None else f"version {expected}"
    return StateConflictError(
        f"the stored state {id!r} changed since it was loaded: the save expected {wanted} "
        f"there, the store holds {held} (another writer saved first); load it again",
        id=id,
        expected=expected,
        found=found,
    )


def encode_state(id: str, state: Any, max_bytes: int) -> str:
    """`state` as the JSON text a store keeps; a `UsageError` for anything else."""
    if not isinstance(state, dict):
        raise UsageError(f"save({id!r}): a state is a dict, not {type(state).__name__}")
    try:
        text = json.dumps(state, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as err:
        raise UsageError(f"save({id!r}): the state is not plain JSON ({err})"[:300]) from None
    if len(text) > max_bytes:
        raise UsageError(
            f"save({id!r}): the state is {len(text)} bytes of JSON; this store keeps at most "
            f"{max_bytes} (max_bytes=): trim the history (max_history_messages=...)"
        )
    return text


def decode_state(
    id: str, text: Any, version: Any, max_bytes: int, *, size: int | None = None
) -> StoredState:
    """A row read back from storage, checked; `ConversationStateError` if it is unusable.
    `size`: the length the store measured without reading the text (then None)."""

    def bad(problem: str) -> ConversationStateError:
        return ConversationStateError(f"the stored state {id!r} is not usable: {problem}")

    if isinstance(version, bytes):
        version = version.decode("ascii", "replace")
    if isinstance(version, str) and version.isdigit() and len(version) < 19:
        version = int(version)
    if type(version) is not int or version < 1:
        raise bad("its version is not a whole number")
    if size is not None and size > max_bytes:
        raise bad(f"it is larger than {max_bytes} bytes")
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise bad(f"it is larger than {max_bytes} bytes")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise bad("it is not UTF-8 text") from None
    if not isinstance(text, str):
        raise bad(f"it is {with_article(type(text).__name__)}, not JSON text")
    if len(text) > max_bytes:
        raise bad(f"it is larger than {max_bytes} bytes")
    try:
        state = strict_decoder.decode(text)
    except (ValueError, RecursionError):
        raise bad("it is not JSON") from None
    if not isinstance(state, dict):
        raise bad("it is not a JSON object")
    return StoredState(state, version)
