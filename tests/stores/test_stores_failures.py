"""A store that cannot be read or written is a `StateStoreError` naming the file or the URL
(credentials redacted), never a bare `sqlite3` / `redis` error; nothing is lost (a failed
write changes nothing, a conversation keeps a turn it could not save and saves it first
next time) and nothing runs twice (the error says which tools the turn ran). Real files,
a real `redis-server` on 127.0.0.1, the real `openai` SDK against `ScriptedServer`."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _store_support import RedisServer, _free_port

from toolreg import (
    AsyncConversation,
    Conversation,
    Hooks,
    StateConflictError,
    StateStoreError,
    ToolregError,
    ToolRegistry,
)
from toolreg.stores import MemoryStore, SQLiteStore
from toolreg.testing import ScriptedServer, text, tool_call

MODEL = "scripted-model"


def _state(n: int = 1) -> dict[str, Any]:
    return {"messages": ["hello"] * n}


def _read_only(path: Path) -> None:
    """Mark a database file read-only in its own header (its write version 3: SQLite opens
    it for reading only, whoever runs the test, root too)."""
    data = bytearray(path.read_bytes())
    data[18] = 3
    path.write_bytes(bytes(data))


class _Locked:
    """Another process's write transaction on the file, held until `release()`."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.db.execute("ROLLBACK")
        self.db.close()


# -- SQLite ------------------------------------------------------------------------------------


def test_a_corrupt_file_is_refused_when_the_store_is_made(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    path.write_bytes(b"this is not a database, it is a text file" * 100)
    with pytest.raises(StateStoreError, match="corrupt, or not a SQLite database") as caught:
        SQLiteStore(path)
    err = caught.value
    assert str(path) in str(err)
    assert err.store == str(path)
    assert err.operation == "open"
    assert isinstance(err.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes().startswith(b"this is not a database")  # left as it was


def test_a_file_corrupted_under_a_store_is_refused_on_load(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    store = SQLiteStore(path)
    store.save("c1", _state(), None)
    store.close()
    path.write_bytes(b"\x00garbage" * 4096)
    with pytest.raises(StateStoreError, match=r"states\.db: cannot load 'c1'") as caught:
        store.load("c1")
    assert caught.value.operation == "load"
    assert caught.value.id == "c1"


def test_a_read_only_file_is_read_but_every_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    store = SQLiteStore(path)
    store.save("c1", _state(), None)
    store.close()
    _read_only(path)
    again = SQLiteStore(path)
    assert again.load("c1") is not None and again.load("c1").version == 1  # noqa: PT018
    for write in (
        lambda: again.save("c1", _state(2), 1),
        lambda: again.claim("resume:x", "token", 60),
        lambda: again.delete("c1"),
    ):
        with pytest.raises(StateStoreError, match="read-only"):
            write()
    loaded = again.load("c1")
    assert loaded is not None
    assert loaded.state == _state()  # nothing lost, nothing half-written


def test_a_file_locked_past_busy_timeout_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    store.save("c1", _state(), None)
    lock = _Locked(path)
    try:
        with pytest.raises(StateStoreError, match=r"locked.*busy_timeout=0\.05s") as caught:
            store.save("c1", _state(2), 1)
        assert caught.value.operation == "save"
    finally:
        lock.release()
    loaded = store.load("c1")
    assert loaded is not None
    assert (loaded.state, loaded.version) == (_state(), 1)
    assert store.save("c1", _state(2), 1) == 2  # the connection has no transaction left open


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    path = tmp_path / "gone" / "states.db"
    with pytest.raises(StateStoreError, match="directory is missing") as caught:
        SQLiteStore(path)
    assert str(path) in str(caught.value)


def test_the_async_methods_raise_it_too(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    lock = _Locked(path)
    try:
        with pytest.raises(StateStoreError, match="cannot save 'c1'"):
            asyncio.run(store.asave("c1", _state(), None))
    finally:
        lock.release()


def test_it_is_a_toolreg_error_and_not_a_usage_error() -> None:
    assert issubclass(StateStoreError, ToolregError)
    assert not issubclass(StateStoreError, ValueError)  # not the application's mistake


# -- Redis -------------------------------------------------------------------------------------


def test_redis_down_is_named_without_its_credentials() -> None:
    pytest.importorskip("redis")
    from toolreg.stores import RedisStore

    url = f"redis://alice:s3cr3t-pass@127.0.0.1:{_free_port()}/0"
    store = RedisStore(url)
    for call in (
        lambda: store.load("c1"),
        lambda: store.save("c1", _state(), None),
        lambda: store.claim("resume:x", "token", 60),
        lambda: store.delete("c1"),
        lambda: asyncio.run(store.aload("c1")),
        lambda: asyncio.run(store.asave("c1", _state(), None)),
    ):
        with pytest.raises(StateStoreError) as caught:
            call()
        message = str(caught.value)
        assert "the Redis store at redis://127.0.0.1:" in message
        assert "s3cr3t" not in message
        assert "alice" not in message
        assert "s3cr3t" not in caught.value.store


def test_redis_that_goes_down_and_comes_back(tmp_path: Path) -> None:
    from toolreg.stores import RedisStore

    server = RedisServer(tmp_path)
    try:
        store = RedisStore(server.url)
        assert store.save("c1", _state(), None) == 1
        server.stop()
        with pytest.raises(StateStoreError, match="cannot save 'c1'"):
            store.save("c1", _state(2), 1)
        assert server.start()
    finally:
        server.stop()


def test_a_wrong_redis_password_is_a_store_error_without_it(tmp_path: Path) -> None:
    from toolreg.stores import RedisStore

    server = RedisServer(tmp_path, "--requirepass", "right-one")
    try:
        store = RedisStore(f"redis://:wrong-one@127.0.0.1:{server.port}/0")
        with pytest.raises(StateStoreError) as caught:
            store.load("c1")
        assert "wrong-one" not in str(caught.value)
        assert "right-one" not in str(caught.value)
    finally:
        server.stop()


# -- in a conversation -------------------------------------------------------------------------


def _tools(ran: list[str], lock: list[_Locked], path: Path | None) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(to)
        if path is not None:  # another process takes the file while the turn runs
            lock.append(_Locked(path))
        return "sent"

    return registry


def test_a_turn_whose_save_fails_says_what_ran_and_is_saved_next_time(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    ran: list[str] = []
    lock: list[_Locked] = []
    store = SQLiteStore(path, busy_timeout=0.05)
    script = [tool_call("send_email", to="bob", id="call_7"), text("Sent."), text("Bye.")]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=_tools(ran, lock, path),
            state_store=store,
            conversation_id="c1",
        )
        with pytest.raises(StateStoreError) as caught:
            chat.send("email bob")
        err = caught.value
        message = str(err)
        assert "cannot save 'c1'" in message
        assert "send_email (call_7: ok)" in message
        assert "will not run again" in message
        assert "saves them first at its next send()" in message
        assert [r.call_id for r in err.ran] == ["call_7"]  # type: ignore[attr-defined]
        assert err.reply is not None
        assert err.reply.text == "Sent."  # type: ignore[attr-defined]
        assert store.load("c1") is None  # the file holds what it held: nothing
        lock.pop().release()
        reply = chat.send("thanks")  # saves the last turn first, then runs this one
        assert reply.text == "Bye."
    assert ran == ["bob"]  # once
    stored = store.load("c1")
    assert stored is not None
    assert stored.version == 2
    texts = [m.get("content") for m in stored.state["messages"] if m.get("role") == "user"]
    assert texts == ["email bob", "thanks"]


def test_a_failed_save_is_retried_by_the_next_send_and_may_fail_again(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    ran: list[str] = []
    lock: list[_Locked] = []
    store = SQLiteStore(path, busy_timeout=0.05)
    with ScriptedServer([tool_call("send_email", to="bob"), text("Sent.")]) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=_tools(ran, lock, path),
            state_store=store,
            conversation_id="c1",
        )
        with pytest.raises(StateStoreError):
            chat.send("email bob")
        with pytest.raises(StateStoreError, match="send_email"):
            chat.send("again?")  # still locked: the last turn is not saved, nothing runs
        assert len(server.requests) == 2  # the second send never reached the model
    lock.pop().release()
    assert ran == ["bob"]


def test_a_store_that_cannot_load_runs_nothing(tmp_path: Path) -> None:
    path = tmp_path / "states.db"
    ran: list[str] = []
    store = SQLiteStore(path, busy_timeout=0.05)
    store.close()
    path.write_bytes(b"\x00garbage" * 4096)
    with ScriptedServer([tool_call("send_email", to="bob"), text("Sent.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=_tools(ran, [], None), state_store=store,
            conversation_id="c1",
        )  # fmt: skip
        with pytest.raises(StateStoreError, match="nothing ran, and the conversation is as"):
            chat.send("email bob")
        assert server.requests == []
    assert ran == []
    assert chat.messages == []


def test_redis_down_in_a_conversation_runs_nothing() -> None:
    pytest.importorskip("redis")
    from toolreg.stores import RedisStore

    store = RedisStore(f"redis://user:pw-secret@127.0.0.1:{_free_port()}/0")
    ran: list[str] = []
    with ScriptedServer([tool_call("send_email", to="bob"), text("Sent.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=_tools(ran, [], None), state_store=store,
            conversation_id="c1",
        )  # fmt: skip
        with pytest.raises(StateStoreError, match="nothing ran") as caught:
            chat.send("email bob")
        assert server.requests == []
    assert "pw-secret" not in str(caught.value)
    assert ran == []


class _Broken(MemoryStore):
    """A store of one's own that fails its saves with its own exception."""

    def __init__(self) -> None:
        super().__init__()
        self.failing = True

    def save(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        if self.failing:
            raise OSError("disk on fire at /secret/path")
        return super().save(id, state, expected_version)

    async def asave(self, id: str, state: dict[str, Any], expected_version: int | None) -> int:
        return self.save(id, state, expected_version)


def test_a_store_of_ones_own_that_raises_is_named_and_its_text_kept_out() -> None:
    store = _Broken()
    ran: list[str] = []
    with ScriptedServer([tool_call("send_email", to="bob", id="c9"), text("Sent.")]) as server:
        chat = Conversation(
            server.client(), MODEL, registry=_tools(ran, [], None), state_store=store,
            conversation_id="c1",
        )  # fmt: skip
        with pytest.raises(StateStoreError, match=r"_Broken: cannot save 'c1'") as caught:
            chat.send("email bob")
    assert isinstance(caught.value.__cause__, OSError)
    assert "/secret/path" not in str(caught.value)
    assert "send_email (c9: ok)" in str(caught.value)
    store.failing = False
    assert ran == ["bob"]


def test_an_async_conversation_tells_the_same(tmp_path: Path) -> None:
    store = _Broken()
    ran: list[str] = []

    async def main(server: ScriptedServer) -> StateStoreError:
        async with server.async_client() as client:
            chat = AsyncConversation(
                client, MODEL, registry=_tools(ran, [], None), state_store=store,
                conversation_id="c1",
            )  # fmt: skip
            try:
                await chat.send("email bob")
            except StateStoreError as err:
                store.failing = False
                await chat.send("and?")  # saves the last turn first
                return err
        raise AssertionError("the save did not fail")

    script = [tool_call("send_email", to="bob", id="c9"), text("Sent."), text("Done.")]
    with ScriptedServer(script) as server:
        err = asyncio.run(main(server))
    assert "send_email (c9: ok)" in str(err)
    assert ran == ["bob"]
    loaded = store.load("c1")
    assert loaded is not None
    assert loaded.version == 2


def test_a_conflicting_save_says_what_ran_too() -> None:
    store = MemoryStore()
    ran: list[str] = []

    def other_writer(event: Any) -> None:  # another process saves while the turn runs
        if store.load("c1") is None:
            store.save("c1", {"other": "writer"}, None)

    script = [tool_call("send_email", to="bob", id="c5"), text("Sent.")]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.client(),
            MODEL,
            registry=_tools(ran, [], None),
            state_store=store,
            conversation_id="c1",
            hooks=Hooks(after_tool_call=other_writer),
        )
        with pytest.raises(StateConflictError, match=r"send_email \(c5: ok\)"):
            chat.send("email bob")
    assert ran == ["bob"]
