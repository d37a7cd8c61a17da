"""OAuth: mount an MCP server that requires OAuth 2.1; one mount, each user with their tokens."""

import secrets
import socket
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import httpx2
from mcp.server.auth.provider import AccessToken, AuthorizationCode, construct_redirect_uri
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.responses import RedirectResponse
from starlette.routing import Route

from toolreg import ToolContext, ToolRegistry
from toolreg.mcp import AuthorizationRequest, HttpServer, Mount, OAuth, ResourceServer, asgi_app
from toolreg.stores import SQLiteStore

# -- a stand-in for a hosted MCP server and its authorization server, on 127.0.0.1 ------------
notes = ToolRegistry()


@notes.register_tool(read_only=True)
def my_notes(ctx: ToolContext[str]) -> str:
    """The signed-in user's notes. Use it when the user asks what they wrote down."""
    return {"ada": "buy milk", "bob": "call Alan"}.get(ctx.deps, "nothing")


class Issuer:  # the MCP SDK's authorization server handlers call these
    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.pending: dict[str, Any] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, client: Any) -> None:
        self.clients[client.client_id] = client

    async def authorize(self, client: Any, params: Any) -> str:  # -> the sign-in page
        key = secrets.token_urlsafe()
        self.pending[key] = (client.client_id, params)
        return f"{base}/login?pending={key}"

    async def login(self, request: Any) -> RedirectResponse:  # signed in: back, with a code
        client_id, params = self.pending.pop(request.query_params["pending"])
        code = secrets.token_urlsafe()
        self.codes[code] = AuthorizationCode(
            code=code, scopes=["notes"], expires_at=time.time() + 60, client_id=client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=True, resource=params.resource,
            subject=request.query_params["user"],
        )  # fmt: skip
        back = construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)
        return RedirectResponse(back, 302)

    async def load_authorization_code(self, client: Any, code: str) -> Any:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: Any, code: Any) -> OAuthToken:
        del self.codes[code.code]
        token = secrets.token_urlsafe()
        self.tokens[token] = AccessToken(
            token=token, client_id=client.client_id, scopes=code.scopes, subject=code.subject
        )
        return OAuthToken(access_token=token, expires_in=3600, scope="notes")

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.tokens.get(token)


with socket.socket() as free:
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
base, issuer = f"http://127.0.0.1:{port}", Issuer()
auth = ResourceServer(  # an issuer as AnyHttpUrl writes it: with its "/"
    issuer.load_access_token, resource=f"{base}/mcp", authorization_servers=[f"{base}/"]
)
mcp_app = asgi_app(notes, auth=auth, context=lambda request: request.token.subject)
routes = create_auth_routes(
    issuer, AnyHttpUrl(base), client_registration_options=ClientRegistrationOptions(enabled=True)
)
auth_app = Starlette(routes=[*routes, Route("/login", issuer.login)])


async def app(scope: Any, receive: Any, send: Any) -> None:  # /mcp and the rest
    path = scope.get("path", "")
    mcp = scope["type"] == "lifespan" or path.startswith(("/mcp", "/.well-known/oauth-p"))
    await (mcp_app if mcp else auth_app)(scope, receive, send)


# -- the application ------------------------------------------------------------------------
def authorize(request: AuthorizationRequest) -> str | None:
    """The user's part. In an application: send `request.url` to the user's browser (open it,
    or show it as a link) and return the URL it came back to, which your `redirect_uri`'s
    handler receives. Here, a headless "browser" signs in as the user the request names."""
    print("sign-in asked for", request.user)
    with httpx2.Client() as browser:
        page = browser.get(request.url).headers["location"]
        login = urljoin(request.url, page) + "&" + urlencode({"user": request.user})
        return str(browser.get(login).headers["location"])


store = SQLiteStore(Path(tempfile.mkdtemp()) / "tokens.db")  # tokens outlive the process
oauth = OAuth(
    authorize,
    redirect_uri="http://127.0.0.1:8765/callback",
    store=store,
    user=lambda deps: deps,  # a call's context is the user's id: each user, their tokens
)
with HttpServer(app, port=port) as server:
    for _ in range(2):  # the second mount finds every token in the store: no sign-in
        with Mount(server.url + "/mcp", oauth=oauth, trust_annotations=True) as remote:
            for user in ("ada", "bob"):
                found = remote.dispatcher.dispatch_tool("my_notes", {}, context=user)
                print(user, found.content)
    # sign-in asked for None    (the mount's own session: it lists the tools)
    # sign-in asked for ada
    # ada buy milk
    # sign-in asked for bob
    # bob call Alan
    # ada buy milk              (the second mount: every token from the store)
    # bob call Alan
