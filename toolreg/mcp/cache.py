"""Result caching for a served registry: read-only and idempotent tools, per caller.

`asgi_app(registry, cache=ResultCache(ttl=60, max_entries=1024))`: a successful result of
a tool registered `read_only=True` or `idempotent=True` (and needing no confirmation) is
kept `ttl` seconds, keyed by the tool, its arguments in canonical JSON and the caller's
identity (its token's subject with `auth=`, else its address), so one caller never gets
another's result. At most `max_entries` results are kept (least recently used go first).
Off unless `cache=` is given; kept in the process (each worker has its own).

Authorization comes first: the caller's token is verified, its scopes and rate limits are
checked and the server's `context=` factory runs for every call, cached or not, so a caller
the factory refuses (a revoked user, a suspended tenant) is refused at its next call, never
answered from an entry kept from before.

The key is the caller's identity, not the whole request: a `context=` factory that reads
other headers (a tenant header, say) makes results that differ by more than the caller;
do not cache those tools' results.
"""

from __future__ import annotations

import collections
import json
import math
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import UsageError
from ..result import ToolResult
from ..tool import Tool

__all__ = ["ResultCache"]

_Key = tuple[str, str | None, str, str]  # tool, version, arguments, caller


@dataclass(frozen=True, slots=True)
class ResultCache:
    """`ttl` seconds a result is kept; `max_entries` results at most (LRU)."""

    ttl: float = 60.0
    max_entries: int = 1024
    _entries: collections.OrderedDict[_Key, tuple[Tool, ToolResult, float]] = field(
        init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ttl = self.ttl
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl):
            raise UsageError(f"ResultCache(ttl={ttl!r}): a number of seconds > 0, e.g. ttl=60")
        if ttl <= 0:
            raise UsageError(f"ResultCache(ttl={ttl!r}): a number of seconds > 0, e.g. ttl=60")
        size = self.max_entries
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise UsageError(f"ResultCache(max_entries={size!r}): a whole number >= 1")
        object.__setattr__(self, "_entries", collections.OrderedDict())
        object.__setattr__(self, "_lock", threading.Lock())

    @staticmethod
    def applies(tool: Tool) -> bool:
        return (tool.read_only or tool.idempotent) and not tool.needs_confirmation

    @staticmethod
    def key(tool: Tool, arguments: Any, identity: str) -> _Key | None:
        try:
            canonical = json.dumps(
                arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
        except (TypeError, ValueError, RecursionError):
            return None
        return tool.name, tool.version, canonical, identity

    def get(self, key: _Key, tool: Tool, call_id: str | None) -> ToolResult | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] is not tool or entry[2] <= time.monotonic():
                del self._entries[key]  # expired, or the tool was registered again
                return None
            self._entries.move_to_end(key)
        return replace(entry[1], call_id=call_id)

    def put(self, key: _Key, tool: Tool, result: ToolResult) -> None:
        if not result.ok:
            return
        with self._lock:
            self._entries[key] = (tool, result, time.monotonic() + self.ttl)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
