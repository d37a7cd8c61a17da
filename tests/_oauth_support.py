"""A loopback OAuth 2.1 authorization server, and an MCP server that it protects, for the
tests of OAuth mounts (tests/mcp/test_mcp_mount_oauth.py).

The authorization server is the MCP SDK's own (`mcp.server.auth.routes.create_auth_routes`:
metadata, dynamic registration, the authorization endpoint with PKCE, the token endpoint
with refresh, revocation) over `Issuer`, an in-memory provider: its authorization endpoint
sends the browser to a sign-in page (`/login?pending=...`), where the test's "browser" signs
in as a user and is sent back to the client's `redirect_uri` with a code (or with
`error=access_denied`). Tokens are opaque and bound to that user, the scopes granted and
the resource (the MCP server) asked for.

The MCP server is a toolreg registry served with `auth=` (a `ResourceServer` that asks the
issuer about each token), whose tools answer who called (`whoami`), quote the caller's
token (`echo_token`, careless on purpose), or need the `admin` scope (`admin_report`: its
call without it is a 403 `insufficient_scope`, as real servers answer a step-up).

Both listen on one port of 127.0.0.1 (the MCP server at `/mcp`, the authorization server
at the root), in a background thread.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx2
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import ResourceServer, asgi_app
from toolreg.mcp.oauth import AuthorizationRequest
from toolreg.mcp.serving import listening_socket

SCOPES = ["notes", "admin"]
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
_serial = itertools.count()


class Issuer:
    """The authorization server's state (an `OAuthAuthorizationServerProvider`), and what it
    saw: registrations, sign-ins per user, token and refresh requests."""

    def __init__(self) -> None:
        self.url = ""
        self.expires_in = 3600  # of the access tokens it issues
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.signed_in: collections.Counter[str] = collections.Counter()
        self.scopes_asked: list[list[str]] = []
        self.refreshed = 0
        self.exchanged = 0

    # -- the provider protocol ------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        # RFC 7591 lets a server set the client's metadata: it may ask for every scope
        client_info.scope = " ".join(SCOPES)
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        pending = secrets.token_urlsafe(16)
        self.pending[pending] = (str(client.client_id), params)
        return f"{self.url}/login?{urlencode({'pending': pending})}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]  # once
        self.exchanged += 1
        code = authorization_code
        return self._issue(str(client.client_id), code.scopes, code.resource, code.subject)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated
        self.refreshed += 1
        granted = scopes or refresh_token.scopes
        return self._issue(
            str(client.client_id), granted, refresh_token.resource, refresh_token.subject
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    # -- the rest -----------------------------------------------------------------------------
    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, user: str | None
    ) -> OAuthToken:
        serial = next(_serial)
        access = f"at-{user}-{serial}-{secrets.token_hex(12)}"
        refresh = f"rt-{user}-{serial}-{secrets.token_hex(12)}"
        expires = int(time.time()) + self.expires_in
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires,
            resource=resource,
            subject=user,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=user
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.expires_in,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def login(self, request: Request) -> Response:
        """The sign-in page: `user` signs in (or `deny=1`) and is sent back with a code."""
        found = self.pending.pop(request.query_params.get("pending", ""), None)
        if found is None:
            return Response("unknown authorization request", status_code=400)
        client_id, params = found
        base = str(params.redirect_uri)
        if request.query_params.get("deny"):
            return RedirectResponse(
                construct_redirect_uri(base, error="access_denied", state=params.state), 302
            )
        user = request.query_params["user"]
        self.signed_in[user] += 1
        asked = params.scopes or ["notes"]
        self.scopes_asked.append(list(asked))
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=[s for s in asked if s in SCOPES],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=user,
        )
        return RedirectResponse(construct_redirect_uri(base, code=code, state=params.state), 302)

    async def verify(self, token: str) -> AccessToken | None:
        """The MCP server's verifier: a live token issued for it."""
        found = await self.load_access_token(token)
        if found is None or found.resource not in (None, self.resource):
            return None
        return found

    resource = ""
    resource_metadata = ""


def server_tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(read_only=True)
    def whoami(ctx: ToolContext[dict[str, str]]) -> str:
        """Who the caller is."""
        return ctx.deps["user"]

    @registry.register_tool(read_only=True)
    def echo_token(ctx: ToolContext[dict[str, str]]) -> str:
        """A careless tool that quotes the caller's token."""
        return f"you sent {ctx.deps['token']}"

    @registry.register_tool(read_only=True)
    def admin_report(ctx: ToolContext[dict[str, str]]) -> str:
        """A report for administrators (the `admin` scope)."""
        return f"the report, for {ctx.deps['user']}"

    return registry


class StepUp:
    """ASGI: a `tools/call` of `admin_report` with a token without the `admin` scope is a 403
    `insufficient_scope` (what a resource server answers to ask for more scopes)."""

    def __init__(self, app: Any, issuer: Issuer) -> None:
        self.app = app
        self.issuer = issuer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if self._needs_admin(scope, body):
            challenge = (
                'Bearer error="insufficient_scope", scope="notes admin", '
                f'resource_metadata="{self.issuer.resource_metadata}"'
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [(b"www-authenticate", challenge.encode())],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _needs_admin(self, scope: Any, body: bytes) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return False
        if (message.get("params") or {}).get("name") != "admin_report":
            return False
        headers = dict(scope["headers"])
        given = headers.get(b"authorization", b"").decode("latin-1")
        token = self.issuer.access.get(given[7:]) if given[:7].lower() == "bearer " else None
        return token is None or "admin" not in token.scopes


class LoopbackOAuth:
    """The two servers, running: `url` (the MCP server), `issuer` (its state)."""

    def __init__(self) -> None:
        self.issuer = Issuer()
        self.url = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LoopbackOAuth:
        sock = listening_socket("127.0.0.1", 0)
        host, port = sock.getsockname()[:2]
        base = f"http://{host}:{port}"
        self.url = f"{base}/mcp"
        issuer = self.issuer
        issuer.url = base
        issuer.resource = self.url
        issuer.resource_metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
        routes = create_auth_routes(
            issuer,  # type: ignore[arg-type]
            _URL.validate_python(base),  # no "/" added: the issuer is compared as a string
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["notes"]
            ),
            revocation_options=RevocationOptions(enabled=True),
        )
        authorization = Starlette(routes=[*routes, Route("/login", issuer.login)])
        auth = ResourceServer(issuer.verify, resource=self.url, authorization_servers=[base])

        def context(request: Any) -> dict[str, str]:
            return {"user": request.token.subject, "token": request.token.token}

        mcp = StepUp(asgi_app(server_tools(), auth=auth, context=context), issuer)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            path = scope.get("path", "")
            if scope["type"] == "lifespan" or path.startswith(
                ("/mcp", "/.well-known/oauth-protected-resource")
            ):
                await mcp(scope, receive, send)
            else:
                await authorization(scope, receive, send)

        config = uvicorn.Config(app, log_level="warning", server_header=False)
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="oauth-loopback", daemon=True
        )
        self._thread.start()
        while not server.started:
            assert self._thread.is_alive(), "the loopback servers stopped while starting"
            self._thread.join(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
            self._thread = None


class Browser:
    """The users' browsers: `authorize` signs in at the authorization server as the user the
    request names (the application's own session signs in as `app`), or declines for the
    users in `decline`; every request it was given is kept in `asked`."""

    def __init__(self, *, decline: tuple[object, ...] = ()) -> None:
        self.decline = set(decline)
        self.asked: list[AuthorizationRequest] = []

    def authorize(self, request: AuthorizationRequest) -> str | None:
        self.asked.append(request)
        with httpx2.Client() as http:
            found = http.get(request.url, follow_redirects=False)
            assert found.status_code in (302, 303, 307), found.text
            login = urljoin(request.url, found.headers["location"])
            user = "app" if request.user is None else str(request.user)
            query = {"deny": "1"} if request.user in self.decline else {"user": user}
            back = http.get(f"{login}&{urlencode(query)}", follow_redirects=False)
        assert back.status_code in (302, 303, 307), back.text
        return str(back.headers["location"])

    async def aauthorize(self, request: AuthorizationRequest) -> str | None:
        return await asyncio.to_thread(self.authorize, request)
