"""`SQLiteStore`: states in one SQLite file (stdlib `sqlite3`), the store for one machine.

Safe across threads and processes on one host: the database runs in WAL mode (readers
never wait for the writer), and every write is one `BEGIN IMMEDIATE` transaction that
reads the version and writes the state (or the claim) while holding the write lock, so
two processes cannot both see version 3 and both write version 4. Each thread (and each
process: a connection never crosses a fork) has its own connection; `busy_timeout`
seconds is how long a write waits for another process's transaction before it fails.
Not for a database on a network file system (SQLite's locks are not reliable there):
several machines share a `RedisStore`.

Tables (created when missing): `toolreg_states(id, version, state, updated)` and
`toolreg_claims(id, token, expires)`.

A file that cannot be used (corrupt, not a database, read-only, locked by another process
past `busy_timeout`, in a directory that is gone) is a `StateStoreError` naming the file
and the reason, never a bare `sqlite3` error; a write that fails is rolled back whole, so
the file holds what it held before.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import StateStoreError, UsageError, exception_text
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

__all__ = ["SQLiteStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS toolreg_states ("
    "id TEXT PRIMARY KEY, version INTEGER NOT NULL, state TEXT NOT NULL, updated REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS toolreg_claims ("
    "id TEXT PRIMARY KEY, token TEXT NOT NULL, expires REAL NOT NULL)",
)


class SQLiteStore:
    """A `StateStore` (and `AsyncStateStore`) in the SQLite database at `path`.

    The default store: the standard library's `sqlite3` in WAL mode, safe for the processes
    of one machine (not on a network file system).

    Args:
        path: the database file (created when missing); not `":memory:"`, which is one
            connection's own database (use `MemoryStore`).
        max_bytes: the largest state's JSON text it keeps (32 MB by default).
        busy_timeout: how long a writer waits for another's lock, in seconds.

    Raises:
        UsageError: `path` is `":memory:"`, or `busy_timeout` is not a number of seconds.
        StateStoreError: the file cannot be opened as a database (corrupt, not a SQLite
            file, a directory that is missing or not writable); every method raises it
            too when the file fails it later, naming the file.

    Example:
        store = SQLiteStore("conversations.db")
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        busy_timeout: float = 10.0,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or str(path) in ("", ":memory:"):
            raise UsageError(
                f"SQLiteStore(path={path!r}): the path of a database file (':memory:' is "
                "one connection's own database: use MemoryStore)"
            )
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)):
            raise UsageError(f"busy_timeout={busy_timeout!r}: seconds")
        self.path = Path(path)
        self.max_bytes = check_max_bytes(max_bytes)
        self.busy_timeout = float(busy_timeout)
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        with self._failing("open"), self._write() as db:  # fails now, not at the first save
            for statement in _SCHEMA:
                db.execute(statement)

    @contextlib.contextmanager
    def _failing(self, operation: str, id: str | None = None) -> Iterator[None]:
        """A `sqlite3` error of `operation` as a `StateStoreError` naming the file."""
        try:
            yield
        except sqlite3.Error as err:
            what = operation if id is None else f"{operation} {id!r}"
            raise StateStoreError(
                f"the SQLite store {self.path}: cannot {what}: {_reason(err, self)}",
                store=str(self.path),
                operation=operation,
                id=id,
            ) from err

    # -- connections -----------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        held = getattr(self._local, "held", None)
        if held is not None and held[0] == os.getpid():
            return held[1]  # type: ignore[no-any-return]
        db = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        db.execute("PRAGMA journal_mode=WAL")
        self._local.held = (os.getpid(), db)
        with self._lock:
            self._opened.append(db)
        return db

    def _write(self) -> _Transaction:
        return _Transaction(self._connection())

    def close(self) -> None:
        """Close the connections this process opened (the store opens new ones if used)."""
        with self._lock:
            opened, self._opened = self._opened, []
        for db in opened:
            db.close()
        self._local = threading.local()

    # -- the protocol ----------------------------------------------------------------------

    def load(self, id: str) -> StoredState | None:
        check_id(id)
        with self._failing("load", id):
            row = (
                self._connection()
                .execute(
                    "SELECT version, CASE WHEN length(CAST(state AS BLOB)) <= ? THEN state "
                    "END, length(CAST(state AS BLOB)) FROM toolreg_states WHERE id = ?",
                    (self.max_bytes, id),
                )
                .fetchone()
            )
        if row is None:
            return None
        version, text, size = row
        return decode_state(id, text, version, self.max_bytes, size=size)

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        check_id(id)
        check_expected(expected_version)
        text = encode_state(id, state, self.max_bytes)
        with self._failing("save", id), self._write() as db:
            row = db.execute("SELECT version FROM toolreg_states WHERE id = ?", (id,)).fetchone()
            found = None if row is None else row[0]
            if found != expected_version or (found is not None and type(found) is not int):
                raise conflict(id, expected_version, found if type(found) is int else None)
            version = (found or 0) + 1
            db.execute(
                "INSERT INTO toolreg_states (id, version, state, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET version = excluded.version, "
                "state = excluded.state, updated = excluded.updated",
                (id, version, text, time.time()),
            )
        return version

    def claim(self, id: str, token: str, ttl: float) -> bool:
        seconds = check_claim(id, token, ttl)
        with self._failing("claim", id), self._write() as db:
            now = time.time()
            db.execute("DELETE FROM toolreg_claims WHERE expires <= ?", (now,))
            row = db.execute("SELECT token FROM toolreg_claims WHERE id = ?", (id,)).fetchone()
            if row is not None:
                return bool(row[0] == token)
            db.execute(
                "INSERT INTO toolreg_claims (id, token, expires) VALUES (?, ?, ?)",
                (id, token, now + seconds),
            )
            return True

    def delete(self, id: str) -> bool:
        check_id(id)
        with self._failing("delete", id), self._write() as db:
            return db.execute("DELETE FROM toolreg_states WHERE id = ?", (id,)).rowcount > 0

    # SQLite blocks: in async code it runs in a worker thread (with that thread's
    # connection). asyncio is imported where it runs (loaded by then), not with the store.
    async def aload(self, id: str) -> StoredState | None:
        import asyncio

        return await asyncio.to_thread(self.load, id)

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        import asyncio

        return await asyncio.to_thread(self.save, id, state, expected_version)

    async def aclaim(self, id: str, token: str, ttl: float) -> bool:
        import asyncio

        return await asyncio.to_thread(self.claim, id, token, ttl)

    async def adelete(self, id: str) -> bool:
        import asyncio

        return await asyncio.to_thread(self.delete, id)


class _Transaction:
    """`BEGIN IMMEDIATE` ... `COMMIT`, or `ROLLBACK` when the block (or the `COMMIT`)
    fails: a failed write leaves no transaction open on the connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            try:
                self.db.execute("COMMIT")
                return
            except sqlite3.Error:
                self._rollback()
                raise
        self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the block's own error is the one told
                self.db.execute("ROLLBACK")


_HINTS = (
    (("locked", "busy"), "another process held its write lock longer than busy_timeout={}s"),
    (("readonly", "read-only"), "the file, or its directory, is read-only"),
    (("not a database", "malformed", "corrupt"), "the file is corrupt, or not a SQLite database"),
    (("unable to open",), "its directory is missing or cannot be written"),
    (("disk i/o", "full"), "the disk failed or is full"),
)


def _reason(err: sqlite3.Error, store: SQLiteStore) -> str:
    """SQLite's message, and what it means for the file."""
    text = exception_text(err, 200) or type(err).__name__
    low = text.lower()
    for words, hint in _HINTS:
        if any(word in low for word in words):
            return f"{text} ({hint.format(f'{store.busy_timeout:g}')})"
    return text
