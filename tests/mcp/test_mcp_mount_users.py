"""One `Mount` of an MCP server over HTTP, many users: `credentials=` calls the server as
the user each call's context names, each on a session of their own, with their own token."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.auth.provider import AccessToken

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import Mount, ResourceServer, asgi_app
from toolreg.mcp.serving import HttpServer
from toolreg.sources import CredentialRequest, Credentials, Secret

NOTES = {"alice": ["alice's plan"], "bob": ["bob's list"], "service": []}
TOKENS: dict[str, str] = {}  # what the server accepts now -> its user
SEEN: list[str] = []  # the user of every call the server ran
_numbers = itertools.count()


def issue(user: str) -> str:
    token = f"mcp-{user}-{next(_numbers)}-0f3c9a1b7d2e4c6a8b0d1f3e5a7c9b2d"
    TOKENS[token] = user
    return token


def verify(token: str) -> AccessToken | None:
    user = TOKENS.get(token)
    if user is None:
        return None
    return AccessToken(token=token, client_id="app", scopes=[], subject=user)


def server_tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(read_only=True)
    def my_notes(ctx: ToolContext[dict[str, str]]) -> list[str]:
        """The caller's notes."""
        SEEN.append(ctx.deps["user"])
        return NOTES[ctx.deps["user"]]

    @registry.register_tool(read_only=True)
    def echo_token(ctx: ToolContext[dict[str, str]]) -> str:
        """A careless tool that quotes the caller's token."""
        return f"you sent {ctx.deps['token']}"

    return registry


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    auth = ResourceServer(
        verify,
        resource="https://mcp.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
    )

    def context(request: Any) -> dict[str, str]:
        return {"user": request.token.subject, "token": request.token.token}

    with HttpServer(asgi_app(server_tools(), auth=auth, context=context)) as running:
        yield running


class Vault:
    """The application's tokens: one per user, the service's for the mount's own listing."""

    def __init__(self, users: tuple[str, ...] = ("alice", "bob")) -> None:
        self.tokens = {user: issue(user) for user in users}
        self.tokens[None] = issue("service")  # type: ignore[index]
        self.asked: list[CredentialRequest] = []
        self.expires_in: float | None = 3600.0
        self.renew = True  # a refresh issues a new token

    def fetch(self, request: CredentialRequest) -> Secret | None:
        self.asked.append(request)
        user = None if request.context is None else request.context["user"]
        if request.refresh and user in self.tokens and self.renew:
            self.tokens[user] = issue(user or "service")
        token = self.tokens.get(user)
        if token is None:
            return None
        at = None if self.expires_in is None else time.time() + self.expires_in
        return Secret(token, expires_at=at)


def credentials(vault: Vault) -> Credentials:
    return Credentials(vault.fetch, user=lambda deps: deps["user"])


def notes(mount: Mount, user: str) -> Any:
    return mount.dispatcher.dispatch_tool("my_notes", {}, context={"user": user})


def test_two_users_through_one_mount_each_see_their_own(server: HttpServer) -> None:
    vault = Vault()
    SEEN.clear()
    with Mount(server.url, credentials=credentials(vault), trust_annotations=True) as mount:
        assert mount.names == ["my_notes", "echo_token"]  # listed as the service
        assert notes(mount, "alice").content == '["alice\'s plan"]'
        assert notes(mount, "bob").content == '["bob\'s list"]'
        assert notes(mount, "alice").content == '["alice\'s plan"]'
        assert sorted(mount.users) == ["alice", "bob"]
        charlie = notes(mount, "charlie")  # no credential: told so, nobody else's used
        assert not charlie.ok
        assert charlie.error_kind == "failed"
        assert charlie.content.startswith(
            "Tool 'my_notes' needs a credential for the MCP server http://127.0.0.1:"
        )
        assert "charlie" not in mount.users
    assert SEEN == ["alice", "bob", "alice"]
    # kept until they expire: one fetch per user (and the service), however many calls
    fetched = [r.context and r.context["user"] for r in vault.asked if not r.refresh]
    assert fetched.count("alice") == 1
    assert fetched.count("bob") == 1


def test_an_expired_token_is_asked_for_again(server: HttpServer) -> None:
    vault = Vault()
    vault.expires_in = -1.0  # expired as soon as given: asked for on every request
    with Mount(server.url, credentials=credentials(vault), trust_annotations=True) as mount:
        asked = len(vault.asked)
        assert notes(mount, "alice").ok
        assert notes(mount, "alice").ok
    assert len([r for r in vault.asked[asked:] if r.context == {"user": "alice"}]) >= 4


def test_a_refused_token_is_refreshed_once(server: HttpServer) -> None:
    vault = Vault()
    with Mount(server.url, credentials=credentials(vault), trust_annotations=True) as mount:
        assert notes(mount, "alice").ok
        del TOKENS[vault.tokens["alice"]]  # revoked at the server: the next request is a 401
        again = notes(mount, "alice")
        assert again.ok, again.content
        assert [r.refresh for r in vault.asked if r.context == {"user": "alice"}][-1] is True
        vault.renew = False  # revoked again, and nothing new to give
        del TOKENS[vault.tokens["alice"]]
        denied = notes(mount, "alice")
        assert not denied.ok
        assert denied.content.startswith(
            "Tool 'my_notes' failed: the MCP server refused this user's credential (HTTP 401)."
        )
        assert notes(mount, "bob").ok  # another user's session is not concerned


def test_sessions_are_bounded(server: HttpServer) -> None:
    vault = Vault(("alice", "bob"))
    with Mount(
        server.url, credentials=credentials(vault), trust_annotations=True, max_sessions=1
    ) as mount:
        assert notes(mount, "alice").ok
        assert mount.users == ["alice"]
        assert notes(mount, "bob").ok
        assert mount.users == ["bob"]  # alice's idle session was closed for bob's
        assert notes(mount, "alice").ok
        assert mount.users == ["alice"]


def test_a_token_a_server_quotes_back_never_reaches_the_model(server: HttpServer) -> None:
    vault = Vault()
    with Mount(server.url, credentials=credentials(vault), trust_annotations=True) as mount:
        result = mount.dispatcher.dispatch_tool("echo_token", {}, context={"user": "bob"})
    assert result.ok
    assert result.content == "you sent [redacted]"
    assert vault.tokens["bob"] not in repr(result)


def test_credentials_need_a_server_over_http() -> None:
    with pytest.raises(ValueError, match="credentials= is for an MCP server over HTTP"):
        Mount(["python", "-m", "server"], credentials=lambda request: None)
