"""Where conversation states live between requests: `Conversation(state_store=...)`.

- `base`: the `StateStore` and `AsyncStateStore` protocols (`load`, compare-and-set
  `save`, `claim` for what must happen once, `delete`), `StoredState`, the id rules;
- `memory`: `MemoryStore`, in this process;
- `sqlite`: `SQLiteStore`, one database file, safe across the processes of one machine;
- `redis`: `RedisStore`, for many machines (the `redis` extra, imported when it is made).
"""

from ..errors import StateConflictError
from .base import (
    DEFAULT_MAX_BYTES,
    ID_PATTERN,
    MAX_ID_LENGTH,
    AsyncStateStore,
    StateStore,
    StoredState,
)
from .memory import MemoryStore
from .redis import RedisStore
from .sqlite import SQLiteStore

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ID_PATTERN",
    "MAX_ID_LENGTH",
    "AsyncStateStore",
    "MemoryStore",
    "RedisStore",
    "SQLiteStore",
    "StateConflictError",
    "StateStore",
    "StoredState",
]
