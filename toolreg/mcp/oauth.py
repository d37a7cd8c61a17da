"""OAuth 2.1 for a mounted MCP server: `Mount(url, oauth=OAuth(...))`.

Most hosted MCP servers are OAuth 2.1 resource servers: a request without a token they
accept is a 401 that says where to find their authorization server. The protocol is the
MCP SDK's own client (`mcp.client.auth`): protected-resource metadata (RFC 9728) and
authorization-server metadata (RFC 8414, OpenID discovery) found from that 401, the client
registered dynamically (RFC 7591), named by a client ID metadata document
(`client_metadata_url=`) or registered beforehand (`client_id=`), PKCE (S256), the resource
indicator (RFC 8707), tokens refreshed when they expire, and more scopes asked for when the
server answers 403 `insufficient_scope`. toolreg adds three things to it:

- **The interactive step is a callback.** `authorize(request)` gets an
  `AuthorizationRequest`: the `url` to send the user's browser to, whose authorization it is
  (`user`, `context`) and the `redirect_uri` the browser comes back to. It returns the URL
  the browser came back to (`redirect_uri?code=...&state=...`), or None when the user did not
  authorize; it may be sync (run in a thread of its own: it may wait on a local HTTP server)
  or async, and it has `authorize_timeout` seconds.

  ```python
  async def authorize(request: AuthorizationRequest) -> str | None:
      webbrowser.open(request.url)
      return await my_callback_server.next_request()  # "http://127.0.0.1:8765/callback?code=..."

  oauth = OAuth(authorize, redirect_uri="http://127.0.0.1:8765/callback",
                store=SQLiteStore("tokens.db"))
  with Mount("https://mcp.example.com/mcp", oauth=oauth) as remote:
      ...
  ```

- **Tokens are kept in a state store** (`toolreg.stores`: `MemoryStore` by default, so a new
  process authorizes again; `SQLiteStore` for one machine; `RedisStore` for many): one record
  per user of each server, and the client's registration per server (shared by its users).
  Records are named by digests (`oauth.<profile>.<user>`): no URL, client or user id in a key.
  A stored record is checked when read back; one that does not parse is ignored (the user
  authorizes again). A token is refreshed with its refresh token when it has expired, also
  after a restart (its expiry is kept with it).

- **One mount, many users.** With `user=` (a function of a call's context, e.g.
  `lambda deps: deps["user_id"]`), each user calls the server on a session of their own with
  their own tokens (`toolreg.mcp.users`), and `authorize` is asked for that user when they
  have none (during their first call, within its `timeout`; or before it, at their pace,
  with `Mount.sign_in(context)`). The mount's own session (the one that lists the tools) is
  the application's: `authorize` is asked for `user=None` when no tokens are stored for it.
  Without `user=`, every call is made with the mount's one identity.

Machine-to-machine servers take `OAuth.client_credentials(client_id, client_secret)` (or
`private_key=`: a `private_key_jwt` client assertion, RFC 7523; needs the `auth` extra), and
enterprise-managed authorization (SEP-990) `OAuth.identity_assertion(...)`: an identity
assertion grant (ID-JAG) from the enterprise's identity provider, obtained by the
application's `assertion(request)` callback, exchanged at the server's authorization server.

Tokens never reach the model, a log line, a trace or a saved conversation: the SDK puts them
in the `Authorization` header; a mounted tool's result or error text that quotes one has it
replaced by `[redacted]`; a failure the model reads says what happened in toolreg's words
("this user has not authorized ..."), and the mount's own errors never quote the
authorization server. When the user does not authorize (or the authorization fails), a
call gets an observation that says so, and the mount's own session fails the mount with an
`McpConnectionError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import AsyncGenerator, Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from ..dispatch.calling import oauth_callback
from ..errors import ToolregError, UsageError, with_article
from ..sources.credentials import MAX_SECRET_CHARS, Secret
from ..stores.base import AsyncStateStore, StateStore
from ..stores.memory import MemoryStore

__all__ = [
    "AssertionRequest",
    "AuthorizationRequest",
    "OAuth",
    "OAuthAuth",
    "OAuthUsers",
]

_log = logging.getLogger("toolreg.mcp")

Grant = Literal["authorization_code", "client_credentials", "identity_assertion"]
_MAX_ANSWER = 16384  # characters of the URL `authorize` answers
_MAX_SCOPES = 64
_CONFLICTS = 5  # saves of one record retried after another writer's (then it gives up)


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    """What `OAuth(authorize=...)` is asked: send the user's browser to `url` (the
    authorization server's page, with PKCE and a fresh `state`), and answer the URL it comes
    back to (`redirect_uri` with `code` and `state`), or None if the user did not authorize.

    `user` is whose authorization it is (`OAuth(user=...)` of the call's `context`; None:
    the application's own, for the mount's own session), `server` the MCP server (its URL,
    query values hidden), `scopes` the scopes asked for (empty: the server's default)."""

    url: str
    redirect_uri: str
    server: str
    user: Hashable = None
    context: Any = None
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AssertionRequest:
    """What `OAuth.identity_assertion(assertion=...)` is asked: an identity assertion grant
    (ID-JAG, SEP-990) from the enterprise's identity provider for the user of `context`,
    whose audience is `audience` (the MCP server's authorization server) and whose
    resource is `resource` (the MCP server)."""

    audience: str
    resource: str
    server: str
    user: Hashable = None
    context: Any = None


Authorize = Callable[[AuthorizationRequest], Any]
Assertion = Callable[[AssertionRequest], Any]


class _Declined(ToolregError):
    """The authorization did not happen; `problem` says why, in words a model may read."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class OAuth:
    """How a `Mount` authorizes with an OAuth 2.1 MCP server (see the module): the
    authorization-code flow with PKCE, `authorize` being the user's part of it.

    Args:
        authorize: `authorize(request: AuthorizationRequest)`, sync or async: the URL the
            user's browser came back to after `request.url`, or None (not authorized).
        redirect_uri: where the authorization server sends the browser back (registered
            with it), e.g. `http://127.0.0.1:8765/callback`.
        store: where tokens are kept (a `toolreg.stores` state store; default: a
            `MemoryStore` of this `OAuth`).
        scopes: the scopes to ask for; default: the ones the server's 401 or metadata names.
        client_name: the name the client registers with (dynamic registration).
        client_id, client_secret: a client registered beforehand (no registration then);
            with a secret, it authenticates with `client_secret_basic`, or as
            `token_endpoint_auth_method` says.
        client_metadata_url: an `https://` URL of this client's metadata document, used as
            its client id by an authorization server that supports them (else it registers).
        user: who a call's context is, e.g. `lambda deps: deps["user_id"]`: each user gets
            their own tokens and session; None (the default): one identity for every call.
            A user is a str, an int, or a tuple of them (the key their tokens are kept by).
        authorize_timeout: seconds `authorize` has (the user is in a browser meanwhile).

    Raises:
        UsageError: an argument is wrong (not callable, not a URL, a negative timeout...).
    """

    grant: Grant
    """The OAuth grant: `authorization_code`, `client_credentials`, `identity_assertion`."""
    authorize: Authorize | None
    redirect_uri: str | None
    client_name: str
    client_id: str | None
    client_metadata_url: str | None
    token_endpoint_auth_method: str | None
    issuer: str | None
    user: Callable[[Any], Hashable] | None

    def __init__(
        self,
        authorize: Authorize | None = None,
        *,
        redirect_uri: str | None = None,
        store: StateStore | AsyncStateStore | None = None,
        scopes: Iterable[str] | None = None,
        client_name: str = "toolreg",
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        user: Callable[[Any], Hashable] | None = None,
        authorize_timeout: float = 300.0,
    ) -> None:
        if not callable(authorize):
            raise UsageError(
                "OAuth(authorize): a function of an AuthorizationRequest that sends the user to "
                "request.url and returns the URL their browser came back to (or None); for a "
                "server without a user, OAuth.client_credentials(client_id, client_secret)"
            )
        if not isinstance(redirect_uri, str) or not _is_url(redirect_uri):
            raise UsageError(
                f"OAuth(redirect_uri={redirect_uri!r}): the URL the authorization server sends "
                "the browser back to, e.g. redirect_uri='http://127.0.0.1:8765/callback'"
            )
        if client_metadata_url is not None and not (
            isinstance(client_metadata_url, str)
            and client_metadata_url.startswith("https://")
            and urlsplit(client_metadata_url).path not in ("", "/")
        ):
            raise UsageError(
                f"OAuth(client_metadata_url={client_metadata_url!r}): an https:// URL with a "
                "path, where this client's metadata document is published"
            )
        if client_secret is not None and client_id is None:
            raise UsageError("OAuth(client_secret=...) needs the client_id it belongs to")
        methods = (None, "none", "client_secret_basic", "client_secret_post")
        if token_endpoint_auth_method not in methods:
            raise UsageError(
                f"OAuth(token_endpoint_auth_method={token_endpoint_auth_method!r}): one of "
                "'client_secret_basic', 'client_secret_post', 'none'"
            )
        self._setup(
            "authorization_code", store, scopes, user, authorize_timeout, client_id, client_secret
        )
        self.authorize = authorize
        self.redirect_uri = redirect_uri
        self.client_name = _text("client_name", client_name)
        self.client_metadata_url = client_metadata_url
        self.token_endpoint_auth_method = token_endpoint_auth_method or (
            None if client_id is None else "client_secret_basic" if client_secret else "none"
        )

    def _setup(
        self,
        grant: Grant,
        store: object,
        scopes: Iterable[str] | None,
        user: object,
        timeout: object,
        client_id: str | None,
        client_secret: str | None,
    ) -> None:
        self.grant = grant
        if store is None:
            store = MemoryStore()
        if not (isinstance(store, (AsyncStateStore, StateStore))):
            raise UsageError(
                f"OAuth(store=...): a state store (MemoryStore, SQLiteStore, RedisStore), not "
                f"{with_article(type(store).__name__)}"
            )
        self.store: StateStore | AsyncStateStore = store
        self.scopes = _scopes(scopes)
        if user is not None and not callable(user):
            raise UsageError(
                "OAuth(user=...): a function of a call's context, e.g. "
                "user=lambda deps: deps['user_id']"
            )
        self.user = user
        self.authorize_timeout = _seconds("authorize_timeout", timeout)
        self.client_id = None if client_id is None else _text("client_id", client_id)
        self._client_secret = None if client_secret is None else _secret_text(client_secret)
        self.authorize = None
        self.redirect_uri = None
        self.client_name = "toolreg"
        self.client_metadata_url = None
        self.token_endpoint_auth_method = None
        self._private_key: str | None = None
        self._signing_algorithm = "ES256"
        self.issuer = None
        self._assertion: Assertion | None = None

    @classmethod
    def client_credentials(
        cls,
        client_id: str,
        client_secret: str | None = None,
        *,
        private_key: str | None = None,
        signing_algorithm: str = "ES256",
        issuer: str | None = None,
        scopes: Iterable[str] | None = None,
        store: StateStore | AsyncStateStore | None = None,
        token_endpoint_auth_method: str = "client_secret_basic",
    ) -> OAuth:
        """The client-credentials grant (no user, no browser): the client authenticates with
        `client_secret` (`client_secret_basic` or `client_secret_post`), or with a JWT
        signed by `private_key` (PEM; `signing_algorithm`; `private_key_jwt`, RFC 7523; needs
        the `auth` extra). `issuer`: the authorization server these credentials belong to
        (they are sent nowhere else; recommended).

        Raises:
            UsageError: neither or both of `client_secret` and `private_key`, or another
                argument is wrong.
        """
        if (client_secret is None) == (private_key is None):
            raise UsageError(
                "OAuth.client_credentials(client_id, client_secret) or "
                "OAuth.client_credentials(client_id, private_key=PEM): one of the two"
            )
        if token_endpoint_auth_method not in ("client_secret_basic", "client_secret_post"):
            raise UsageError(
                f"OAuth.client_credentials(token_endpoint_auth_method="
                f"{token_endpoint_auth_method!r}): 'client_secret_basic' or 'client_secret_post'"
            )
        oauth = cls.__new__(cls)
        oauth._setup("client_credentials", store, scopes, None, 300.0, client_id, client_secret)
        oauth.token_endpoint_auth_method = (
            "private_key_jwt" if private_key is not None else token_endpoint_auth_method
        )
        if private_key is not None:
            if not isinstance(private_key, str) or "PRIVATE KEY" not in private_key:
                raise UsageError("OAuth.client_credentials(private_key=...): a PEM private key")
            oauth._private_key = private_key
            oauth._signing_algorithm = _text("signing_algorithm", signing_algorithm)
        oauth.issuer = None if issuer is None else _url("issuer", issuer)
        return oauth

    @classmethod
    def identity_assertion(
        cls,
        client_id: str,
        client_secret: str,
        *,
        issuer: str,
        assertion: Assertion,
        scopes: Iterable[str] | None = None,
        store: StateStore | AsyncStateStore | None = None,
        user: Callable[[Any], Hashable] | None = None,
        token_endpoint_auth_method: str = "client_secret_post",
        assertion_timeout: float = 60.0,
    ) -> OAuth:
        """Enterprise-managed authorization (SEP-990): `assertion(request: AssertionRequest)`
        (sync or async) answers an identity assertion grant (ID-JAG) that the enterprise's
        identity provider issued for the user (an RFC 8693 token exchange of their ID token,
        the application's part); it is exchanged (RFC 7523 jwt-bearer) at `issuer`, the
        authorization server this confidential client (`client_id`, `client_secret`) is
        registered with. `user=` as in `OAuth`.

        Raises:
            UsageError: an argument is wrong.
        """
        if not callable(assertion):
            raise UsageError(
                "OAuth.identity_assertion(assertion=...): a function of an AssertionRequest "
                "that returns the ID-JAG the identity provider issued"
            )
        if not isinstance(client_secret, str) or not client_secret:
            raise UsageError("OAuth.identity_assertion(...): the client_secret of client_id")
        if token_endpoint_auth_method not in ("client_secret_basic", "client_secret_post"):
            raise UsageError(
                f"OAuth.identity_assertion(token_endpoint_auth_method="
                f"{token_endpoint_auth_method!r}): 'client_secret_basic' or 'client_secret_post'"
            )
        timeout = _seconds("assertion_timeout", assertion_timeout)
        oauth = cls.__new__(cls)
        oauth._setup("identity_assertion", store, scopes, user, timeout, client_id, client_secret)
        oauth.issuer = _url("issuer", issuer)
        oauth._assertion = assertion
        oauth.token_endpoint_auth_method = token_endpoint_auth_method
        return oauth

    def __repr__(self) -> str:
        who = "per user" if self.user is not None else "one identity"
        client = "" if self.client_id is None else f" client_id={self.client_id!r}"
        return f"<OAuth {self.grant}{client}, {who}>"

    # -- for a mount --------------------------------------------------------------------------
    def user_of(self, context: Any) -> Hashable:
        """Who `context` is: `user(context)` (None without `user=`, or for no context).

        Raises:
            UsageError: `user(context)` is not a str, an int or a tuple of them.
        """
        if self.user is None or context is None:
            return None
        key = self.user(context)
        _user_text(key)  # raises for what cannot key a record
        return key

    def auth(self, server_url: str, label: str, context: Any) -> OAuthAuth:
        """The httpx authentication of one session with the MCP server `server_url` (shown
        as `label`), as the user of `context` (None: the mount's own session)."""
        user = self.user_of(context)
        record = _Record(self, server_url, user)
        return OAuthAuth(self._provider(server_url, label, user, context, record), record, label)

    def _provider(
        self, server_url: str, label: str, user: Hashable, context: Any, record: _Record
    ) -> httpx2.Auth:
        scope = " ".join(self.scopes) or None
        if self.grant == "authorization_code":
            assert self.redirect_uri is not None
            ask = _Asking(self, label, user, context)
            metadata = OAuthClientMetadata(
                client_name=self.client_name,
                redirect_uris=[AnyUrl(self.redirect_uri)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope=scope,
                token_endpoint_auth_method=None,
            )
            fixed = None
            if self.client_id is not None:
                fixed = OAuthClientInformationFull(
                    client_id=self.client_id,
                    client_secret=self._client_secret,
                    redirect_uris=[AnyUrl(self.redirect_uri)],
                    token_endpoint_auth_method=self.token_endpoint_auth_method,
                    grant_types=["authorization_code", "refresh_token"],
                )
            return _CodeFlow(
                record,
                fixed,
                server_url=server_url,
                client_metadata=metadata,
                storage=record,
                redirect_handler=ask.redirect,
                callback_handler=ask.callback,
                client_metadata_url=self.client_metadata_url,
            )
        if self.grant == "client_credentials":
            from mcp.client.auth.extensions.client_credentials import (
                ClientCredentialsOAuthProvider,
                PrivateKeyJWTOAuthProvider,
                SignedJWTParameters,
            )

            assert self.client_id is not None
            if self._private_key is not None:
                signed = SignedJWTParameters(
                    issuer=self.client_id,
                    subject=self.client_id,
                    signing_key=self._private_key,
                    signing_algorithm=self._signing_algorithm,
                )
                return PrivateKeyJWTOAuthProvider(
                    server_url,
                    record,
                    self.client_id,
                    signed.create_assertion_provider(),
                    scope=scope,
                    issuer=self.issuer,
                )
            assert self._client_secret is not None
            method: Any = self.token_endpoint_auth_method
            return ClientCredentialsOAuthProvider(
                server_url,
                record,
                self.client_id,
                self._client_secret,
                token_endpoint_auth_method=method,
                scope=scope,
                issuer=self.issuer,
            )
        from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

        assert self.client_id is not None
        assert self._client_secret is not None
        assert self.issuer is not None
        fetch = _Fetching(self, label, user, context)
        method = self.token_endpoint_auth_method
        return IdentityAssertionOAuthProvider(
            server_url,
            record,
            self.client_id,
            self._client_secret,
            self.issuer,
            fetch.assertion,
            scope=scope,
            token_endpoint_auth_method=method,
        )

    def profile(self, server_url: str) -> str:
        """The digest that names this client's records for the MCP server `server_url`: the
        server, the grant and the client (a changed `redirect_uri` registers again)."""
        parts = [
            server_url,
            self.grant,
            self.client_id,
            self.redirect_uri,
            self.client_metadata_url,
            self.client_name,
            self.issuer,
        ]
        return _digest(json.dumps(parts))

    async def forget(self, server_url: str, context: Any = None) -> bool:
        """Delete the tokens kept for the user of `context` (None: the application's own)
        at the MCP server `server_url`; True if there were any. The client's registration
        stays."""
        record = _Record(self, server_url, self.user_of(context))
        return await record.delete()


class OAuthUsers:
    """The `users.Authority` of `Mount(url, oauth=OAuth(..., user=...))`: each user's own
    tokens, authorized through `authorize` when they have none (no check before: whether
    they have tokens is known when their session opens)."""

    def __init__(self, oauth: OAuth, server_url: str, label: Callable[[], str]) -> None:
        self.oauth = oauth
        self.server_url = server_url
        self.label = label

    def user_of(self, context: Any) -> Hashable:
        return self.oauth.user_of(context)

    async def admit(self, context: Any, local: str, server: str) -> None:
        return None

    def auth(self, context: Any) -> OAuthAuth:
        return self.oauth.auth(self.server_url, self.label(), context)


class OAuthAuth(httpx2.Auth):
    """The httpx authentication of one session (`OAuth.auth`): the SDK's flow, watched —
    `refused` (the server still answered 401 after it), `problem` (why this user cannot be
    authorized, in words a model may read), `used` (every token kept or sent, to scrub)."""

    requires_response_body = True

    def __init__(self, flow: httpx2.Auth, record: _Record, label: str) -> None:
        self.flow = flow
        self.record = record
        self.label = label
        self.refused = False
        self.problem: str | None = None

    @property
    def used(self) -> dict[str, Secret]:
        return self.record.seen

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.flow.async_auth_flow(request)
        response: httpx2.Response | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                _note_bearer(outgoing, self.record)
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            pass
        except Exception as exc:
            self.problem = _problem(exc, self.label)
            raise
        finally:
            await flow.aclose()
        self.refused = response is not None and response.status_code == 401
        if not self.refused:
            self.problem = None  # authorized now (a step-up declined earlier is past)

    def sync_auth_flow(self, request: httpx2.Request) -> Any:
        raise RuntimeError("a mount's connections are async")  # pragma: no cover


class _CodeFlow(OAuthClientProvider):
    """The SDK's authorization-code provider, with a client registered beforehand (`fixed`,
    else the stored registration, else it registers), and a stored token's expiry restored
    with it (the SDK keeps only `expires_in`, relative to when it was issued), so that a
    token that expired while the process was down is refreshed rather than sent."""

    def __init__(
        self, record: _Record, fixed: OAuthClientInformationFull | None, **options: Any
    ) -> None:
        super().__init__(**options)
        self._record = record
        self._fixed = fixed

    async def _initialize(self) -> None:
        await super()._initialize()
        if self._fixed is not None:
            self.context.client_info = self._fixed
        if self.context.current_tokens is not None:
            self.context.token_expiry_time = self._record.expires_at


class _Asking:
    """The SDK's redirect and callback handlers of one session, as one `authorize` call."""

    def __init__(self, oauth: OAuth, label: str, user: Hashable, context: Any) -> None:
        self.oauth = oauth
        self.label = label
        self.user = user
        self.context = context
        self.url: str | None = None

    async def redirect(self, url: str) -> None:
        self.url = url

    async def callback(self) -> AuthorizationCodeResult:
        url, self.url = self.url, None
        oauth = self.oauth
        assert url is not None
        assert oauth.authorize is not None
        assert oauth.redirect_uri is not None
        asked = parse_qs(urlsplit(url).query).get("scope", [""])[0]
        request = AuthorizationRequest(
            url=url,
            redirect_uri=oauth.redirect_uri,
            server=self.label,
            user=self.user,
            context=self.context,
            scopes=tuple(asked.split()),
        )
        try:
            answer = await asyncio.wait_for(
                oauth_callback(oauth.authorize, request), oauth.authorize_timeout
            )
        except asyncio.TimeoutError:
            raise _Declined(
                f"{_whose(self.user)} did not authorize access to the MCP server {self.label} "
                f"within {oauth.authorize_timeout:g} s"
            ) from None
        except Exception as exc:
            _log.warning(
                "authorize= failed for the MCP server %s: %s", self.label, type(exc).__name__
            )
            raise _Declined(
                f"{_whose(self.user)} has not authorized access to the MCP server {self.label}"
            ) from exc
        return _code_of(answer, self.user, self.label)


class _Fetching:
    """The identity-assertion provider's `assertion_provider`, as one `assertion` call."""

    def __init__(self, oauth: OAuth, label: str, user: Hashable, context: Any) -> None:
        self.oauth = oauth
        self.label = label
        self.user = user
        self.context = context

    async def assertion(self, audience: str, resource: str) -> str:
        assert self.oauth._assertion is not None
        request = AssertionRequest(audience, resource, self.label, self.user, self.context)
        try:
            answer = await asyncio.wait_for(
                oauth_callback(self.oauth._assertion, request), self.oauth.authorize_timeout
            )
        except Exception as exc:
            _log.warning(
                "assertion= failed for the MCP server %s: %s", self.label, type(exc).__name__
            )
            raise _Declined(
                f"no identity assertion for {_whose(self.user)} at the MCP server {self.label}"
            ) from exc
        if not isinstance(answer, str) or not 0 < len(answer) <= MAX_SECRET_CHARS:
            raise _Declined(
                f"no identity assertion for {_whose(self.user)} at the MCP server {self.label}"
            )
        return answer


class _Record:
    """The SDK's `TokenStorage` over a state store: one user's tokens at one server (and the
    client's registration there, shared by its users). Every token read or written is
    noted in `seen` (to scrub from what the server sends back)."""

    def __init__(self, oauth: OAuth, server_url: str, user: Hashable) -> None:
        profile = oauth.profile(server_url)
        self.store = oauth.store
        self.tokens_id = f"oauth.{profile}.{_digest(_user_text(user))}"
        self.client_id = f"oauth.{profile}.client"
        self.expires_at: float | None = None
        self.seen: dict[str, Secret] = {}

    async def get_tokens(self) -> OAuthToken | None:
        state = await self._load(self.tokens_id)
        if state is None:
            return None
        try:
            tokens = OAuthToken.model_validate(state.get("tokens"))
        except ValidationError:
            _log.warning("ignored stored OAuth tokens that do not parse (%s)", self.tokens_id)
            return None
        at = state.get("expires_at")
        self.expires_at = float(at) if isinstance(at, (int, float)) and _finite(at) else None
        self._note(tokens)
        return tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._note(tokens)
        expires_in = tokens.expires_in
        self.expires_at = None if expires_in is None else time.time() + int(expires_in)
        state = {
            "tokens": tokens.model_dump(mode="json", exclude_none=True),
            "expires_at": self.expires_at,
        }
        await self._save(self.tokens_id, state)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        state = await self._load(self.client_id)
        if state is None:
            return None
        try:
            return OAuthClientInformationFull.model_validate(state.get("client"))
        except ValidationError:
            _log.warning("ignored a stored OAuth client that does not parse (%s)", self.client_id)
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        client = client_info.model_dump(mode="json", exclude_none=True)
        await self._save(self.client_id, {"client": client})

    async def delete(self) -> bool:
        store = self.store
        if isinstance(store, AsyncStateStore):
            return await store.adelete(self.tokens_id)
        return await asyncio.to_thread(store.delete, self.tokens_id)

    def _note(self, tokens: OAuthToken) -> None:
        for value in (tokens.access_token, tokens.refresh_token):
            _remember(value, self.seen)

    async def _load(self, id: str) -> dict[str, Any] | None:
        store = self.store
        if isinstance(store, AsyncStateStore):
            stored = await store.aload(id)
        else:
            stored = await asyncio.to_thread(store.load, id)
        return None if stored is None else stored.state

    async def _save(self, id: str, state: dict[str, Any]) -> None:
        """Write `state` under `id` whatever is there (the latest tokens win)."""
        from ..errors import StateConflictError

        store = self.store
        for _ in range(_CONFLICTS):
            try:
                if isinstance(store, AsyncStateStore):
                    stored = await store.aload(id)
                    await store.asave(id, state, None if stored is None else stored.version)
                else:
                    stored = await asyncio.to_thread(store.load, id)
                    version = None if stored is None else stored.version
                    await asyncio.to_thread(store.save, id, state, version)
                return
            except StateConflictError:
                continue
        _log.warning("could not save OAuth tokens (%s): other writers kept saving first", id)


def _note_bearer(request: httpx2.Request, record: _Record) -> None:
    value = request.headers.get("Authorization", "")
    if value[:7].lower() == "bearer ":
        _remember(value[7:], record.seen)


def _remember(value: str | None, seen: dict[str, Secret]) -> None:
    if value and value not in seen:
        with contextlib.suppress(UsageError):  # else no header could carry it, nor echo it
            seen[value] = Secret(value)


def _code_of(answer: object, user: Hashable, label: str) -> AuthorizationCodeResult:
    """The authorization response in the URL `authorize` answered (RFC 6749 §4.1.2)."""
    if answer is None:
        raise _Declined(f"{_whose(user)} has not authorized access to the MCP server {label}")
    if not isinstance(answer, str):
        raise UsageError(
            f"OAuth(authorize=...) returned {with_article(type(answer).__name__)}; return the URL "
            "the browser came back to (redirect_uri?code=...&state=...), or None"
        )
    if len(answer) > _MAX_ANSWER:
        raise _Declined(f"the authorization response of the MCP server {label} is too long")
    try:
        query = parse_qs(urlsplit(answer).query, max_num_fields=32)
    except ValueError:
        query = {}
    if "error" in query:
        error = ascii(query["error"][0])[:60]
        _log.info("the authorization server of %s answered error=%s", label, error)
        raise _Declined(
            f"{_whose(user)} has not authorized access to the MCP server {label} "
            f"(the authorization server answered {error})"
        )
    code = query.get("code", [""])[0]
    if not code:
        raise _Declined(f"the authorization response of the MCP server {label} has no code")
    state = query.get("state", [None])[0]
    iss = query.get("iss", [None])[0]
    return AuthorizationCodeResult(code=code, state=state, iss=iss)


def _problem(exc: BaseException, label: str) -> str:
    """Why an authorization failed, in words a model may read (never the server's)."""
    if isinstance(exc, _Declined):
        return exc.problem
    if isinstance(exc, UsageError):  # the application's callback misused: toolreg's words
        _log.error("the OAuth authorization with the MCP server %s failed: %s", label, exc)
        return f"the authorization with the MCP server {label} failed (UsageError)"
    _log.warning(
        "the OAuth authorization with the MCP server %s failed: %s", label, type(exc).__name__
    )
    return f"the authorization with the MCP server {label} failed ({type(exc).__name__})"


def _whose(user: Hashable) -> str:
    return "the application" if user is None else "this user"


def _user_text(user: object) -> str:
    """`user` as the text its records are keyed by (a digest of it)."""

    def plain(value: object) -> bool:
        if isinstance(value, tuple):
            return all(plain(v) for v in value)
        return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))

    if not plain(user):
        raise UsageError(
            f"OAuth(user=...) returned {with_article(type(user).__name__)}; return a user id "
            "(a str, an int, or a tuple of them), which keys the user's tokens"
        )
    return json.dumps(user)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _is_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _url(name: str, value: object) -> str:
    if not isinstance(value, str) or not _is_url(value):
        raise UsageError(f"OAuth({name}={value!r}): an http(s) URL")
    return value


def _text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 1024:
        raise UsageError(f"OAuth({name}=...): a non-empty string")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise UsageError(f"OAuth({name}=...): control characters refused")
    return value


def _secret_text(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_SECRET_CHARS:
        raise UsageError(f"OAuth(client_secret=...): 1 to {MAX_SECRET_CHARS:,} characters")
    return value


def _scopes(scopes: Iterable[str] | None) -> tuple[str, ...]:
    if scopes is None:
        return ()
    if isinstance(scopes, str):
        raise UsageError(f"OAuth(scopes=...): a list of scopes, e.g. scopes=[{scopes!r}]")
    found = tuple(scopes)
    if len(found) > _MAX_SCOPES or not all(
        isinstance(s, str) and s and s.isprintable() and " " not in s for s in found
    ):
        raise UsageError("OAuth(scopes=...): scope names (no spaces), at most 64")
    return found


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise UsageError(f"OAuth({name}={value!r}): a positive number of seconds")
    if value <= 0:
        raise UsageError(f"OAuth({name}={value!r}): a positive number of seconds")
    return float(value)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
