"""Per-user credentials for an OpenAPI toolset, resolved per call from the call's context;
and no secret ever reaches model-visible text, a log record, a trace or a saved state."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolreg
from toolreg import Conversation, ToolRegistry
from toolreg.mcp.serving import HttpServer
from toolreg.sources import CredentialRequest, Credentials, OpenAPI, Secret
from toolreg.testing import ScriptedServer, call, text, tool_calls
from toolreg.toolsets import combined

sys.path.insert(0, str(Path(__file__).parents[1]))
import _openapi_app as shop


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    with HttpServer(shop.app) as running:
        yield running


class Vault:
    """The application's store of each user's secrets, and what it was asked."""

    def __init__(self) -> None:
        self.tokens = {"alice": shop.new_token("alice"), "bob": shop.new_token("bob")}
        self.asked: list[CredentialRequest] = []
        self.expires_in: float | None = None

    def fetch(self, request: CredentialRequest) -> Secret | str | None:
        self.asked.append(request)
        user = request.context["user"] if isinstance(request.context, dict) else None
        if request.scheme == "HTTPBearer":
            if request.refresh and user in self.tokens:
                self.tokens[user] = shop.new_token(user)
            token = self.tokens.get(user)
            if token is None:
                return None
            at = None if self.expires_in is None else time.time() + self.expires_in
            return Secret(token, expires_at=at)
        if request.scheme == "HTTPBasic":
            return Secret(shop.PASSWORDS["carol"], username="carol") if user == "carol" else None
        return next((k for k, v in shop.KEYS.items() if v == user), None)  # the API keys


@pytest.fixture
def vault() -> Vault:
    return Vault()


@pytest.fixture
def api(server: HttpServer, vault: Vault) -> Iterator[OpenAPI]:
    credentials = Credentials(vault.fetch, user=lambda deps: deps["user"])
    with OpenAPI.from_url(server.url + "/openapi.json", credentials=credentials) as toolset:
        yield toolset


def run(api: OpenAPI, tool: str, user: str | None, /, **arguments: Any) -> Any:
    context = None if user is None else {"user": user}
    return api.dispatcher.dispatch_tool(tool, arguments, context=context)


def test_two_users_of_one_toolset_each_see_their_own_data(api: OpenAPI) -> None:
    shop.SEEN.clear()
    alice = run(api, "my_notes", "alice")
    bob = run(api, "my_notes", "bob")
    assert json.loads(alice.content) == {"user": "alice", "notes": shop.NOTES["alice"]}
    assert json.loads(bob.content) == {"user": "bob", "notes": shop.NOTES["bob"]}
    assert shop.SEEN == [{"user": "alice"}, {"user": "bob"}]


def test_a_user_without_a_credential_is_told_so(api: OpenAPI, vault: Vault) -> None:
    run(api, "my_notes", "alice")  # another user's secret, kept: never lent
    shop.SEEN.clear()
    for user in ("mallory", None):
        result = run(api, "my_notes", user)
        assert not result.ok
        assert result.error_kind == "failed"
        assert result.content.startswith(
            "Tool 'my_notes' needs a credential (HTTPBearer) that the current user does not have"
        )
    assert shop.SEEN == []  # nothing was sent
    assert [r.tool for r in vault.asked][-1] == "my_notes"


def test_the_request_names_the_scheme_the_tool_and_the_context(api: OpenAPI, vault: Vault) -> None:
    run(api, "my_notes", "alice")
    (request,) = vault.asked
    assert (request.scheme, request.kind, request.tool, request.refresh) == (
        "HTTPBearer",
        "bearer",
        "my_notes",
        False,
    )
    assert request.context == {"user": "alice"}


def test_api_keys_in_the_query_and_a_cookie_and_basic_auth(api: OpenAPI) -> None:
    shop.KEYS["key-of-dave-7d1e0c2b9f4a"] = "dave"
    assert json.loads(run(api, "keyed_by_query", "dave").content) == {"user": "dave"}
    assert json.loads(run(api, "keyed_by_cookie", "dave").content) == {"user": "dave"}
    assert json.loads(run(api, "keyed_by_basic", "carol").content) == {"user": "carol"}
    assert not run(api, "keyed_by_basic", "dave").ok  # dave has no password


def test_a_secret_with_an_expiry_is_kept_until_then(api: OpenAPI, vault: Vault) -> None:
    vault.expires_in = 3600
    for _ in range(3):
        assert run(api, "my_notes", "alice").ok
    assert len(vault.asked) == 1
    vault.expires_in = -1  # expired when given: asked for on each call
    for _ in range(2):
        assert run(api, "my_notes", "bob").ok
    assert len(vault.asked) == 3


def test_a_refused_secret_is_refreshed_once_and_the_call_retried(
    api: OpenAPI, vault: Vault
) -> None:
    vault.expires_in = 3600
    assert run(api, "my_notes", "alice").ok
    del shop.TOKENS[vault.tokens["alice"]]  # revoked: the kept one now answers 401
    result = run(api, "my_notes", "alice")
    assert result.ok, result.content
    assert [r.refresh for r in vault.asked] == [False, True]
    assert run(api, "my_notes", "alice").ok  # the fresh one was kept
    assert len(vault.asked) == 2


def test_an_async_provider_under_async_dispatch(server: HttpServer, vault: Vault) -> None:
    async def fetch(request: CredentialRequest) -> Secret | str | None:
        await asyncio.sleep(0)
        return vault.fetch(request)

    async def main() -> list[Any]:
        async with OpenAPI.from_url(
            server.url + "/openapi.json", credentials=Credentials(fetch, user=lambda d: d["user"])
        ) as api:
            dispatcher = api.dispatcher
            return [
                await dispatcher.adispatch_tool("my_notes", {}, context={"user": user})
                for user in ("alice", "bob")
            ]

    alice, bob = asyncio.run(main())
    assert json.loads(alice.content)["user"] == "alice"
    assert json.loads(bob.content)["user"] == "bob"


def test_no_cookie_of_one_user_reaches_another(api: OpenAPI) -> None:
    assert run(api, "start_session", "alice").ok  # the API sets a cookie for alice
    assert json.loads(run(api, "read_session", "bob").content) == {"user": "bob", "session": None}


def test_an_unhashable_context_without_user_is_asked_every_time(server: HttpServer) -> None:
    asked: list[Any] = []
    token = shop.new_token("alice")

    def fetch(request: CredentialRequest) -> Secret:
        asked.append(request.context)
        return Secret(token, expires_at=time.time() + 3600)

    with OpenAPI.from_url(server.url + "/openapi.json", credentials=fetch) as api:
        assert run(api, "my_notes", "alice").ok
        assert run(api, "my_notes", "alice").ok
    assert len(asked) == 2  # a dict says nobody to keep a secret by


def test_secret_values_are_checked_and_never_shown() -> None:
    secret = Secret("s3cr3t-value-0123456789", expires_at=1.0)
    assert "s3cr3t" not in repr(secret)
    with pytest.raises(ValueError, match="control characters"):
        Secret("abc\r\nX-Injected: 1")
    with pytest.raises(ValueError, match="no ':'"):
        Secret("pw", username="a:b")


# -- no secret anywhere but the request ------------------------------------------------------


def test_no_secret_in_model_text_logs_traces_or_saved_state(
    server: HttpServer, vault: Vault, caplog: pytest.LogCaptureFixture
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    toolreg.instrument(provider)
    shop.KEYS["key-of-erin-4b8d2f6a0c1e"] = "erin"
    secrets = [vault.tokens["alice"], "key-of-erin-4b8d2f6a0c1e"]
    credentials = Credentials(vault.fetch, user=lambda deps: deps["user"])
    turns = [
        tool_calls(
            call("echo_token"),  # a 200 that quotes the token
            call("echo_token", status=400),  # a 4xx that does
            call("echo_token", status=503),  # a 5xx that does (errors="full": as it is)
            call("keyed_by_query"),  # the key travels in the URL
            call("fail", code=500),
        ),
        text("done"),
    ]
    try:
        with (
            caplog.at_level(logging.DEBUG),
            OpenAPI.from_url(server.url + "/openapi.json", credentials=credentials) as api,
            ScriptedServer(turns) as model,
        ):
            tools = combined(ToolRegistry(errors="full"), api)
            chat = Conversation(model.client(), "m", registry=tools, context={"user": "alice"})
            reply = chat.send("show me")
            erin = api.dispatcher.dispatch_tool("keyed_by_query", {}, context={"user": "erin"})
            state = chat.export_state()
            requests = json.dumps(model.requests)
    finally:
        toolreg.uninstrument()
    seen = [r.content for r in reply.tool_results] + [erin.content]
    assert [r.ok for r in reply.tool_results] == [True, False, False, False, False]
    assert "[redacted]" in seen[0]
    assert erin.ok
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
    logs = "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)
    for secret in secrets:
        for where, found in (
            ("a result", "\n".join(seen)),
            ("what the model was sent", requests),
            ("a span", spans),
            ("a log record", logs),
            ("the saved state", json.dumps(state)),
        ):
            assert secret not in found, f"the secret is in {where}"
