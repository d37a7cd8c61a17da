"""The state stores: one protocol, three stores (memory, SQLite, a real redis-server), and
the conversation over them (each send/resume loads, runs, saves; a pending approval runs once).

Rows are attacked the way someone with write access to the database would: edited, grown,
replaced by what is not JSON.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from _store_support import redis_url  # noqa: F401 - the session fixture

import toolreg
from toolreg import (
    AsyncConversation,
    Conversation,
    ConversationStateError,
    StateConflictError,
    StateStoreError,
    ToolRegistry,
    UsageError,
)
from toolreg.stores import (
    AsyncStateStore,
    MemoryStore,
    RedisStore,
    SQLiteStore,
    StateStore,
    StoredState,
)
from toolreg.testing import ScriptedServer, error, text, tool_call

STORES = ["memory", "sqlite", "redis"]
KEY = b"s" * 32
MODEL = "scripted-model"


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest, **options: Any) -> Any:
    if kind == "memory":
        return MemoryStore(**options)
    if kind == "sqlite":
        store = SQLiteStore(tmp_path / "states.db", **options)
        request.addfinalizer(store.close)
        return store
    url = request.getfixturevalue("redis_url")
    store = RedisStore(url, prefix=f"t{uuid.uuid4().hex}:", **options)
    request.addfinalizer(store.close)
    return store


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return make_store(request.param, tmp_path, request)


# -- the protocol ----------------------------------------------------------------------------


def test_every_store_is_both_protocols(store: Any) -> None:
    assert isinstance(store, StateStore)
    assert isinstance(store, AsyncStateStore)


def test_save_load_delete_with_versions(store: Any) -> None:
    assert store.load("c1") is None
    state = {"toolreg": "x", "text": "北京 \ud800 ok", "n": [1, 2.5, None, True]}
    assert store.save("c1", state, None) == 1
    assert store.load("c1") == StoredState(state, 1)  # a lone surrogate survives too
    assert store.save("c1", {"n": 2}, 1) == 2
    assert store.load("c1") == StoredState({"n": 2}, 2)
    assert store.load("c2") is None  # ids are apart
    assert store.delete("c1") is True
    assert store.delete("c1") is False
    assert store.load("c1") is None
    assert store.save("c1", {"n": 3}, None) == 1  # a new life


def test_a_save_that_expects_another_version_is_a_conflict(store: Any) -> None:
    store.save("c1", {"n": 1}, None)
    store.save("c1", {"n": 2}, 1)
    with pytest.raises(StateConflictError) as caught:
        store.save("c1", {"n": "stale"}, 1)
    assert (caught.value.id, caught.value.expected, caught.value.found) == ("c1", 1, 2)
    assert "expected version 1" in str(caught.value)
    assert "holds version 2" in str(caught.value)
    with pytest.raises(StateConflictError) as caught:
        store.save("c1", {"n": "new?"}, None)  # "create" where one exists
    assert (caught.value.expected, caught.value.found) == (None, 2)
    with pytest.raises(StateConflictError) as caught:
        store.save("gone", {"n": 1}, 4)
    assert (caught.value.expected, caught.value.found) == (4, None)
    assert store.load("c1") == StoredState({"n": 2}, 2)  # nothing of the losers was written
    assert isinstance(caught.value, ConversationStateError)  # what a resume's caller catches


def test_threads_racing_on_one_version_one_wins_each_time(store: Any) -> None:
    store.save("race", {"n": 0}, None)
    wins: list[int] = []
    conflicts: list[StateConflictError] = []
    start = threading.Barrier(6)

    def writer(me: int) -> None:
        start.wait()
        for _ in range(5):
            loaded = store.load("race")
            try:
                store.save("race", {"n": loaded.state["n"] + 1, "by": me}, loaded.version)
                wins.append(me)
            except StateConflictError as err:
                conflicts.append(err)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = store.load("race")
    # every increment that was reported saved is in the count: no write was lost
    assert final.state["n"] == len(wins) == final.version - 1
    assert len(wins) + len(conflicts) == 30


def test_a_claim_is_taken_once(store: Any) -> None:
    assert store.claim("resume:abc", "token-a", 60) is True
    assert store.claim("resume:abc", "token-b", 60) is False
    assert store.claim("resume:abc", "token-a", 60) is True  # its holder asks again
    assert store.claim("resume:other", "token-b", 60) is True


def test_a_claim_ends_after_its_ttl(store: Any) -> None:
    assert store.claim("short", "a", 0.05) is True
    time.sleep(0.15)
    assert store.claim("short", "b", 60) is True
    assert store.claim("short", "a", 60) is False


def test_threads_racing_for_a_claim_one_gets_it(store: Any) -> None:
    start = threading.Barrier(8)
    got: list[str] = []

    def claimant(token: str) -> None:
        start.wait()
        if store.claim("once", token, 60):
            got.append(token)

    threads = [threading.Thread(target=claimant, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 1


def test_the_async_methods(store: Any) -> None:
    async def main() -> None:
        assert await store.aload("a1") is None
        assert await store.asave("a1", {"n": 1}, None) == 1
        assert await store.aload("a1") == StoredState({"n": 1}, 1)
        with pytest.raises(StateConflictError):
            await store.asave("a1", {"n": 2}, None)
        assert await store.aclaim("a-claim", "x", 60) is True
        assert await store.aclaim("a-claim", "y", 60) is False
        assert await store.adelete("a1") is True
        assert store.load("a1") is None  # the sync and async sides are one store
        if isinstance(store, RedisStore):
            await store.aclose()

    asyncio.run(main())


def test_the_async_methods_work_in_every_event_loop(store: Any) -> None:
    """One store, used from several event loops one after the other (an `asyncio.run()`
    per request) and from two threads' loops at once: redis-py binds an async client to
    its loop, so a RedisStore keeps one per loop."""

    async def turn(id: str) -> StoredState | None:
        version = await store.asave(id, {"id": id}, None)
        assert await store.aclaim(f"{id}-claim", "me", 60) is True
        assert version == 1
        return await store.aload(id)

    for n in range(3):  # each asyncio.run() is a new loop; the last one's is closed
        assert asyncio.run(turn(f"loop{n}")) == StoredState({"id": f"loop{n}"}, 1)
    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(lambda n: asyncio.run(turn(f"thread{n}")), range(4)))
    assert [f.state["id"] for f in found if f is not None] == [f"thread{n}" for n in range(4)]
    assert store.load("loop2") == StoredState({"id": "loop2"}, 1)  # one store underneath


BAD_IDS = ["", "x" * 257, "has space", "../etc/passwd", "line\nbreak", "naïve", "a/b", "*"]


@pytest.mark.parametrize("bad", [*BAD_IDS, 7, None, b"bytes"])
def test_ids_are_checked(store: Any, bad: Any) -> None:
    for attempt in (
        lambda: store.load(bad),
        lambda: store.save(bad, {}, None),
        lambda: store.delete(bad),
        lambda: store.claim(bad, "token", 10),
        lambda: store.claim("fine", bad, 10),
    ):
        with pytest.raises(UsageError, match="not a valid store id: 1 to 256 characters"):
            attempt()


@pytest.mark.parametrize("ttl", [0, -1, 31 * 86400, float("nan"), float("inf"), "10", True])
def test_claim_ttls_are_checked(store: Any, ttl: Any) -> None:
    with pytest.raises(UsageError, match="claim ttl"):
        store.claim("c", "t", ttl)


@pytest.mark.parametrize("bad", [True, "1", 1.0])
def test_expected_versions_are_checked(store: Any, bad: Any) -> None:
    with pytest.raises(UsageError, match="expected_version"):
        store.save("c", {}, bad)


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ([1, 2], "a state is a dict"),
        ({"x": float("nan")}, "not plain JSON"),
        ({"x": object()}, "not plain JSON"),
        ({1: "non-text key"}, None),  # json writes it as "1": allowed, read back as text
    ],
)
def test_what_is_saved_is_plain_json(store: Any, state: Any, problem: str | None) -> None:
    if problem is None:
        store.save("c", state, None)
        assert store.load("c").state == {"1": "non-text key"}
        return
    with pytest.raises(UsageError, match=problem):
        store.save("c", state, None)
    assert store.load("c") is None


@pytest.mark.parametrize("kind", STORES)
def test_states_are_size_bounded(request: pytest.FixtureRequest, tmp_path: Path, kind: str) -> None:
    small = make_store(kind, tmp_path, request, max_bytes=1000)
    small.save("c", {"x": "y" * 900}, None)
    with pytest.raises(UsageError, match=r"bytes of JSON; this store keeps at most 1000"):
        small.save("c", {"x": "y" * 1000}, 1)
    assert small.load("c").version == 1


@pytest.mark.parametrize("bad", [0, -1, True, "1000"])
def test_max_bytes_is_checked(bad: Any, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="max_bytes"):
        MemoryStore(max_bytes=bad)
    with pytest.raises(UsageError, match="max_bytes"):
        SQLiteStore(tmp_path / "x.db", max_bytes=bad)


def test_sqlite_wants_a_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="use MemoryStore"):
        SQLiteStore(":memory:")
    with pytest.raises(StateStoreError, match="directory is missing") as caught:
        SQLiteStore(tmp_path / "no" / "such" / "folder" / "x.db")
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "wal.db")
    store.save("c", {"n": 1}, None)
    with sqlite3.connect(tmp_path / "wal.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    store.close()
    assert store.load("c") == StoredState({"n": 1}, 1)  # reopens after close()


# -- hostile rows ----------------------------------------------------------------------------


def sqlite_row(path: Path, id: str, state: Any, version: Any = 1) -> None:
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT OR REPLACE INTO toolreg_states (id, version, state, updated) "
            "VALUES (?, ?, ?, 0)",
            (id, version, state),
        )


ROWS = [
    ("not json", 1, "is not JSON"),
    ("[1, 2]", 1, "is not a JSON object"),
    ('{"a": NaN}', 1, "is not JSON"),
    ('{"a": 1e999}', 1, "is not JSON"),
    ("[" * 100_000 + "]" * 100_000, 1, "is not JSON"),
    (b"\xff\xfe", 1, "is not UTF-8"),
    (12, 1, "(not JSON text|not a JSON object)"),  # SQLite may keep it as "12"
    ('{"a": 1}', "three", "version is not a whole number"),
    ('{"a": 1}', 0, "version is not a whole number"),
    ('{"a": 1}', 2.5, "version is not a whole number"),
    ("{" + '"a":1,' * 200 + '"b":2}', 1, "larger than 1000 bytes"),
]


@pytest.mark.parametrize(("row", "version", "problem"), ROWS)
def test_malformed_sqlite_rows_are_refused(
    tmp_path: Path, row: Any, version: Any, problem: str
) -> None:
    store = SQLiteStore(tmp_path / "hostile.db", max_bytes=1000 if "larger" in problem else 10**6)
    sqlite_row(store.path, "c1", row, version)
    with pytest.raises(
        ConversationStateError, match=f"stored state 'c1' is not usable: .*{problem}"
    ):
        store.load("c1")


@pytest.mark.parametrize(("row", "version", "problem"), ROWS)
def test_malformed_redis_rows_are_refused(
    redis_url: str,  # noqa: F811
    row: Any,
    version: Any,
    problem: str,
) -> None:
    if isinstance(row, int) or isinstance(version, float):
        pytest.skip("Redis keeps every value as bytes")
    limit = 1000 if "larger" in problem else 10**6
    store = RedisStore(redis_url, prefix=f"h{uuid.uuid4().hex}:", max_bytes=limit)
    store.client.hset(f"{store.prefix}state:c1", mapping={"v": version, "s": row})
    with pytest.raises(
        ConversationStateError, match=f"stored state 'c1' is not usable: .*{problem}"
    ):
        store.load("c1")
    store.close()


def test_an_oversized_redis_value_is_not_sent(redis_url: str) -> None:  # noqa: F811
    store = RedisStore(redis_url, prefix=f"h{uuid.uuid4().hex}:", max_bytes=1000)
    store.client.hset(f"{store.prefix}state:big", mapping={"v": 1, "s": "x" * 5_000_000})
    with pytest.raises(ConversationStateError, match="larger than 1000 bytes"):
        store.load("big")
    store.close()


def test_redis_store_without_redis_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(UsageError, match=r"pip install 'toolreg\[redis\]'"):
        RedisStore()


def test_the_package_exports_the_conflict_error() -> None:
    import toolreg
    import toolreg.errors
    import toolreg.stores

    assert toolreg.StateConflictError is toolreg.errors.StateConflictError
    assert toolreg.stores.StateConflictError is toolreg.errors.StateConflictError
    assert issubclass(StateConflictError, ConversationStateError)


# -- conversations kept in a store -----------------------------------------------------------


class Shop:
    """A registry whose `refund` needs approval; `ran` records every refund that ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, int]] = []
        self.registry = reg = ToolRegistry()

        @reg.register_tool(destructive=True)
        def refund(order_id: str, amount: int) -> str:
            """Refund an order."""
            self.ran.append((order_id, amount))
            return f"refunded {amount} on {order_id}"


def stored_chat(server: ScriptedServer, store: Any, shop: Shop, **options: Any) -> Conversation:
    options.setdefault("conversation_id", "c1")
    return Conversation(
        server.client(),
        MODEL,
        registry=shop.registry,
        confirm="defer",
        state_store=store,
        **options,
    )


REFUND = tool_call("refund", order_id="A1", amount=20)


def test_a_stored_conversation_goes_on_where_it_stopped(store: Any) -> None:
    with ScriptedServer([text("Hello."), text("Still here.")]) as server:
        first = Conversation(
            server.client(), MODEL, system="Be brief.", state_store=store, conversation_id="c1"
        )
        assert first.send("Hi").text == "Hello."
        # another request, another object (another process would do the same)
        again = Conversation(
            server.client(), MODEL, system="Be brief.", state_store=store, conversation_id="c1"
        )
        assert again.send("Are you there?").text == "Still here."
        seen = [(m["role"], m["content"]) for m in server.history(1)]
    assert seen == [
        ("system", "Be brief."),
        ("user", "Hi"),
        ("assistant", "Hello."),
        ("user", "Are you there?"),
    ]
    assert store.load("c1").version == 2


def test_a_pending_approval_resumes_once_from_another_object(store: Any) -> None:
    shop = Shop()
    with ScriptedServer([REFUND, text("Done.")]) as server:
        reply = stored_chat(server, store, shop, key=KEY).send("Refund A1")
        assert reply.stop_reason == "approval_required"
        assert store.load("c1").state["status"] == "approval_required"
        assert "signature" in store.load("c1").state
        later = stored_chat(server, store, shop, key=KEY)
        assert later.resume({reply.pending[0].digest: True}).text == "Done."
        with pytest.raises(StateConflictError, match="no call waiting for approval"):
            stored_chat(server, store, shop, key=KEY).resume({"call_1": True})
        with pytest.raises(StateConflictError, match="no call waiting for approval"):
            later.resume({"call_1": True})  # the same object again: it loads first
        server.assert_all_consumed()
    assert shop.ran == [("A1", 20)]
    kept = store.load("c1")
    assert kept.state["status"] == "ready"
    assert kept.version == 3  # paused, claimed ("resumed"), done


def test_the_loser_of_a_claim_runs_nothing(store: Any) -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        stored_chat(server, store, shop).send("Refund A1")
        first = stored_chat(server, store, shop)
        # another process claims the paused state first (the name a resume claims)
        sid = store.load("c1").state["id"]
        name = "resume:" + hashlib.sha256(sid.encode()).hexdigest()[:40]
        assert store.claim(name, "someone-else", 60)
        with pytest.raises(StateConflictError, match="another process is resuming"):
            first.resume({"call_1": True})
    assert shop.ran == []
    assert store.load("c1").state["status"] == "approval_required"  # untouched


def test_concurrent_sends_the_second_save_conflicts(store: Any) -> None:
    inner: list[Any] = []

    def meanwhile(event: Any) -> None:
        if not inner:  # while the first turn waits for the model, another request runs
            other = Conversation(server.client(), MODEL, state_store=store, conversation_id="c1")
            inner.append(other.send("second").text)

    with ScriptedServer([text("one"), text("two"), text("three")]) as server:
        Conversation(server.client(), MODEL, state_store=store, conversation_id="c1").send("zero")
        chat = Conversation(
            server.client(),
            MODEL,
            state_store=store,
            conversation_id="c1",
            hooks=toolreg.Hooks(before_model_call=meanwhile),
        )
        with pytest.raises(StateConflictError) as caught:
            chat.send("first")
    assert inner == ["two"]
    assert (caught.value.expected, caught.value.found) == (1, 2)
    kept = [m["content"] for m in store.load("c1").state["messages"]]
    assert kept == ["zero", "one", "second", "two"]  # the winner's turn, whole


def test_a_tampered_row_is_refused(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "states.db")
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        stored_chat(server, store, shop, key=KEY).send("Refund A1")
        with sqlite3.connect(store.path) as db:
            (row,) = db.execute("SELECT state FROM toolreg_states WHERE id = 'c1'").fetchone()
            forged = json.loads(row)
            forged["pending"][0]["arguments"]["amount"] = 2000
            db.execute("UPDATE toolreg_states SET state = ? WHERE id = 'c1'", (json.dumps(forged),))
        with pytest.raises(ConversationStateError, match="signature does not match"):
            stored_chat(server, store, shop, key=KEY).resume({"call_1": True})
        unsigned = {k: v for k, v in forged.items() if k != "signature"}
        with sqlite3.connect(store.path) as db:
            db.execute(
                "UPDATE toolreg_states SET state = ? WHERE id = 'c1'", (json.dumps(unsigned),)
            )
        with pytest.raises(ConversationStateError, match="not signed"):
            stored_chat(server, store, shop, key=KEY).resume({"call_1": True})
        with pytest.raises(ConversationStateError, match="not signed"):
            stored_chat(server, store, shop, key=KEY).send("hello")  # send loads it too
    assert shop.ran == []
    store.close()


def test_a_stored_state_with_another_key_is_refused(store: Any) -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        stored_chat(server, store, shop, key=KEY).send("Refund A1")
        with pytest.raises(ConversationStateError, match="signature does not match"):
            stored_chat(server, store, shop, key=b"another key, 32 bytes long......").resume(
                {"call_1": True}
            )
        with pytest.raises(ConversationStateError, match="is signed"):
            stored_chat(server, store, shop).resume({"call_1": True})
    assert shop.ran == []


def test_a_resume_that_fails_after_the_calls_ran_keeps_their_answers(store: Any) -> None:
    shop = Shop()
    with ScriptedServer([REFUND, error(500, "down"), text("Refunded earlier.")]) as server:
        stored_chat(server, store, shop, key=KEY).send("Refund A1")
        client = server.client(max_retries=0)
        chat = Conversation(
            client,
            MODEL,
            registry=shop.registry,
            confirm="defer",
            state_store=store,
            conversation_id="c1",
            key=KEY,
        )
        with pytest.raises(toolreg.ConversationError):
            chat.resume({"call_1": True})
        kept = store.load("c1").state
        assert kept["status"] == "ready"
        assert kept["messages"][-1]["role"] == "tool"  # the refund's answer is kept
        again = stored_chat(server, store, shop, key=KEY)
        assert again.send("Did it work?").text == "Refunded earlier."
    assert shop.ran == [("A1", 20)]


def test_a_resume_that_did_not_finish_is_not_run_again(store: Any) -> None:
    """What a process that died mid-resume leaves: the "resumed" marker (saved before
    anything ran). Made here by claiming and marking as the driver does, then stopping."""
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        stored_chat(server, store, shop).send("Refund A1")
        stored = store.load("c1")
        marker = {**stored.state, "status": "resumed"}
        store.save("c1", marker, stored.version)
        for attempt in (
            lambda: stored_chat(server, store, shop).resume({"call_1": True}),
            lambda: stored_chat(server, store, shop).send("hello?"),
        ):
            with pytest.raises(StateConflictError, match="a resume of it did not finish"):
                attempt()
    assert shop.ran == []


def test_send_while_approval_waits_in_the_store(store: Any) -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        stored_chat(server, store, shop).send("Refund A1")
        with pytest.raises(UsageError, match="resume"):
            stored_chat(server, store, shop).send("something else")


def test_a_deleted_conversation_starts_again(store: Any) -> None:
    with ScriptedServer([text("one"), text("two")]) as server:
        chat = Conversation(
            server.client(), MODEL, system="S", state_store=store, conversation_id="c1"
        )
        chat.send("first")
        store.delete("c1")
        chat.send("second")
        assert [m["content"] for m in server.history(1)] == ["S", "second"]
    assert store.load("c1").version == 1


def test_the_async_conversation_over_a_store(store: Any) -> None:
    shop = Shop()

    async def main(server: ScriptedServer) -> None:
        def achat() -> AsyncConversation:
            return AsyncConversation(
                server.async_client(),
                MODEL,
                registry=shop.registry,
                confirm="defer",
                state_store=store,
                conversation_id="a1",
                key=KEY,
            )

        reply = await achat().send("Refund A1")
        assert reply.stop_reason == "approval_required"
        assert (await achat().resume({"call_1": True})).text == "Done."
        with pytest.raises(StateConflictError):
            await achat().resume({"call_1": True})
        if isinstance(store, RedisStore):
            await store.aclose()

    with ScriptedServer([REFUND, text("Done.")]) as server:
        asyncio.run(main(server))
    assert shop.ran == [("A1", 20)]
    assert store.load("a1").state["status"] == "ready"


class SyncOnly:
    def load(self, id: str) -> Any: ...
    def save(self, id: str, state: Any, expected_version: Any) -> int: ...
    def claim(self, id: str, token: str, ttl: float) -> bool: ...
    def delete(self, id: str) -> bool: ...


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"state_store": MemoryStore()}, "needs conversation_id="),
        ({"conversation_id": "c1"}, "go with state_store="),
        ({"key": KEY}, "go with state_store="),
        ({"state_store": MemoryStore(), "conversation_id": "a b"}, "conversation_id 'a b' is not"),
        ({"state_store": MemoryStore(), "conversation_id": 7}, "conversation_id int is not"),
        ({"state_store": {}, "conversation_id": "c1"}, "is not a StateStore"),
        ({"state_store": MemoryStore(), "conversation_id": "c", "key": b"short"}, "16"),
    ],
)
def test_store_options_are_checked(options: dict[str, Any], problem: str) -> None:
    with ScriptedServer([]) as server, pytest.raises(UsageError, match=problem):
        Conversation(server.client(), MODEL, **options)


def test_the_async_driver_needs_async_methods() -> None:
    with ScriptedServer([]) as server, pytest.raises(UsageError, match="not an AsyncStateStore"):
        AsyncConversation(
            server.async_client(), MODEL, state_store=SyncOnly(), conversation_id="c1"
        )


def test_from_state_refuses_a_store() -> None:
    shop = Shop()
    with ScriptedServer([REFUND]) as server:
        chat = Conversation(server.client(), MODEL, registry=shop.registry, confirm="defer")
        chat.send("Refund A1")
        with pytest.raises(UsageError, match="loads its own"):
            Conversation.from_state(
                chat.export_state(),
                server.client(),
                registry=shop.registry,
                state_store=MemoryStore(),
                conversation_id="c1",
            )
