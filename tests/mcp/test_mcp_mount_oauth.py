"""OAuth 2.1 for mounts: `Mount(url, oauth=OAuth(...))` against a real authorization server
on 127.0.0.1 (the MCP SDK's own handlers, tests/_oauth_support.py) protecting a toolreg
server: discovery, dynamic registration, PKCE, the user's part through `authorize`, tokens
kept in a state store, refreshed, stepped up, per user; and no token anywhere but the
request."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from _oauth_support import Browser, LoopbackOAuth
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolreg.mcp import McpConnectionError, Mount
from toolreg.mcp.oauth import AuthorizationRequest, OAuth
from toolreg.stores import MemoryStore, SQLiteStore

REDIRECT = "http://127.0.0.1:8765/callback"


@pytest.fixture(scope="module")
def loopback() -> Iterator[LoopbackOAuth]:
    with LoopbackOAuth() as running:
        yield running


def whoami(mount: Mount, user: str | None = None) -> Any:
    context = None if user is None else {"user": user}
    return mount.dispatcher.dispatch_tool("whoami", {}, context=context, confirm=yes)


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


def per_user(browser: Browser, **options: Any) -> OAuth:
    return OAuth(
        browser.authorize, redirect_uri=REDIRECT, user=lambda deps: deps["user"], **options
    )


def test_a_mount_authorizes_through_the_callback_and_calls_as_that_identity(
    loopback: LoopbackOAuth,
) -> None:
    browser = Browser()
    issuer = loopback.issuer
    registered = len(issuer.clients)
    with Mount(loopback.url, oauth=OAuth(browser.authorize, redirect_uri=REDIRECT)) as mount:
        assert mount.names == ["whoami", "echo_token", "admin_report"]
        assert whoami(mount).content == "app"
        assert whoami(mount).content == "app"
    assert len(issuer.clients) == registered + 1  # registered dynamically (RFC 7591), once
    [asked] = browser.asked  # the user's part, once
    assert asked.user is None
    assert asked.context is None
    assert asked.redirect_uri == REDIRECT
    assert asked.server == loopback.url
    query = parse_qs(urlsplit(asked.url).query)
    assert query["code_challenge_method"] == ["S256"]  # PKCE
    assert query["resource"] == [loopback.url]  # RFC 8707
    assert query["redirect_uri"] == [REDIRECT]


def test_an_async_callback(loopback: LoopbackOAuth) -> None:
    browser = Browser()

    async def main() -> str:
        oauth = OAuth(browser.aauthorize, redirect_uri=REDIRECT)
        async with Mount(loopback.url, oauth=oauth) as mount:
            result = await mount.dispatcher.adispatch_tool("whoami", {}, confirm=yes)
            return result.content

    assert asyncio.run(main()) == "app"
    assert len(browser.asked) == 1


def test_tokens_are_kept_in_the_store_and_used_by_the_next_mount(
    loopback: LoopbackOAuth, tmp_path: Path
) -> None:
    browser = Browser()
    issuer = loopback.issuer
    store = SQLiteStore(tmp_path / "tokens.db")
    registered = len(issuer.clients)
    for _ in range(2):  # two processes, one after the other
        oauth = OAuth(browser.authorize, redirect_uri=REDIRECT, store=store)
        with Mount(loopback.url, oauth=oauth) as mount:
            assert whoami(mount).content == "app"
    assert len(browser.asked) == 1  # the second found the tokens
    assert len(issuer.clients) == registered + 1  # and the registration
    ids = stored_ids(tmp_path / "tokens.db")
    assert len(ids) == 2
    assert all(i.startswith("oauth.") for i in ids)
    assert not any("127.0.0.1" in i or "app" in i for i in ids)  # digests, not names


def stored_ids(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(row[0] for row in db.execute("SELECT id FROM toolreg_states"))


def test_a_token_that_expired_meanwhile_is_refreshed_not_authorized_again(
    loopback: LoopbackOAuth, tmp_path: Path
) -> None:
    browser = Browser()
    issuer = loopback.issuer
    store = SQLiteStore(tmp_path / "tokens.db")
    oauth = OAuth(browser.authorize, redirect_uri=REDIRECT, store=store)
    with Mount(loopback.url, oauth=oauth) as mount:
        assert whoami(mount).content == "app"
    for id in stored_ids(tmp_path / "tokens.db"):  # time passes: the access token expires
        stored = store.load(id)
        assert stored is not None
        if "tokens" in stored.state:
            token = stored.state["tokens"]["access_token"]
            issuer.access[token] = issuer.access[token].model_copy(update={"expires_at": 1})
            store.save(id, {**stored.state, "expires_at": time.time() - 60}, stored.version)
    refreshed = issuer.refreshed
    oauth = OAuth(browser.authorize, redirect_uri=REDIRECT, store=store)
    with Mount(loopback.url, oauth=oauth) as mount:
        assert whoami(mount).content == "app"
    assert issuer.refreshed == refreshed + 1
    assert len(browser.asked) == 1  # no new authorization


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_every_state_store_keeps_each_users_tokens(
    loopback: LoopbackOAuth, tmp_path: Path, kind: str
) -> None:
    browser = Browser()
    if kind == "memory":
        store: Any = MemoryStore()
    elif kind == "sqlite":
        store = SQLiteStore(tmp_path / "tokens.db")
    else:
        from _store_support import RedisServer

        from toolreg.stores import RedisStore

        redis = RedisServer(tmp_path)
        store = RedisStore(redis.url, prefix="oauth-test:")
    try:
        for _ in range(2):  # two processes (or machines), one after the other
            with Mount(loopback.url, oauth=per_user(browser, store=store)) as mount:
                assert whoami(mount, "ivy").content == "ivy"
                assert whoami(mount, "jon").content == "jon"
    finally:
        if kind == "redis":
            redis.stop()
    assert [r.user for r in browser.asked] == [None, "ivy", "jon"]


def test_a_user_signs_in_before_their_first_call_and_out_after(loopback: LoopbackOAuth) -> None:
    browser = Browser(decline=("lee",))
    with Mount(loopback.url, oauth=per_user(browser)) as mount:
        mount.sign_in({"user": "kim"})  # the authorization, outside any call
        assert mount.users == ["kim"]
        assert whoami(mount, "kim").content == "kim"
        assert [r.user for r in browser.asked] == [None, "kim"]
        with pytest.raises(McpConnectionError) as raised:
            mount.sign_in({"user": "lee"})
        assert str(raised.value) == (
            f"cannot sign in to the MCP server {loopback.url}: this user has not authorized "
            f"access to the MCP server {loopback.url} (the authorization server answered "
            "'access_denied')"
        )
        assert mount.sign_out({"user": "kim"})  # the session closed, the tokens forgotten
        assert mount.users == []
        assert whoami(mount, "kim").content == "kim"  # authorized again
        assert [r.user for r in browser.asked].count("kim") == 2
        assert not mount.sign_out({"user": "nobody"})
    with pytest.raises(ValueError, match="needs an open mount"):
        mount.sign_in({"user": "kim"})


def test_signing_in_under_async_with(loopback: LoopbackOAuth) -> None:
    browser = Browser()

    async def main() -> list[Any]:
        async with Mount(loopback.url, oauth=per_user(browser)) as mount:
            with pytest.raises(ValueError, match="await asign_in"):
                mount.sign_in({"user": "max"})
            await mount.asign_in({"user": "max"})
            return mount.users

    assert asyncio.run(main()) == ["max"]


def test_a_stored_record_that_does_not_parse_is_ignored(
    loopback: LoopbackOAuth, tmp_path: Path
) -> None:
    browser = Browser()
    store = SQLiteStore(tmp_path / "tokens.db")
    oauth = OAuth(browser.authorize, redirect_uri=REDIRECT, store=store)
    with Mount(loopback.url, oauth=oauth) as mount:
        assert whoami(mount).content == "app"
    for id in stored_ids(tmp_path / "tokens.db"):  # a row written by something else
        stored = store.load(id)
        assert stored is not None
        garbage = {"tokens": {"access_token": 5}, "client": [1], "expires_at": "soon"}
        store.save(id, garbage, stored.version)
    oauth = OAuth(browser.authorize, redirect_uri=REDIRECT, store=store)
    with Mount(loopback.url, oauth=oauth) as mount:
        assert whoami(mount).content == "app"
    assert len(browser.asked) == 2  # authorized again, registered again


def test_two_users_through_one_mount_each_with_their_own_tokens(loopback: LoopbackOAuth) -> None:
    browser = Browser()
    store = MemoryStore()
    with Mount(loopback.url, oauth=per_user(browser, store=store)) as mount:
        assert whoami(mount, "alice").content == "alice"
        assert whoami(mount, "bob").content == "bob"
        assert whoami(mount, "alice").content == "alice"
        assert sorted(mount.users) == ["alice", "bob"]
    # the application's own (the mount's listing), then each user once
    assert [(r.user, r.context) for r in browser.asked] == [
        (None, None),
        ("alice", {"user": "alice"}),
        ("bob", {"user": "bob"}),
    ]
    with Mount(loopback.url, oauth=per_user(browser, store=store)) as mount:  # kept
        assert whoami(mount, "bob").content == "bob"
    assert len(browser.asked) == 3


def test_a_user_who_does_not_authorize_is_told_so(loopback: LoopbackOAuth) -> None:
    browser = Browser(decline=("carol",))
    with Mount(loopback.url, oauth=per_user(browser)) as mount:
        carol = whoami(mount, "carol")
        assert not carol.ok
        assert carol.error_kind == "failed"
        assert carol.content.startswith(
            "Tool 'whoami' failed: this user has not authorized access to the MCP server "
            f"{loopback.url} (the authorization server answered 'access_denied')"
        )
        assert "carol" not in mount.users
        assert whoami(mount, "dave").content == "dave"  # the others are not affected


def test_an_authorize_that_answers_none_or_raises_is_a_refusal(loopback: LoopbackOAuth) -> None:
    def authorize(request: AuthorizationRequest) -> str | None:
        if request.user == "erin":
            return None
        if request.user == "frank":
            raise RuntimeError("the browser crashed, token=abc")
        return Browser().authorize(request)

    oauth = OAuth(authorize, redirect_uri=REDIRECT, user=lambda deps: deps["user"])
    with Mount(loopback.url, oauth=oauth) as mount:
        for user in ("erin", "frank"):
            result = whoami(mount, user)
            assert result.error_kind == "failed"
            assert "this user has not authorized access to the MCP server" in result.content
            assert "crashed" not in result.content


def test_the_mount_fails_when_the_application_does_not_authorize(loopback: LoopbackOAuth) -> None:
    browser = Browser(decline=(None,))
    oauth = OAuth(browser.authorize, redirect_uri=REDIRECT)
    with pytest.raises(McpConnectionError) as raised:
        Mount(loopback.url, oauth=oauth).open()
    assert str(raised.value) == (
        f"cannot mount the MCP server {loopback.url}: the application has not authorized "
        f"access to the MCP server {loopback.url} (the authorization server answered "
        "'access_denied')"
    )


def test_an_authorization_that_takes_too_long_fails_the_mount(loopback: LoopbackOAuth) -> None:
    async def slow(request: AuthorizationRequest) -> str:
        await asyncio.sleep(30)
        raise AssertionError("never")

    oauth = OAuth(slow, redirect_uri=REDIRECT, authorize_timeout=0.2)
    with pytest.raises(McpConnectionError, match=r"did not authorize access .* within 0\.2 s"):
        Mount(loopback.url, oauth=oauth, connect_timeout=5).open()


def test_scopes_are_stepped_up_on_insufficient_scope(loopback: LoopbackOAuth) -> None:
    browser = Browser(decline=())
    with Mount(loopback.url, oauth=per_user(browser)) as mount:
        assert whoami(mount, "alice").content == "alice"
        report = mount.dispatcher.dispatch_tool(
            "admin_report", {}, context={"user": "alice"}, confirm=yes
        )
        assert report.content == "the report, for alice"
        assert whoami(mount, "alice").content == "alice"  # the other grants kept
    alice = [r for r in browser.asked if r.user == "alice"]
    assert len(alice) == 2  # asked again for the step-up, with every scope
    assert "admin" in alice[1].scopes
    assert "notes" in alice[1].scopes
    assert "admin" not in alice[0].scopes


def test_a_declined_step_up_is_told_to_the_model(loopback: LoopbackOAuth) -> None:
    class Once(Browser):
        def authorize(self, request: AuthorizationRequest) -> str | None:
            if "admin" in request.scopes:
                self.asked.append(request)
                return None
            return super().authorize(request)

    browser = Once()
    with Mount(loopback.url, oauth=per_user(browser)) as mount:
        report = mount.dispatcher.dispatch_tool(
            "admin_report", {}, context={"user": "gina"}, confirm=yes
        )
        assert report.error_kind == "failed"
        assert "this user has not authorized access" in report.content
        assert whoami(mount, "gina").content == "gina"  # the session goes on


def test_a_replayed_authorization_response_is_refused(loopback: LoopbackOAuth) -> None:
    answers: list[str] = []

    def replaying(request: AuthorizationRequest) -> str | None:
        if answers:  # the first user's answer, again: another state, a used code
            return answers[0]
        answer = Browser().authorize(request)
        answers.append(answer or "")
        return answer

    oauth = OAuth(replaying, redirect_uri=REDIRECT, user=lambda deps: deps["user"])
    with Mount(loopback.url, oauth=oauth) as mount:  # the application's answer is used
        result = whoami(mount, "mallory")
        assert result.error_kind == "failed"
        assert "the authorization with the MCP server" in result.content
        assert "mallory" not in mount.users


@pytest.fixture(scope="module")
def hostile_mount(loopback: LoopbackOAuth) -> Iterator[tuple[Mount, dict[str, Any]]]:
    answers: dict[str, Any] = {}

    def authorize(request: AuthorizationRequest) -> Any:
        if request.user is None:
            return Browser().authorize(request)
        return answers[str(request.user)]

    oauth = OAuth(authorize, redirect_uri=REDIRECT, user=lambda deps: deps["user"])
    with Mount(loopback.url, oauth=oauth, max_sessions=4) as mount:
        yield mount, answers


ANSWERS = st.one_of(
    st.none(),
    st.text(max_size=200),
    st.builds(
        lambda q: REDIRECT + "?" + q,
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz=&%?#:/+ \x00\u00e9", max_size=300),
    ),
    st.sampled_from(
        [
            REDIRECT + "?code=",
            REDIRECT + "?error=" + "x" * 5000,
            REDIRECT + "?error=access_denied&error_description=%3Cscript%3E",
            REDIRECT + "?code=abc&state=nope",
            REDIRECT + "?" + "&".join(f"k{i}=v" for i in range(200)),
            "x" * 100_000,
        ]
    ),
)


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(answer=ANSWERS)
def test_whatever_authorize_answers_a_call_fails_short_and_safe(
    hostile_mount: tuple[Mount, dict[str, Any]], answer: Any
) -> None:
    mount, answers = hostile_mount
    user = f"u{len(answers)}"
    answers[user] = answer
    result = whoami(mount, user)
    assert not result.ok
    assert result.error_kind == "failed"
    assert len(result.content) < 400
    assert result.content.replace("\n", " ").isprintable()
    assert "Traceback" not in result.content


def test_oauth_is_checked_where_it_is_given(loopback: LoopbackOAuth) -> None:
    browser = Browser()
    with pytest.raises(ValueError, match="a function of an AuthorizationRequest"):
        OAuth(None, redirect_uri=REDIRECT)
    with pytest.raises(ValueError, match="redirect_uri="):
        OAuth(browser.authorize, redirect_uri="localhost:8765")
    with pytest.raises(ValueError, match="client_metadata_url="):
        OAuth(browser.authorize, redirect_uri=REDIRECT, client_metadata_url="http://x/m.json")
    with pytest.raises(ValueError, match="a list of scopes"):
        OAuth(browser.authorize, redirect_uri=REDIRECT, scopes="notes admin")
    with pytest.raises(ValueError, match="a state store"):
        OAuth(browser.authorize, redirect_uri=REDIRECT, store={})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="authorize_timeout"):
        OAuth(browser.authorize, redirect_uri=REDIRECT, authorize_timeout=0)
    with pytest.raises(ValueError, match="one of the two"):
        OAuth.client_credentials("id")
    with pytest.raises(ValueError, match="a PEM private key"):
        OAuth.client_credentials("id", private_key="not a key")
    oauth = OAuth(browser.authorize, redirect_uri=REDIRECT)
    with pytest.raises(ValueError, match="one or the other"):
        Mount(loopback.url, oauth=oauth, credentials=lambda request: "t")
    with pytest.raises(ValueError, match="not a stdio command"):
        Mount(["python", "-c", "pass"], oauth=oauth)
    with pytest.raises(ValueError, match="OAuth sets it"):
        Mount(loopback.url, oauth=oauth, headers={"authorization": "Bearer x"})
    with pytest.raises(ValueError, match=r"Mount\(oauth=...\): an OAuth"):
        Mount(loopback.url, oauth="token")  # type: ignore[arg-type]
    secret = OAuth.client_credentials("the-id", "s3cr3t-client-secret")
    assert "s3cr3t" not in repr(secret)
    assert "the-id" in repr(secret)


def test_a_user_id_that_cannot_key_tokens_is_the_applications_mistake(
    loopback: LoopbackOAuth,
) -> None:
    oauth = OAuth(Browser().authorize, redirect_uri=REDIRECT, user=lambda deps: deps)
    with Mount(loopback.url, oauth=oauth) as mount:
        result = mount.dispatcher.dispatch_tool("whoami", {}, context=object(), confirm=yes)
        assert not result.ok  # told as a failure of the tool, redacted


# -- no token anywhere but the request ---------------------------------------------------------


@pytest.mark.slow
def test_no_token_in_model_text_logs_traces_or_saved_state(
    loopback: LoopbackOAuth, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import toolreg
    from toolreg import Conversation
    from toolreg.testing import ScriptedServer, call, text, tool_calls

    issuer = loopback.issuer
    before = set(issuer.access) | set(issuer.refresh)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    toolreg.instrument(provider)
    turns = [
        tool_calls(call("echo_token"), call("whoami"), call("admin_report")),
        text("done"),
    ]
    declined = Browser(decline=("zoe",))
    try:
        with (
            caplog.at_level(logging.DEBUG),
            Mount(loopback.url, oauth=per_user(Browser())) as mount,
            ScriptedServer(turns) as model,
        ):
            chat = Conversation(
                model.client(),
                "m",
                registry=mount,
                context={"user": "alice"},
                confirm=yes,
            )
            reply = chat.send("show me")
            state = chat.export_state()
            requests = json.dumps(model.requests)
            with Mount(loopback.url, oauth=per_user(declined)) as other:
                zoe = whoami(other, "zoe")
    finally:
        toolreg.uninstrument()
    tokens = (set(issuer.access) | set(issuer.refresh)) - before
    assert len(tokens) >= 4  # the application's and alice's, access and refresh, and more
    results = [r.content for r in reply.tool_results] + [zoe.content]
    assert "[redacted]" in results[0]
    assert results[1] == "alice"
    spans = json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [
                    {"name": e.name, "attributes": dict(e.attributes or {})} for e in s.events
                ],
            }
            for s in exporter.get_finished_spans()
        ],
        default=str,
    )
    assert exporter.get_finished_spans()
    formatter = logging.Formatter("%(name)s %(message)s")
    logs = "\n".join(formatter.format(r) for r in caplog.records)
    assert "OAuth" in logs or "oauth" in logs or caplog.records  # something was logged
    for token in tokens:
        for where, found in (
            ("a result", "\n".join(results)),
            ("what the model was sent", requests),
            ("a log record", logs),
            ("a span", spans),
            ("the saved state", json.dumps(state)),
        ):
            assert token not in found, f"a token in {where}"
