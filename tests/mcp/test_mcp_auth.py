"""`toolreg serve` as an OAuth 2.1 resource server: JWT access tokens signed here, checked
against a JWKS served from 127.0.0.1, the official SDK's client over streamable HTTP on
both paths (the fast path: 2026-07-28; the SDK's: the 2025 handshake), per-tool scopes,
the protected-resource metadata, and hostile tokens and headers."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from _mcp_support import text_of
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError

from toolreg import ToolDefinitionError, ToolRegistry
from toolreg.errors import UsageError
from toolreg.mcp import HttpServer, JwtVerifier, McpRequest, ResourceServer, asgi_app, build_server

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
MODES = ("auto", "legacy")  # the fast path (2026-07-28) and the SDK's path (2025 handshake)
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def jwk(key: Any, kid: str) -> dict[str, Any]:
    public = key.public_key()
    algorithm = RSAAlgorithm if isinstance(public, rsa.RSAPublicKey) else ECAlgorithm
    return {**json.loads(algorithm.to_jwk(public)), "kid": kid, "use": "sig"}


JWKS = {"keys": [jwk(RSA_KEY, "rsa-1"), jwk(EC_KEY, "ec-1")]}


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "user-ada",
        "client_id": "client-1",
        "iat": now,
        "exp": now + 300,
        "scope": "orders:read",
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def sign(key: Any = RSA_KEY, kid: str = "rsa-1", alg: str = "RS256", **changes: Any) -> str:
    return jwt.encode(claims(**changes), key, algorithm=alg, headers={"kid": kid})


class JwksServer:
    """A JWKS over HTTP on 127.0.0.1 that counts its fetches (`hang`: never answers)."""

    def __init__(self, document: dict[str, Any], hang: bool = False) -> None:
        outer = self
        self.fetches = 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.fetches += 1
                if hang:
                    time.sleep(3)
                body = json.dumps(document).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):  # a client that gave up waiting
                    self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scoped_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool(read_only=True)
    def ping() -> str:
        """Answer pong. Use it to check the server."""
        return "pong"

    @registry.register_tool(scopes=["orders:read"])
    def list_orders() -> str:
        """List the caller's orders. Use it when asked about orders."""
        return "order-1"

    @registry.register_tool(scopes=["orders:read", "admin"])
    def refund_order(order: str) -> str:
        """Refund an order. Use it only when an admin asks."""
        return f"refunded {order}"

    return registry


@pytest.fixture(scope="module")
def jwks() -> Iterator[JwksServer]:
    server = JwksServer(JWKS)
    yield server
    server.close()


@pytest.fixture(scope="module")
def server(jwks: JwksServer) -> Iterator[HttpServer]:
    verifier = JwtVerifier(jwks.url, issuer=ISSUER, audience=RESOURCE)
    app = asgi_app(scoped_registry(), auth=ResourceServer(verifier, resource=RESOURCE))
    with HttpServer(app) as running:
        yield running


async def session(url: str, token: str, mode: str) -> tuple[list[str], list[str]]:
    """The tools listed, and the answer to calling each of three, for `token`."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        listed = [tool.name for tool in (await client.list_tools()).tools]
        answers = []
        for name, args in (("list_orders", {}), ("refund_order", {"order": "o1"}), ("nope", {})):
            try:
                answers.append(text_of(await client.call_tool(name, args)))
            except MCPError as err:
                answers.append(f"error {err.error.code}: {err.error.message}")
        return listed, answers


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_the_token_lacks_a_scope_for_is_neither_listed_nor_callable(
    server: HttpServer, mode: str
) -> None:
    listed, answers = asyncio.run(session(server.url, sign(), mode))
    assert listed == ["ping", "list_orders"]
    assert answers[0] == "order-1"
    hidden, unknown = answers[1], answers[2]
    assert hidden == unknown.replace("'nope'", "'refund_order'")  # the same answer
    assert hidden.startswith("error -32602: Unknown tool 'refund_order'.")
    assert "Available: ping, list_orders." in hidden

    admin = sign(scope="orders:read admin")
    listed, answers = asyncio.run(session(server.url, admin, mode))
    assert listed == ["ping", "list_orders", "refund_order"]
    assert answers[:2] == ["order-1", "refunded o1"]

    none = sign(scope=None, scp=["other"])  # `scp` (a list) is read too
    listed, _ = asyncio.run(session(server.url, none, mode))
    assert listed == ["ping"]


def test_an_ec_key_and_the_scp_claim_work_too(server: HttpServer) -> None:
    token = sign(EC_KEY, "ec-1", "ES256", scope=None, scp=["orders:read", "admin"])
    listed, _ = asyncio.run(session(server.url, token, "auto"))
    assert listed == ["ping", "list_orders", "refund_order"]


def refused(server: HttpServer, authorization: str | None) -> httpx2.Response:
    headers = dict(HEADERS)
    if authorization is not None:
        headers["authorization"] = authorization
    with httpx2.Client() as http:
        return http.post(server.url, json=LIST, headers=headers)


def hs256_with_the_public_key() -> str:
    """HS/RS confusion: an HMAC 'signed' with the RSA public key's PEM as the secret."""
    pem = RSA_KEY.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
    return forge(header, claims(), pem)


def forge(header: dict[str, Any], body: dict[str, Any], secret: bytes | None) -> str:
    import hashlib
    import hmac

    def part(value: Any) -> str:
        raw = json.dumps(value).encode() if not isinstance(value, bytes) else value
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    signing = f"{part(header)}.{part(body)}"
    if secret is None:
        return signing + "."
    mac = hmac.new(secret, signing.encode(), hashlib.sha256).digest()
    return f"{signing}.{part(mac)}"


def tampered() -> str:
    head, _, signature = sign().split(".")
    body = base64.urlsafe_b64encode(json.dumps(claims(scope="admin")).encode()).rstrip(b"=")
    return f"{head}.{body.decode()}.{signature}"


BAD_TOKENS = {
    "expired": lambda: sign(exp=int(time.time()) - 120),
    "not yet valid": lambda: sign(nbf=int(time.time()) + 600),
    "no expiry": lambda: sign(exp=None),
    "wrong audience": lambda: sign(aud="https://other.example.com/mcp"),
    "no audience": lambda: sign(aud=None),
    "wrong issuer": lambda: sign(iss="https://evil.example.com"),
    "signed by another key": lambda: sign(OTHER_RSA_KEY),
    "tampered claims": tampered,
    "unknown kid": lambda: sign(kid="rsa-9"),
    "RSA key asked for ES256": lambda: sign(EC_KEY, "rsa-1", "ES256"),
    "alg none": lambda: forge({"alg": "none", "kid": "rsa-1"}, claims(), None),
    "HS256 with the public key": hs256_with_the_public_key,
    "oversized": lambda: sign(padding="x" * 9000),
    "not a JWT": lambda: "hello",
    "three dots": lambda: "a.b.c",
    "header not JSON": lambda: "bm90IGpzb24." + sign().split(".", 1)[1],
}


@pytest.mark.parametrize("make", BAD_TOKENS.values(), ids=BAD_TOKENS)
def test_a_bad_token_is_a_401_that_says_nothing_more(server: HttpServer, make: Any) -> None:
    token = make()
    answer = refused(server, f"Bearer {token}")
    assert answer.status_code == 401
    assert answer.text == "Unauthorized"
    challenge = f'Bearer resource_metadata="{METADATA_URL}", error="invalid_token"'
    assert answer.headers["www-authenticate"] == challenge


MALFORMED = [
    "",
    "Bearer",
    "Bearer ,",
    "Bearer a b",
    "Basic dXNlcjpwYXNz",
    "Bearer\t" + "x",
    "bearer" + "x" * 20000,
    "Token abc",
]


@pytest.mark.parametrize("header", MALFORMED)
def test_a_malformed_authorization_header_is_a_401(server: HttpServer, header: str) -> None:
    answer = refused(server, header)
    assert answer.status_code == 401
    assert answer.text == "Unauthorized"
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]


def test_no_token_is_a_401_that_points_to_the_metadata(server: HttpServer) -> None:
    answer = refused(server, None)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA_URL}"'
    assert refused(server, f"BEARER   {sign()}").status_code == 200  # scheme in any case


def test_a_small_clock_skew_is_allowed(server: HttpServer) -> None:
    assert refused(server, f"Bearer {sign(exp=int(time.time()) - 5)}").status_code == 200


def test_the_protected_resource_metadata_needs_no_token(server: HttpServer) -> None:
    base = server.url.removesuffix("/mcp")
    with httpx2.Client() as http:
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            answer = http.get(base + path, headers={"origin": "https://app.example.com"})
            assert answer.status_code == 200
            assert answer.headers["access-control-allow-origin"] == "*"
            assert answer.json() == {
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["admin", "orders:read"],
            }
        wrong_host = http.get(
            base + "/.well-known/oauth-protected-resource", headers={"host": "evil.example.com"}
        )
        assert wrong_host.status_code == 421


def test_the_jwks_is_fetched_once_and_kept(jwks: JwksServer) -> None:
    fetched = jwks.fetches
    verifier = JwtVerifier(jwks.url, issuer=ISSUER, audience=RESOURCE)

    async def run() -> list[AccessToken | None]:
        return [await verifier.verify_token(sign(sub=f"user-{i}")) for i in range(5)]

    answers = asyncio.run(run())
    assert all(a is not None for a in answers)
    assert jwks.fetches == fetched + 1
    first = answers[0]
    assert first is not None
    assert (first.subject, first.client_id, first.scopes) == ("user-0", "client-1", ["orders:read"])
    assert (first.resource, first.claims) == (RESOURCE, {"iss": ISSUER})


def test_an_unanswering_jwks_refuses_in_bounded_time() -> None:
    hung = JwksServer(JWKS, hang=True)
    try:
        verifier = JwtVerifier(hung.url, issuer=ISSUER, audience=RESOURCE, timeout=0.3)
        assert asyncio.run(verifier.verify_token(sign())) is None
    finally:
        hung.close()


class TrickleServer:
    """A key server that sends its answer (`headers`: from the status line on, else only
    the body) one byte every `every` seconds, and counts what it managed to send before
    the client hung up."""

    def __init__(self, document: dict[str, Any], *, headers: bool, every: float = 0.1) -> None:
        body = json.dumps(document).encode()
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        self.total = len(head) + len(body)
        self.sent = 0
        self.done = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/jwks.json"

        def serve() -> None:
            conn, _ = self.listener.accept()
            with conn:
                conn.recv(65536)  # the request
                fast, slow = (b"", head + body) if headers else (head, body)
                try:
                    conn.sendall(fast)
                    self.sent = len(fast)
                    for i in range(len(slow)):
                        if self.done.wait(every):
                            break
                        conn.sendall(slow[i : i + 1])
                        self.sent += 1
                except OSError:  # the client hung up
                    pass
            self.done.set()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.done.set()
        self.thread.join(10)
        self.listener.close()


@pytest.mark.slow
@pytest.mark.parametrize("headers", [False, True], ids=["slow-body", "slow-headers"])
def test_a_key_server_that_trickles_is_given_up_on_at_the_timeout(headers: bool) -> None:
    """`timeout=` bounds the whole fetch of the JWKS, not each read: a key server sending
    one byte every 0.1 s (about 50 s for this answer) is dropped after `timeout=1` with
    most of its answer unsent, and the request is refused (401), not held."""
    trickle = TrickleServer(JWKS, headers=headers)
    try:
        verifier = JwtVerifier(trickle.url, issuer=ISSUER, audience=RESOURCE, timeout=1)
        app = asgi_app(scoped_registry(), auth=ResourceServer(verifier, resource=RESOURCE))
        with HttpServer(app) as running, httpx2.Client(timeout=120) as http:
            answer = http.post(
                running.url, json=LIST, headers={**HEADERS, "authorization": f"Bearer {sign()}"}
            )
            assert answer.status_code == 401
            assert trickle.done.wait(60)  # the connection was closed: no fetch goes on
        assert trickle.sent < trickle.total // 2, (trickle.sent, trickle.total)
    finally:
        trickle.close()


def test_a_local_jwks_dict_or_file(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(JWKS))
    for source in (JWKS, path, str(path)):
        verifier = JwtVerifier(source, issuer=ISSUER, audience=[RESOURCE, "other"])
        assert asyncio.run(verifier.verify_token(sign())) is not None
        assert asyncio.run(verifier.verify_token(sign(OTHER_RSA_KEY))) is None
    one_key = {"keys": [{k: v for k, v in jwk(RSA_KEY, "x").items() if k != "kid"}]}
    no_kid = jwt.encode(claims(), RSA_KEY, algorithm="RS256")
    assert asyncio.run(JwtVerifier(one_key, issuer=ISSUER, audience=RESOURCE).verify_token(no_kid))


def test_a_verifier_of_the_sdks_shape_or_a_function() -> None:
    class Verifier:  # the SDK's TokenVerifier protocol
        async def verify_token(self, token: str) -> AccessToken | None:
            if token != "letmein":
                return None
            return AccessToken(token=token, client_id="c", scopes=["orders:read"], subject="bob")

    seen: list[McpRequest] = []

    def context(request: McpRequest) -> str:
        seen.append(request)
        return "deps"

    def expired(token: str) -> AccessToken | None:  # a plain sync function works too
        return AccessToken(token=token, client_id="c", scopes=[], expires_at=1)

    auth = ResourceServer(Verifier(), resource=RESOURCE, authorization_servers=[ISSUER])
    app = asgi_app(scoped_registry(), auth=auth, context=context)
    with HttpServer(app) as running:
        for mode in MODES:
            listed, answers = asyncio.run(session(running.url, "letmein", mode))
            assert listed == ["ping", "list_orders"]
            assert answers[0] == "order-1"
        assert refused(running, "Bearer nope").status_code == 401
    assert {(r.token.subject, r.token.scopes[0]) for r in seen} == {("bob", "orders:read")}

    auth = ResourceServer(expired, resource=RESOURCE, authorization_servers=[ISSUER])
    with HttpServer(asgi_app(scoped_registry(), auth=auth)) as running:
        assert refused(running, "Bearer anything").status_code == 401


def test_a_verifier_that_raises_refuses_without_detail() -> None:
    def broken(token: str) -> AccessToken | None:
        raise RuntimeError("database password is hunter2")

    auth = ResourceServer(broken, resource=RESOURCE, authorization_servers=[ISSUER])
    with HttpServer(asgi_app(scoped_registry(), auth=auth)) as running:
        answer = refused(running, "Bearer x")
        assert (answer.status_code, answer.text) == (401, "Unauthorized")


def test_required_scopes_answer_403_insufficient_scope(jwks: JwksServer) -> None:
    verifier = JwtVerifier(jwks.url, issuer=ISSUER, audience=RESOURCE)
    auth = ResourceServer(verifier, resource=RESOURCE, required_scopes=["mcp"])
    with HttpServer(asgi_app(scoped_registry(), auth=auth)) as running:
        answer = refused(running, f"Bearer {sign()}")
        assert answer.status_code == 403
        assert answer.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA_URL}", error="insufficient_scope", scope="mcp"'
        )
        assert refused(running, f"Bearer {sign(scope='mcp')}").status_code == 200


def test_a_jwt_verifier_alone_names_its_audience_as_the_resource(jwks: JwksServer) -> None:
    verifier = JwtVerifier(jwks.url, issuer=ISSUER, audience=RESOURCE)
    app = asgi_app(scoped_registry(), auth=verifier)
    assert app.auth is not None
    assert (app.auth.resource, app.auth.metadata_url) == (RESOURCE, METADATA_URL)


def test_stateful_sessions_follow_the_token(jwks: JwksServer) -> None:
    verifier = JwtVerifier(jwks.url, issuer=ISSUER, audience=RESOURCE)
    app = asgi_app(scoped_registry(), auth=verifier, stateless=False)
    with HttpServer(app) as running:
        listed, answers = asyncio.run(session(running.url, sign(), "legacy"))
    assert listed == ["ping", "list_orders"]
    assert answers[0] == "order-1"


def test_build_server_checks_scopes_under_the_sdks_own_auth(jwks: JwksServer) -> None:
    verifier = JwtVerifier(jwks.url, issuer=ISSUER, audience=RESOURCE)
    auth = ResourceServer(verifier, resource=RESOURCE)
    server = build_server(scoped_registry(), auth=auth)
    app = server.streamable_http_app(
        stateless_http=True, auth=auth.sdk_settings(), token_verifier=auth
    )
    with HttpServer(app) as running:
        url = running.url + "/mcp"
        listed, answers = asyncio.run(session(url, sign(), "legacy"))
        assert listed == ["ping", "list_orders"]
        assert answers[1].startswith("error -32602: Unknown tool 'refund_order'.")
        with httpx2.Client() as http:
            assert http.post(url, json=LIST, headers=HEADERS).status_code == 401


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- mistakes, at registration and at construction -----------------------------------------


def test_scopes_are_checked_at_registration() -> None:
    registry = ToolRegistry()
    for bad, fix in ((["has space"], "scopes=['orders:read']"), ("admin", "scopes=['admin']")):
        with pytest.raises(ToolDefinitionError) as caught:
            registry.register_tool(lambda: 1, name="t", scopes=bad)
        assert fix in str(caught.value)


def test_serving_scoped_tools_without_auth_is_an_error() -> None:
    with pytest.raises(UsageError, match="pass auth=ResourceServer"):
        asgi_app(scoped_registry())
    with pytest.raises(UsageError, match="pass auth=ResourceServer"):
        asgi_app(scoped_registry(), token="s3cret")


def test_auth_options_are_checked() -> None:
    verifier = JwtVerifier(JWKS, issuer=ISSUER, audience=RESOURCE)
    mistakes: list[tuple[Any, str]] = [
        (lambda: asgi_app(ToolRegistry(), token="t", auth=verifier), "not both"),
        (
            lambda: JwtVerifier(JWKS, issuer=ISSUER, audience=RESOURCE, algorithms=["HS256"]),
            "public key",
        ),
        (
            lambda: JwtVerifier("http://keys.example.com/jwks", issuer=ISSUER, audience=RESOURCE),
            "https://",
        ),
        (
            lambda: JwtVerifier(
                {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}, issuer=ISSUER, audience=RESOURCE
            ),
            "no usable public",
        ),
        (lambda: JwtVerifier({"nope": 1}, issuer=ISSUER, audience=RESOURCE), "not a JWK Set"),
        (lambda: JwtVerifier(JWKS, issuer=ISSUER, audience=RESOURCE, leeway=-1), "leeway"),
        (lambda: ResourceServer(lambda t: None, resource=RESOURCE), "authorization_servers"),
        (lambda: ResourceServer(verifier, resource="https://x.example.com/mcp?a=1"), "no query"),
        (lambda: ResourceServer(verifier, resource="mcp.example.com"), "https:// URL"),
        (lambda: ResourceServer(42, resource=RESOURCE), "verify_token"),
        (lambda: asgi_app(ToolRegistry(), auth=lambda t: None), "resource="),
        (
            lambda: asgi_app(ToolRegistry(), auth=JwtVerifier(JWKS, issuer=ISSUER, audience="api")),
            "resource=",
        ),
    ]
    for make, words in mistakes:
        with pytest.raises(UsageError, match=words):
            make()
