"""A served registry as an OAuth 2.1 resource server: bearer tokens, verified.

`asgi_app(registry, auth=...)` (and `serve(..., auth=...)`) takes a token verifier — a
`JwtVerifier` (a JWT checked against a JWKS: signature, issuer, audience, expiry), any
object with the official SDK's `TokenVerifier` shape (`async verify_token(token) ->
AccessToken | None`), or a plain function of the token — usually inside a
`ResourceServer`, which also says what the protected-resource metadata (RFC 9728) tells
clients: this server's URL and the authorization servers that issue its tokens.

Every request then needs `Authorization: Bearer <token>` that the verifier accepts; any
other request is a 401 that says only where the metadata is (`WWW-Authenticate: Bearer
resource_metadata="..."`), never why. A token without the server's `required_scopes` is a
403 (`error="insufficient_scope"`). A tool registered with `scopes=[...]` is listed and
callable only with a token that holds all of them: to any other caller it does not exist.

`JwtVerifier` needs the `auth` extra (`pip install 'toolreg[auth]'`, PyJWT with its
cryptography backend).
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import logging
import math
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from ..errors import UsageError

__all__ = [
    "DEFAULT_ALGORITHMS",
    "Caller",
    "JwtVerifier",
    "ResourceServer",
    "Verifier",
    "resource_server",
]

_log = logging.getLogger("toolreg.mcp")

Verifier = Any
"""`auth=`: a `JwtVerifier`, an object with `verify_token(token)` (sync or async) or a
function of the token, answering the SDK's `AccessToken` or None (refused)."""

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384")
"""The signature algorithms `JwtVerifier` accepts by default: asymmetric ones only (a
shared-secret HS256 key published in a JWKS would let anyone sign)."""
_FAMILIES = {
    "RSA": frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    "EC": frozenset({"ES256", "ES384", "ES512"}),
    "OKP": frozenset({"EdDSA"}),
}
_ASYMMETRIC = frozenset().union(*_FAMILIES.values())
MAX_TOKEN_CHARS = 8192
"""Longer bearer tokens are refused before anything parses them."""
_MAX_JWKS_BYTES = 1 << 20
_REFETCH_AFTER = 10.0  # an unknown key id refetches the JWKS at most this often (seconds)
_VERIFIED = 1024  # tokens whose verification is remembered (until they expire)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request: `identity` keys rate limits and cached results (the token's
    issuer and subject, else its client, else the client's address); `scopes` are the
    token's (None: a caller nothing restricts, e.g. the local user over stdio)."""

    identity: str
    scopes: frozenset[str] | None = frozenset()
    token: AccessToken | None = None

    def permits(self, required: frozenset[str]) -> bool:
        return not required or self.scopes is None or required <= self.scopes


UNRESTRICTED = Caller("local", None)
"""The caller over stdio without `auth=`: the person who started the server."""


def token_caller(token: AccessToken) -> Caller:
    issuer = (token.claims or {}).get("iss")
    if token.subject:
        identity = f"sub:{issuer or ''} {token.subject}"
    else:
        identity = f"client:{token.client_id}"
    return Caller(identity, frozenset(token.scopes), token)


def address_caller(client: Any) -> Caller:
    """A caller known only by its address (ASGI `scope["client"]`: host, port)."""
    host = client[0] if isinstance(client, (tuple, list)) and client else None
    return Caller(f"addr:{host or 'unknown'}")


# -- the resource server ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceServer:
    """What `auth=` protects a server with, and what its metadata says (RFC 9728).

    `resource` is this server's URL as clients reach it (`https://mcp.example.com/mcp`):
    the metadata lives at `/.well-known/oauth-protected-resource/mcp` (and at
    `/.well-known/oauth-protected-resource`). `authorization_servers` issue its tokens
    (default: the `JwtVerifier`'s issuer). `required_scopes`: every request needs them.
    """

    verifier: Verifier
    resource: str
    authorization_servers: Sequence[str] = ()
    required_scopes: Sequence[str] = ()
    resource_name: str | None = None
    _verify: Callable[[str], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        verify = getattr(self.verifier, "verify_token", None)
        if not callable(verify):
            verify = self.verifier if callable(self.verifier) else None
        if verify is None:
            raise UsageError(
                f"auth verifier {self.verifier!r} is neither callable nor has verify_token(); "
                "pass a JwtVerifier(...), an object with verify_token(token), or a function "
                "of the token that returns an AccessToken or None"
            )
        object.__setattr__(self, "_verify", verify)
        _check_url("resource", self.resource)
        servers = tuple(_strings("authorization_servers", self.authorization_servers))
        if not servers and isinstance(self.verifier, JwtVerifier):
            servers = (self.verifier.issuer,)
        if not servers:
            raise UsageError(
                "ResourceServer needs authorization_servers=['https://auth.example.com'] "
                "(the issuers of its tokens, for the protected-resource metadata)"
            )
        for url in servers:
            _check_url("authorization_servers", url)
        object.__setattr__(self, "authorization_servers", servers)
        scopes = tuple(_strings("required_scopes", self.required_scopes))
        object.__setattr__(self, "required_scopes", scopes)

    @property
    def metadata_path(self) -> str:
        """The path of the metadata that names this resource (RFC 9728 §3.1)."""
        path = urllib.parse.urlsplit(self.resource).path.rstrip("/")
        return f"/.well-known/oauth-protected-resource{path}"

    @property
    def metadata_url(self) -> str:
        parts = urllib.parse.urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def metadata(self, tool_scopes: Iterable[str] = ()) -> dict[str, Any]:
        """The protected-resource metadata document (RFC 9728 §2)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
            "scopes_supported": sorted({*self.required_scopes, *tool_scopes}),
        }
        if self.resource_name:
            document["resource_name"] = self.resource_name
        return document

    def challenge(self, error: str | None = None, scope: str | None = None) -> bytes:
        """A `WWW-Authenticate` value: the metadata's URL, and the error if told."""
        parts = [f'resource_metadata="{self.metadata_url}"']
        if error:
            parts.append(f'error="{error}"')
        if scope:
            parts.append(f'scope="{scope}"')
        return ("Bearer " + ", ".join(parts)).encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier` shape: use the resource server as `token_verifier=`."""
        return await self.verify(token)

    def sdk_settings(self) -> Any:
        """The SDK's `AuthSettings` for this resource server, for `build_server(...)`
        run under the SDK's own `streamable_http_app(auth=..., token_verifier=...)`."""
        from mcp.server.auth.settings import AuthSettings

        return AuthSettings(
            issuer_url=self.authorization_servers[0],  # type: ignore[arg-type]
            resource_server_url=self.resource,  # type: ignore[arg-type]
            required_scopes=list(self.required_scopes) or None,
            validate_token_resource=False,  # the verifier checks the audience itself
        )

    async def verify(self, token: str) -> AccessToken | None:
        """The verifier's answer for `token`: an unexpired `AccessToken`, else None (a
        verifier that raises refuses too: logged, never shown to the client)."""
        if len(token) > MAX_TOKEN_CHARS:
            return None
        try:
            answer = self._verify(token)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            _log.warning("the token verifier raised %s; the request is refused", type(exc).__name__)
            return None
        if answer is None:
            return None
        if not isinstance(answer, AccessToken):
            raise UsageError(
                f"the auth verifier returned {type(answer).__name__}; return "
                "mcp.server.auth.provider.AccessToken (or None to refuse)"
            )
        skew = self.verifier.leeway if isinstance(self.verifier, JwtVerifier) else 0.0
        if answer.expires_at is not None and answer.expires_at + skew < time.time():
            return None
        return answer


def resource_server(auth: object) -> ResourceServer:
    """`auth=` as a `ResourceServer`: as given, or a `JwtVerifier` whose audience is this
    server's URL (its issuer the authorization server)."""
    if isinstance(auth, ResourceServer):
        return auth
    if isinstance(auth, JwtVerifier):
        urls = [a for a in auth.audience if a.startswith(("https://", "http://"))]
        if len(urls) == 1:
            return ResourceServer(auth, resource=urls[0])
    raise UsageError(
        "auth= needs this server's URL for its protected-resource metadata: pass "
        "auth=ResourceServer(verifier, resource='https://mcp.example.com/mcp') "
        "(a JwtVerifier whose one audience is that URL also works alone)"
    )


def _strings(name: str, values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        raise UsageError(f"{name} must be a list of strings, e.g. {name}=[{values!r}]")
    out = list(values)
    if not all(isinstance(v, str) and v.strip() and " " not in v for v in out):
        raise UsageError(f"{name} must hold non-empty strings without spaces")
    return out


def _check_url(name: str, url: object) -> None:
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("https", "http") or not parts.netloc:
        raise UsageError(
            f"{name}={url!r} must be an https:// URL, e.g. https://mcp.example.com/mcp"
        )
    if parts.fragment or parts.query:
        raise UsageError(f"{name}={url!r} must have no query or fragment (RFC 9728 §1.2)")


def bearer_token(value: str) -> str | None:
    """The token of `Authorization: Bearer <token>`, else None. The scheme is
    case-insensitive and may be followed by several spaces (RFC 7235 `1*SP`); any other
    scheme, a missing token, a tab instead of a space: None."""
    scheme, space, token = value.partition(" ")
    if not space or scheme.lower() != "bearer":
        return None
    token = token.lstrip(" ")
    return token or None


# -- JWT against a JWKS ----------------------------------------------------------------------


class JwtVerifier:
    """Verifies JWT access tokens against a JWKS: the signature (asymmetric algorithms
    only, the key chosen by `kid` and of the algorithm's family), `iss` == `issuer`, `aud`
    holding one of `audience`, `exp` required and `nbf`/`iat` checked, `leeway` seconds of
    clock skew allowed.

    `jwks` is a URL (fetched on first use with a `timeout`, kept `cache_seconds`, fetched
    again early for an unknown key id, at most every 10 s; `http://` only on loopback), a
    JWK Set as a dict, or the path of a JSON file holding one. Scopes come from the
    `scope` claim (space-separated) or `scp` (a list). Follows the SDK's `TokenVerifier`
    shape: `await verifier.verify_token(token)` -> `AccessToken` or None.

    Args:
        jwks: the JWK Set: a URL, a dict, or a JSON file's path.
        issuer: the issuer URL the tokens carry in `iss`.
        audience: this server's identifier (its URL), or a list of them.
        algorithms: the asymmetric algorithms accepted.
        leeway: clock skew allowed, in seconds.
        timeout: how long fetching the JWKS may take, in seconds: the whole fetch, from
            connecting to the last byte (a key server that trickles is given up on).
        cache_seconds: how long fetched keys are kept.

    Raises:
        UsageError: PyJWT is missing (`pip install 'toolreg[auth]'`), or an argument is not
            what it should be (a `jwks` that is not a JWK Set, an `http://` URL off loopback,
            an empty `issuer` or `audience`).
    """

    def __init__(
        self,
        jwks: str | Path | Mapping[str, Any],
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        timeout: float = 5.0,
        cache_seconds: float = 300.0,
    ) -> None:
        try:
            import jwt
        except ImportError:
            raise UsageError("JwtVerifier needs PyJWT: pip install 'toolreg[auth]'") from None
        self._jwt = jwt
        if not isinstance(issuer, str) or not issuer:
            raise UsageError("issuer= must be the issuer URL tokens carry in 'iss'")
        self.issuer = issuer
        audiences = [audience] if isinstance(audience, str) else list(audience)
        if not audiences or not all(isinstance(a, str) and a for a in audiences):
            raise UsageError("audience= must be this server's identifier (its URL), or a list")
        self.audience = tuple(audiences)
        algs = frozenset([algorithms] if isinstance(algorithms, str) else algorithms)
        unsafe = sorted(algs - _ASYMMETRIC)
        if unsafe or not algs:
            raise UsageError(
                f"algorithms: {', '.join(unsafe) or 'none given'} cannot be verified with "
                f"a public key; choose from {', '.join(sorted(_ASYMMETRIC))}"
            )
        self.algorithms = algs
        for name, value in (
            ("leeway", leeway),
            ("timeout", timeout),
            ("cache_seconds", cache_seconds),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < 0
            ):
                raise UsageError(f"{name}={value!r} must be a number of seconds >= 0")
        self.leeway = float(leeway)
        self.timeout = float(timeout)
        self.cache_seconds = float(cache_seconds)
        self._url: str | None = None
        self._keys: dict[str | None, Any] = {}
        self._fetched = -math.inf
        self._fetch: asyncio.Task[None] | None = None
        self._verified: collections.OrderedDict[str, tuple[AccessToken, float]] = (
            collections.OrderedDict()
        )
        if isinstance(jwks, str) and jwks.startswith(("https://", "http://")):
            self._url = _jwks_url(jwks)
        elif isinstance(jwks, Mapping):
            self._keys = self._key_set(jwks, "the jwks= dict")
        elif isinstance(jwks, (str, Path)):
            try:
                data = json.loads(Path(jwks).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UsageError(f"jwks={str(jwks)!r} cannot be read as JSON ({exc})") from None
            self._keys = self._key_set(data, f"the file {str(jwks)!r}")
        else:
            raise UsageError("jwks= must be a URL, a JWK Set dict or the path of a JSON file")

    def __repr__(self) -> str:
        return f"JwtVerifier(issuer={self.issuer!r}, audience={list(self.audience)!r})"

    def _key_set(self, data: object, where: str) -> dict[str | None, Any]:
        """The usable verification keys of a JWK Set, by key id."""
        keys = data.get("keys") if isinstance(data, Mapping) else None
        if not isinstance(keys, list):
            raise UsageError(f"{where} is not a JWK Set ({{'keys': [...]}})")
        usable: dict[str | None, Any] = {}
        for entry in keys:
            if not isinstance(entry, dict) or entry.get("kty") not in _FAMILIES:
                continue  # symmetric ('oct') and unknown keys never verify anything
            if entry.get("use", "sig") != "sig":
                continue
            alg = entry.get("alg")
            if alg is not None and alg not in _FAMILIES[entry["kty"]]:
                continue
            try:
                key = self._jwt.PyJWK.from_dict(entry)
            except Exception:  # a malformed or unsupported key: skipped
                continue
            kid = entry.get("kid")
            usable[kid if isinstance(kid, str) else None] = (entry["kty"], alg, key)
        if not usable:
            raise UsageError(f"{where} holds no usable public signing key (RSA, EC or OKP)")
        return usable

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's `AccessToken` if it checks out, else None."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
            return None
        now = time.time()
        known = self._verified.get(token)
        if known is not None:
            if known[1] > now:
                return known[0]
            self._verified.pop(token, None)
        try:
            header = self._jwt.get_unverified_header(token)
        except Exception:
            return None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.algorithms or (kid is not None and not isinstance(kid, str)):
            return None
        found = await self._key(kid)
        if found is None:
            return None
        kty, key_alg, key = found
        if alg not in _FAMILIES[kty] or (key_alg is not None and key_alg != alg):
            return None  # e.g. an RSA key asked to check ES256, or HS256 with a public key
        try:
            claims = self._jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=list(self.audience),
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except Exception:
            return None
        access = self._access_token(token, claims)
        if access is not None:
            until = min(float(claims["exp"]) + self.leeway, now + self.cache_seconds)
            self._verified[token] = (access, until)
            while len(self._verified) > _VERIFIED:
                self._verified.popitem(last=False)
        return access

    def _access_token(self, token: str, claims: Mapping[str, Any]) -> AccessToken | None:
        scope, scp = claims.get("scope"), claims.get("scp")
        if isinstance(scope, str):
            scopes = scope.split()
        elif isinstance(scp, list) and all(isinstance(s, str) for s in scp):
            scopes = list(scp)
        elif isinstance(scp, str):
            scopes = scp.split()
        else:
            scopes = []
        aud = claims.get("aud")
        auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        resource = next((a for a in auds if a in self.audience), None)
        client = claims.get("client_id", claims.get("azp", ""))
        subject = claims.get("sub")
        exp = claims.get("exp")
        try:
            return AccessToken(
                token=token,
                client_id=client if isinstance(client, str) else "",
                scopes=scopes,
                expires_at=int(exp) if isinstance(exp, (int, float)) else None,
                resource=resource,
                subject=subject if isinstance(subject, str) else None,
                claims={"iss": claims.get("iss")},
            )
        except Exception:
            return None

    async def _key(self, kid: str | None) -> Any:
        """The key for `kid` (a set of one key serves tokens without a kid)."""
        if self._url is not None and self._stale(kid):
            await self._refresh(kid)
        found = self._keys.get(kid)
        if found is None and kid is None and len(self._keys) == 1:
            found = next(iter(self._keys.values()))
        return found

    def _stale(self, kid: str | None) -> bool:
        age = time.monotonic() - self._fetched
        return age > self.cache_seconds or (kid not in self._keys and age > _REFETCH_AFTER)

    async def _refresh(self, kid: str | None) -> None:
        """Fetch the JWKS again: one fetch at a time (the requests that need it meanwhile
        wait for that one), the whole of it within `timeout`; a failure keeps the old keys."""
        loop = asyncio.get_running_loop()
        fetch = self._fetch
        if fetch is None or fetch.done() or fetch.get_loop() is not loop:
            if not self._stale(kid):
                return  # fetched meanwhile (or being fetched on another event loop)
            self._fetched = time.monotonic()
            fetch = self._fetch = loop.create_task(self._download())
        await asyncio.shield(fetch)  # a caller that goes away leaves the fetch to the others

    async def _download(self) -> None:
        try:
            # A deadline over the whole download: a socket timeout bounds each read only,
            # and a key server sending a byte at a time would hold every request for minutes.
            body = await asyncio.wait_for(self._get(str(self._url)), self.timeout)
            self._keys = self._key_set(json.loads(body), "the JWKS")
        except Exception as exc:  # unreachable, slow, malformed: tokens wait for the next try
            _log.warning("the JWKS at %s could not be fetched (%s)", self._url, type(exc).__name__)

    async def _get(self, url: str) -> bytes:
        import httpx2  # the SDK's HTTP client (a dependency of `mcp`)

        client = httpx2.AsyncClient(timeout=self.timeout, follow_redirects=True, max_redirects=3)
        async with (
            client as http,
            http.stream("GET", url, headers={"Accept": "application/json"}) as answer,
        ):
            answer.raise_for_status()
            _jwks_url(str(answer.url))  # a redirect may not leave https (or loopback)
            chunks: list[bytes] = []
            size = 0
            async for chunk in answer.aiter_bytes():
                size += len(chunk)
                if size > _MAX_JWKS_BYTES:
                    raise ValueError("the JWKS is larger than 1 MiB")
                chunks.append(chunk)
        return b"".join(chunks)


def _jwks_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise UsageError(f"jwks={url!r}: fetch keys over https:// (http:// only on loopback)")
    if not parts.netloc:
        raise UsageError(f"jwks={url!r} is not a URL")
    return url
