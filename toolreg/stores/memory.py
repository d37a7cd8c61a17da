"""`MemoryStore`: states in this process's memory (tests, one process, a prototype).

It keeps what a real store keeps - JSON text, checked on the way in and out - so that a
conversation behaves the same over it as over SQLite or Redis; nothing outlives the
process, and other processes do not see it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .base import (
    DEFAULT_MAX_BYTES,
    StoredState,
    check_claim,
    check_expected,
    check_id,
    check_max_bytes,
    conflict,
    decode_state,
    encode_state,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """A `StateStore` (and `AsyncStateStore`) in a dict, safe across threads.

    For one process (tests, a single worker): the states go when the process does.

    Args:
        max_bytes: the largest state's JSON text it keeps (32 MB by default); a larger one is
            refused on `save`.

    Example:
        chat = Conversation(client, model, state_store=MemoryStore(), conversation_id="c1")
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = check_max_bytes(max_bytes)
        self._states: dict[str, tuple[int, str]] = {}
        self._claims: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def load(self, id: str) -> StoredState | None:
        check_id(id)
        with self._lock:
            row = self._states.get(id)
        return None if row is None else decode_state(id, row[1], row[0], self.max_bytes)

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        check_id(id)
        check_expected(expected_version)
        text = encode_state(id, state, self.max_bytes)
        with self._lock:
            row = self._states.get(id)
            found = None if row is None else row[0]
            if found != expected_version:
                raise conflict(id, expected_version, found)
            version = (found or 0) + 1
            self._states[id] = (version, text)
        return version

    def claim(self, id: str, token: str, ttl: float) -> bool:
        seconds = check_claim(id, token, ttl)
        now = time.monotonic()
        with self._lock:
            for name in [n for n, (_, until) in self._claims.items() if until <= now]:
                del self._claims[name]
            held = self._claims.get(id)
            if held is not None:
                return held[0] == token
            self._claims[id] = (token, now + seconds)
            return True

    def delete(self, id: str) -> bool:
        check_id(id)
        with self._lock:
            return self._states.pop(id, None) is not None

    # nothing here waits on I/O: the async methods are the sync ones
    async def aload(self, id: str) -> StoredState | None:
        return self.load(id)

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        return self.save(id, state, expected_version)

    async def aclaim(self, id: str, token: str, ttl: float) -> bool:
        return self.claim(id, token, ttl)

    async def adelete(self, id: str) -> bool:
        return self.delete(id)
