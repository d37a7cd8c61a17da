"""Rate limits shared in Redis: every process and machine that names the same Redis charges
the same buckets. Over real HTTP on 127.0.0.1 against a real `redis-server` (skipped, with
the reason, when none can start): two servers, in this process and as `toolreg serve`
processes (one with `--workers 2`), refuse the call over the shared limit where
per-process buckets let it through; callers and tools keep buckets of their own; Redis
down, slow or refusing our password refuses calls (503, fail closed) without showing the
password; a huge identity makes a short key and every key expires once its bucket is full
again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from _mcp_support import TOOLS, HttpChild, serve_command
from _store_support import RedisServer, redis_url  # noqa: F401 - the session fixture
from mcp.server.auth.provider import AccessToken

from toolreg import ToolRegistry
from toolreg.cli.main import main
from toolreg.errors import UsageError
from toolreg.mcp import HttpServer, RateLimit, ResourceServer, asgi_app
from toolreg.stores import RedisStore

HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
PASSWORD = "hunter2-do-not-show"


def registry(ran: list[str] | None = None) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool
    def add(a: int, b: int) -> int:
        """Add two integers. Use it for any addition."""
        if ran is not None:
            ran.append("add")
        return a + b

    @tools.register_tool
    def search(q: str) -> str:
        """Search the catalog. Use it to find products."""
        return f"found {q}"

    return tools


def call(
    http: httpx2.Client, url: str, name: str = "add", *, user: str | None = None
) -> httpx2.Response:
    arguments = {"a": 1, "b": 2} if name == "add" else {"q": "x"}
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    headers = HEADERS if user is None else {**HEADERS, "authorization": f"Bearer {user}"}
    return http.post(url, json=body, headers=headers, timeout=30)


def any_token(subject: str | None = None) -> ResourceServer:
    """Every token is valid; its text is the caller (or `subject` for all of them)."""

    def verify(token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="c", scopes=[], subject=subject or token)

    return ResourceServer(
        verify, resource="https://mcp.example.com/mcp", authorization_servers=["https://a.example"]
    )


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:  # noqa: F811
    """A store on the session's redis-server, its keys under a prefix of its own."""
    made = RedisStore(redis_url, prefix=f"t{uuid.uuid4().hex[:12]}:")
    try:
        yield made
    finally:
        made.close()


def keys(store: RedisStore) -> list[bytes]:
    return list(store.client.scan_iter(match=f"{store.prefix}*", count=1000))


# -- sharing ----------------------------------------------------------------------------------


def test_two_servers_share_one_bucket_where_per_process_ones_do_not(
    store: RedisStore,
    redis_url: str,  # noqa: F811
) -> None:
    def statuses(limits: tuple[RateLimit, RateLimit], calls: int) -> list[int]:
        with (
            HttpServer(asgi_app(registry(), rate_limit=limits[0])) as one,
            HttpServer(asgi_app(registry(), rate_limit=limits[1])) as two,
            httpx2.Client() as http,
        ):
            return [call(http, (one, two)[i % 2].url).status_code for i in range(calls)]

    # as two machines would: each its own store (client), the same Redis and key prefix
    other = RedisStore(redis_url, prefix=store.prefix)
    shared = (RateLimit("3/min", redis=store), RateLimit("3/min", redis=other))
    assert statuses(shared, 4) == [200, 200, 200, 429]
    alone = RateLimit("3/min")
    assert statuses((alone, alone), 6) == [200] * 6  # each process: 3 of its own


def test_concurrent_calls_on_two_servers_get_exactly_the_limit(
    store: RedisStore,
    redis_url: str,  # noqa: F811
) -> None:
    """Each charge is one atomic step on Redis: 40 calls at once, half to each server,
    admit exactly 10 (a read then a write from two servers would let more through)."""
    other = RedisStore(redis_url, prefix=store.prefix)
    limits = (RateLimit("10/h", redis=store), RateLimit("10/h", redis=other))

    async def burst(urls: tuple[str, str]) -> list[int]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
        async with httpx2.AsyncClient(timeout=60) as http:
            answers = await asyncio.gather(
                *(http.post(urls[i % 2], json=body, headers=HEADERS) for i in range(40))
            )
        return [a.status_code for a in answers]

    with (
        HttpServer(asgi_app(registry(), rate_limit=limits[0])) as one,
        HttpServer(asgi_app(registry(), rate_limit=limits[1])) as two,
    ):
        statuses = asyncio.run(burst((one.url, two.url)))
    assert sorted(statuses) == [200] * 10 + [429] * 30


@pytest.mark.slow
def test_serve_processes_and_their_workers_share_one_bucket(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path)  # a server of its own: the CLI's keys have no test prefix
    try:
        limits = ["--rate-limit", "3/min", "--rate-limit-redis", redis.url]
        first = serve_command(TOOLS, "--transport", "http", "--port", "0", "--workers", "2")
        second = serve_command(TOOLS, "--transport", "http", "--port", "0")
        with (
            HttpChild(*first, *limits) as workers,
            HttpChild(*second, *limits) as single,
            httpx2.Client() as http,
        ):
            # three calls to the workers (a new connection each: either worker may answer)
            answers = [call(http, workers.url).status_code for _ in range(3)]
            http.close()
            with httpx2.Client() as fresh:
                over = call(fresh, single.url)  # the other server: the bucket is empty
                again = call(fresh, workers.url)
        assert answers == [200, 200, 200]
        assert (over.status_code, again.status_code) == (429, 429)
        assert over.json()["error"]["message"].startswith(
            "Rate limit exceeded: at most 3 tool calls per min; retry after "
        )
        assert 1 <= int(over.headers["retry-after"]) <= 60
        assert redis.url not in "".join(workers.log + single.log)
    finally:
        redis.stop()


def test_callers_and_tools_keep_buckets_of_their_own(store: RedisStore) -> None:
    limit = RateLimit("2/min", tools={"search": "1/h"}, redis=store)
    app = asgi_app(registry(), auth=any_token(), rate_limit=limit)
    with HttpServer(app) as server, httpx2.Client() as http:
        answers = [
            call(http, server.url, "search", user="ada"),
            call(http, server.url, "search", user="ada"),  # over search's 1/h
            call(http, server.url, "add", user="ada"),  # the refused call cost nothing
            call(http, server.url, "add", user="ada"),  # over 2/min
            call(http, server.url, "search", user="bob"),  # bob's own buckets
        ]
    assert [a.status_code for a in answers] == [200, 429, 200, 429, 200]
    tool_limit, overall = answers[1], answers[3]
    assert tool_limit.json()["error"]["message"].startswith(
        "Rate limit exceeded: at most 1 call of 'search' per h; retry after "
    )
    assert 3500 <= int(tool_limit.headers["retry-after"]) <= 3600
    assert tool_limit.json()["error"]["data"]["retryAfter"] == int(
        tool_limit.headers["retry-after"]
    )
    assert "at most 2 tool calls per min" in overall.json()["error"]["message"]
    assert 1 <= int(overall.headers["retry-after"]) <= 60


def test_behind_a_proxy_on_the_same_machine_each_client_has_its_own_bucket(
    store: RedisStore,
) -> None:
    """uvicorn (under `serve` and `HttpServer`) takes the client's address from
    `X-Forwarded-For` when the connection comes from 127.0.0.1 (its `forwarded_allow_ips`),
    so a TLS proxy on the same machine does not make every caller one."""
    app = asgi_app(registry(), rate_limit=RateLimit("1/min", redis=store))
    with HttpServer(app) as server, httpx2.Client() as http:

        def status(client: str) -> int:
            headers = {**HEADERS, "x-forwarded-for": client}
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
            }
            return http.post(server.url, json=body, headers=headers).status_code

        statuses = [status("203.0.113.7"), status("198.51.100.2"), status("203.0.113.7")]
    assert statuses == [200, 200, 429]


# -- Redis down, slow, refusing: fail closed ----------------------------------------------


def test_redis_going_down_refuses_calls_until_it_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    redis = RedisServer(tmp_path, "--requirepass", PASSWORD)
    url = f"redis://:{PASSWORD}@127.0.0.1:{redis.port}/0"
    ran: list[str] = []
    app = asgi_app(registry(ran), rate_limit=RateLimit("100/min", redis=url))
    try:
        with (
            caplog.at_level(logging.WARNING, "toolreg.mcp"),
            HttpServer(app) as server,
            httpx2.Client() as http,
        ):
            assert call(http, server.url).status_code == 200
            redis.stop()
            down = [call(http, server.url), call(http, server.url)]
            assert redis.start()
            back = call(http, server.url)
    finally:
        redis.stop()
    assert ran == ["add", "add"]  # the refused calls did not run
    assert [d.status_code for d in down] == [503, 503]
    assert down[0].headers["retry-after"] == "1"
    error = down[0].json()["error"]
    assert error["code"] == -32000
    assert error["message"] == (
        "Rate limits cannot be checked right now (their store does not answer); retry after 1 s."
    )
    assert back.status_code == 200
    logged = [r.getMessage() for r in caplog.records if r.name == "toolreg.mcp"]
    assert logged == [  # one line when it stops answering, one when it is back
        f"the rate limits in Redis at redis://127.0.0.1:{redis.port} cannot be checked "
        "(ConnectionError); tool calls are refused (503) until it answers",
        f"the rate limits in Redis at redis://127.0.0.1:{redis.port} answer again",
    ]
    shown = "".join(caplog.text) + "".join(d.text for d in down)
    assert PASSWORD not in shown


def test_a_full_redis_that_evicts_nothing_refuses_the_call(tmp_path: Path) -> None:
    """`maxmemory` reached under `noeviction`: Redis refuses the script's write, so the
    call is refused (fail closed), not let through."""
    redis = RedisServer(tmp_path, "--maxmemory", "1", "--maxmemory-policy", "noeviction")
    ran: list[str] = []
    try:
        app = asgi_app(registry(ran), rate_limit=RateLimit("5/min", redis=redis.url))
        with HttpServer(app) as server, httpx2.Client() as http:
            answer = call(http, server.url)
    finally:
        redis.stop()
    assert answer.status_code == 503
    assert ran == []


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that takes connections and never answers (a Redis that hangs)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


@pytest.mark.parametrize("case", ["nothing listens", "never answers", "wrong password"])
def test_a_redis_that_cannot_answer_refuses_the_call(
    case: str,
    silent_port: int,
    redis_url: str,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    if case == "nothing listens":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # closed again: nothing listens there
        url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    elif case == "never answers":
        url = f"redis://:{PASSWORD}@127.0.0.1:{silent_port}/0"
    else:  # the session's server has no password: AUTH is refused
        url = redis_url.replace("redis://", f"redis://ops:{PASSWORD}@")
    ran: list[str] = []
    limit = RateLimit("5/min", redis=url, redis_timeout=0.3)
    with (
        caplog.at_level(logging.WARNING, "toolreg.mcp"),
        HttpServer(asgi_app(registry(ran), rate_limit=limit)) as server,
        httpx2.Client() as http,
    ):
        answer = call(http, server.url)
    assert answer.status_code == 503
    assert answer.json()["error"]["data"] == {"retryAfter": 1}
    assert ran == []
    assert PASSWORD not in answer.text + caplog.text
    assert "ops" not in caplog.text


@pytest.mark.slow
def test_a_hanging_redis_is_asked_by_one_call_at_a_time() -> None:
    """Once Redis has failed, one call at a time asks it again and the others are refused
    at once: ten calls at once against a Redis that hangs open one connection, not ten."""
    accepted: list[socket.socket] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)

        def accept() -> None:
            with contextlib.suppress(OSError):  # the listener closed: the test is over
                while True:
                    accepted.append(listener.accept()[0])  # kept open, never answered

        threading.Thread(target=accept, daemon=True).start()
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        limit = RateLimit("5/min", redis=url, redis_timeout=2)

        async def burst(target: str) -> list[int]:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
            }
            async with httpx2.AsyncClient(timeout=60) as http:
                answers = await asyncio.gather(
                    *(http.post(target, json=body, headers=HEADERS) for _ in range(10))
                )
            return [a.status_code for a in answers]

        with HttpServer(asgi_app(registry(), rate_limit=limit)) as server:
            with httpx2.Client() as http:
                assert call(http, server.url).status_code == 503  # Redis is failing now
            assert asyncio.run(burst(server.url)) == [503] * 10
            connections = len(accepted)
    for conn in accepted:
        conn.close()
    assert connections == 2  # the first call's, then the one call that asked again


# -- bounded keys ------------------------------------------------------------------------------


def test_a_huge_identity_makes_a_short_key_that_expires(store: RedisStore) -> None:
    huge = "x" * 200_000
    limit = RateLimit("5/min", tools={"search": "2/min"}, redis=store)
    app = asgi_app(registry(), auth=any_token(subject=huge), rate_limit=limit)
    with HttpServer(app) as server, httpx2.Client() as http:
        assert call(http, server.url, "search", user="t").status_code == 200
    found = sorted(keys(store))
    assert len(found) == 2  # the overall bucket and search's
    assert all(len(key) < len(store.prefix) + 60 for key in found)
    assert found[1].endswith(b":tool:search")
    for key in found:
        assert 0 < store.client.pttl(key) <= 60_000  # gone once the bucket is full again


def test_many_callers_leave_nothing_once_their_buckets_refill(store: RedisStore) -> None:
    app = asgi_app(registry(), auth=any_token(), rate_limit=RateLimit("20/s", redis=store))
    callers = 300
    with HttpServer(app) as server, httpx2.Client() as http:
        statuses = {call(http, server.url, user=f"user-{i}").status_code for i in range(callers)}
    assert statuses == {200}
    found = keys(store)
    assert len(found) <= callers  # one key per caller at most, and each one expires:
    assert all(0 < store.client.pttl(key) <= 1_000 for key in found)
    deadline = time.monotonic() + 30
    while keys(store) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert keys(store) == []


def test_a_bucket_key_holding_garbage_or_a_far_future_is_bounded(store: RedisStore) -> None:
    """Whoever can write to Redis cannot lock a caller out for longer than one period: an
    unreadable value counts as a full bucket, a time far ahead as one period ahead."""
    app = asgi_app(registry(), rate_limit=RateLimit("2/min", redis=store))
    with HttpServer(app) as server, httpx2.Client() as http:
        assert call(http, server.url).status_code == 200
        [key] = keys(store)
        store.client.set(key, "not a number")
        assert call(http, server.url).status_code == 200  # read as a full bucket
        store.client.set(key, "1e300")
        over = call(http, server.url)
    assert over.status_code == 429
    assert 1 <= int(over.headers["retry-after"]) <= 60


# -- configuration ---------------------------------------------------------------------------


def test_the_redis_option_is_checked() -> None:
    with pytest.raises(UsageError, match=r"RateLimit\(redis=\) takes a URL"):
        RateLimit("1/min", redis=6379)  # type: ignore[arg-type]
    with pytest.raises(UsageError) as error:
        RateLimit("1/min", redis=f"http://ops:{PASSWORD}@cache.example:6379/0")
    assert str(error.value) == (
        "RateLimit(redis='http://cache.example:6379'): a Redis URL starts with redis://, "
        "rediss:// or unix://, e.g. 'redis://127.0.0.1:6379/0'"
    )
    for bad in (0, -1, float("nan"), True, "1"):
        with pytest.raises(UsageError, match="a number of seconds > 0"):
            RateLimit("1/min", redis="redis://127.0.0.1:6379/0", redis_timeout=bad)  # type: ignore[arg-type]
    assert PASSWORD not in repr(RateLimit("1/min", redis=f"redis://:{PASSWORD}@h:1/0"))


def test_without_the_redis_package_it_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    limit = RateLimit("1/min", redis="redis://127.0.0.1:6379/0")  # checked, not connected
    with pytest.raises(UsageError, match=r"pip install 'toolreg\[redis\]'"):
        asgi_app(registry(), rate_limit=limit)


def test_the_cli_option_is_http_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", TOOLS, "--rate-limit-redis", "redis://127.0.0.1:6379/0"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("toolreg: --rate-limit-redis applies to --transport http\n")


def test_the_cli_names_the_environment_variable_it_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLREG_RATE_LIMIT_REDIS", "redis://127.0.0.1:6379/0")
    with pytest.raises(SystemExit):
        main(["serve", TOOLS, "--transport", "http"])
    assert capsys.readouterr().err == (
        "toolreg: $TOOLREG_RATE_LIMIT_REDIS is set, but there are no limits to keep in Redis: "
        "add them, e.g. --rate-limit 60/min, or unset $TOOLREG_RATE_LIMIT_REDIS\n"
    )
    monkeypatch.setenv("TOOLREG_RATE_LIMIT_REDIS", f"redis:/ops:{PASSWORD}@cache")
    with pytest.raises(SystemExit):
        main(["serve", TOOLS, "--transport", "http", "--rate-limit", "5/min"])
    assert capsys.readouterr().err == (
        "toolreg: $TOOLREG_RATE_LIMIT_REDIS <a redis URL without a host>: a Redis URL starts "
        "with redis://, rediss:// or unix://, e.g. --rate-limit-redis redis://127.0.0.1:6379/0\n"
    )
