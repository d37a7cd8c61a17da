"""A toolset over streamable HTTP: an ASGI app, stateless by default, secure by default.

Every request passes the same gate first: the Host and Origin headers (DNS-rebinding
protection, on by default: loopback names only unless `allowed_hosts=` says otherwise) and,
with `token=`, the bearer token (compared in constant time) or, with `auth=`, a token the
verifier accepts (see `auth`; the protected-resource metadata is served without one). Then:

- the hot path — a stateless POST of `tools/call` or `tools/list` on the 2026-07-28 protocol
  or the 2025 ones, that needs no notification stream and no confirmation — is answered
  here, with the SDK's own validation functions, as one JSON response;
- everything else (initialize, `server/discover`, sessions, SSE streams, progress, log
  notifications, elicitation, malformed requests) goes to the SDK's streamable-HTTP
  session manager, unchanged, with the request body replayed.

Both paths answer from the same `ToolService`, so they agree (a test compares them). The
fast path exists because the SDK's general machinery costs about 1 ms of CPU per call,
200 times a dispatch; see `benchmarks/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.inbound import (
    MCP_PARAM_HEADER_PREFIX,
    InboundModernRoute,
    classify_inbound_request,
)
from mcp_types import LOG_LEVEL_META_KEY, SERVER_INFO_META_KEY, methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.authentication import AuthCredentials

from ..errors import ToolregError, UsageError
from ..tool import Tool
from ..toolsets import Toolset
from .auth import (
    Caller,
    ResourceServer,
    address_caller,
    bearer_token,
    resource_server,
    token_caller,
)
from .cache import ResultCache
from .catalog import requested_version
from .context import McpRequest
from .limits import RATE_LIMIT_CODE, Limiter, RateLimit, RateLimitUnavailable
from .server import (
    CALLER_KEY,
    DEFAULT_MAX_THREADS,
    ContextFactory,
    ToolService,
    sdk_server,
    served,
)
from .tasks import TaskOptions

__all__ = [
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "FastRequest",
    "McpApp",
    "asgi_app",
    "fast_request",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
"""Host headers accepted by default (`name:*` is the name with any port)."""
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
"""Origin headers accepted by default (a request without Origin is always accepted)."""

_FAST_METHODS = frozenset({"tools/call", "tools/list"})
_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
_JSON = [(b"content-type", b"application/json")]
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def asgi_app(
    toolset: Toolset,
    *,
    path: str = "/mcp",
    stateless: bool = True,
    context: ContextFactory | None = None,
    token: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    name: str = "toolreg",
    instructions: str | None = None,
    max_threads: int = DEFAULT_MAX_THREADS,
    auth: Any = None,
    rate_limit: RateLimit | None = None,
    cache: ResultCache | None = None,
    tasks: TaskOptions | None = None,
) -> McpApp:
    """The toolset (a `ToolRegistry`, a `Mount`, a view such as `combined(registry,
    prefixed(Mount(url), "remote_"))`) as an ASGI app serving MCP (streamable HTTP) at `path`.

    `stateless=True` (the default) keeps no state between requests, so any number of
    processes behind any load balancer can serve it (`uvicorn app:app --workers 4`).
    `stateless=False` keeps SDK sessions (server-to-client requests on the 2025 protocol).
    `context=` builds each call's `ToolContext.deps` from the `McpRequest` (headers...).
    `token=` requires `Authorization: Bearer <token>` (the scheme in any case, RFC 7235;
    anything else is a 401 with `WWW-Authenticate: Bearer`). `allowed_hosts` / `allowed_origins`
    replace the loopback defaults of the DNS-rebinding protection (`"name:*"`: any port).
    `max_threads` bounds the sync tool calls run at once (threads); more wait for a slot.
    `auth=` makes the app an OAuth 2.1 resource server (a `ResourceServer`, or a
    `JwtVerifier` whose audience is the server's URL; see `toolreg.mcp.auth`): tools
    registered with `scopes=` are listed and callable only with a token holding them.
    `rate_limit=RateLimit("60/min", tools={"search": "10/min"})` limits each caller's
    tool calls (HTTP 429 with `Retry-After`; buckets per process, or shared by every
    process and machine in Redis with `redis=`; see `limits`).
    `cache=ResultCache(ttl=60)` keeps read-only and idempotent tools' results per caller.
    `tasks=TaskOptions(...)` bounds the tools registered `task=` run as MCP tasks.

    `instructions` is the text the server sends clients at initialization, about how to use
    its tools; `name` is the server's name they see.

    Raises:
        UsageError: an option is wrong: a `path` without a leading `/`, an empty `token`,
            both `token=` and `auth=`, tools registered with `scopes=` but no `auth=`, an
            empty allowed host.

    Example:
        app = asgi_app(registry, context=lambda request: {"user": request.headers["x-user"]})
    """
    if rate_limit is not None and not isinstance(rate_limit, RateLimit):
        raise UsageError("rate_limit= takes RateLimit('60/min', tools={'search': '10/min'})")
    if not isinstance(path, str) or not path.startswith("/"):
        raise UsageError(f"path={path!r}: must start with '/', e.g. path='/mcp'")
    if token is not None and (not isinstance(token, str) or not token.strip()):
        raise UsageError("token= must be a non-empty string (or None for no token)")
    if token is not None and auth is not None:
        raise UsageError("pass token= (one shared secret) or auth= (verified tokens), not both")
    protected = None if auth is None else resource_server(auth)
    toolset = served(toolset)
    scoped = [t.name for t in toolset.tools() if t.scopes]
    if scoped and protected is None:
        raise UsageError(
            f"{', '.join(map(repr, scoped))} {'declares' if len(scoped) == 1 else 'declare'} "
            "scopes, which only a verified token can hold, so no client could reach "
            f"{'it' if len(scoped) == 1 else 'them'}: pass auth=ResourceServer(...) "
            "(or register without scopes=)"
        )
    service = ToolService(
        toolset, context, max_threads=max_threads, restricted=True, cache=cache, tasks=tasks
    )
    return McpApp(
        service,
        path=path,
        stateless=stateless,
        token=token,
        auth=protected,
        buckets=None if rate_limit is None else rate_limit.buckets(),
        allowed_hosts=tuple(LOOPBACK_HOSTS if allowed_hosts is None else _strings(allowed_hosts)),
        allowed_origins=tuple(
            LOOPBACK_ORIGINS if allowed_origins is None else _strings(allowed_origins)
        ),
        name=name,
        instructions=instructions,
    )


def _strings(values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        return [values]
    out = list(values)
    if not all(isinstance(v, str) and v for v in out):
        raise UsageError("allowed_hosts / allowed_origins must be non-empty strings")
    return out


class McpApp:
    """The ASGI app `asgi_app` returns. Run it under any ASGI server; mounted inside another
    Starlette/FastAPI app, give that app `lifespan=mcp_app.lifespan` (it runs the SDK's
    session manager, which everything but the fast path needs).

    Build it with `asgi_app`, which checks the options; the arguments here (`service`,
    `path`, `stateless`, `token`, `auth`, `buckets`, `allowed_hosts`, `allowed_origins`,
    `name`, `instructions`) are the checked values `asgi_app` passes on.
    """

    def __init__(
        self,
        service: ToolService,
        *,
        path: str,
        stateless: bool,
        token: str | None,
        auth: ResourceServer | None = None,
        buckets: Limiter | None = None,
        allowed_hosts: tuple[str, ...],
        allowed_origins: tuple[str, ...],
        name: str,
        instructions: str | None,
    ) -> None:
        self.service = service
        self.path = path
        self.stateless = stateless
        self._token = (
            None if token is None else token.encode()
        )  # raw header bytes: a UTF-8 token matches as sent
        self._hosts = allowed_hosts
        self._origins = allowed_origins
        self.auth = auth
        self._buckets = buckets
        self._metadata_paths = (
            frozenset()
            if auth is None
            else frozenset({auth.metadata_path, "/.well-known/oauth-protected-resource"})
        )
        self.server = sdk_server(service, name=name, instructions=instructions)
        self._sdk = self.server.streamable_http_app(
            streamable_http_path=path,
            stateless_http=stateless,
            transport_security=TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=list(allowed_hosts),
                allowed_origins=list(allowed_origins),
            ),
        )
        self._stamp = self.server.server_info_stamp
        self._header_tools: dict[str, tuple[Tool, bool]] = {}

    @property
    def session_manager(self) -> StreamableHTTPSessionManager:
        return self.server.session_manager

    def lifespan(self, app: object = None) -> AbstractAsyncContextManager[None]:
        """The SDK session manager's lifetime, for a host app's `lifespan=`."""
        return self.session_manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan (and websockets, refused by the SDK's app)
            await self._sdk(scope, receive, send)
            return
        headers, unusual = _read_headers(scope["headers"])
        route = _route_path(scope)
        if self.auth is not None and route in self._metadata_paths and scope["method"] == "GET":
            await self._metadata(self.auth, headers, send)
            return
        refusal = self._refusal(headers)
        if refusal is not None:
            await _respond(send, *refusal)
            return
        caller = await self._caller(headers, scope)
        if not isinstance(caller, Caller):
            await _respond(send, *caller)
            return
        scope[CALLER_KEY] = caller
        limited = self._buckets is not None
        if (self.stateless or limited) and scope["method"] == "POST" and route == self.path:
            body = await _read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
            if body is None:
                await _respond(send, 413, b"Request body too large")
                return
            message = _message(body)  # parsed once, for the limits and the fast path
            over = (
                None if self._buckets is None else await _over_limit(self._buckets, message, caller)
            )
            if over is not None:
                await _respond(send, *over)
                return
            answer = (
                None
                if not self.stateless
                else (
                    None
                    if unusual
                    else await _unless_gone(self._fast(headers, message, caller), receive)
                )
            )
            if answer is _GONE:
                return  # the client disconnected: the call was cancelled, nobody to answer
            if isinstance(answer, bytes):
                await _respond(send, 200, answer, _JSON)
                return
            receive = _replay(body, receive)
        if caller.token is None:
            await self._sdk(scope, receive, send)
            return
        # the SDK's view of the caller: its session ownership checks and get_access_token()
        user = AuthenticatedUser(caller.token)
        scope["user"], scope["auth"] = user, AuthCredentials(list(caller.token.scopes))
        reset = auth_context_var.set(user)
        try:
            await self._sdk(scope, receive, send)
        finally:
            auth_context_var.reset(reset)

    # -- the gate ------------------------------------------------------------------------
    def _refusal(self, headers: Mapping[str, str]) -> tuple[int, bytes, list[Any]] | None:
        if not _allowed(headers.get("host"), self._hosts):
            return 421, b"Invalid Host header", []
        origin = headers.get("origin")
        if origin and not _allowed(origin, self._origins):
            return 403, b"Invalid Origin header", []
        if self._token is not None:
            given = bearer_token(headers.get("authorization", ""))
            raw = None if given is None else given.encode("latin-1")
            if raw is None or not hmac.compare_digest(raw, self._token):
                return 401, b"Unauthorized", [(b"www-authenticate", b"Bearer")]
        return None

    async def _caller(
        self, headers: Mapping[str, str], scope: Scope
    ) -> Caller | tuple[int, bytes, list[Any]]:
        """Who sent the request (its verified token, else its address), or the 401/403 to
        answer. A refusal says where the metadata is and the error's name, nothing more."""
        auth = self.auth
        if auth is None:
            return address_caller(scope.get("client"))
        given = headers.get("authorization")
        token = None if given is None else bearer_token(given)
        access = None if token is None else await auth.verify(token)
        if access is None:
            error = None if given is None else "invalid_token"
            return 401, b"Unauthorized", [(b"www-authenticate", auth.challenge(error))]
        missing = [s for s in auth.required_scopes if s not in access.scopes]
        if missing:
            challenge = auth.challenge("insufficient_scope", " ".join(auth.required_scopes))
            return 403, b"Forbidden", [(b"www-authenticate", challenge)]
        return token_caller(access)

    async def _metadata(self, auth: ResourceServer, headers: Mapping[str, str], send: Send) -> None:
        """The protected-resource metadata (RFC 9728): public, so no token and any Origin."""
        if not _allowed(headers.get("host"), self._hosts):
            await _respond(send, 421, b"Invalid Host header")
            return
        document = auth.metadata(self.service.catalog.scopes())
        await _respond(
            send,
            200,
            _ENCODER.encode(document).encode(),
            [*_JSON, (b"access-control-allow-origin", b"*")],
        )

    # -- the fast path -------------------------------------------------------------------
    async def _fast(
        self, headers: Mapping[str, str], message: object, caller: Caller
    ) -> bytes | None:
        """The response to a plain stateless `tools/call` or `tools/list` (`message`: the
        parsed body), or None to leave the request to the SDK (which then answers it,
        errors included, its own way)."""
        request = _fast_request(headers, message)
        if request is None:
            return None
        if request.method == "tools/list":
            listed = types.ListToolsResult.model_validate(self.service.list_result(caller))
            dumped = listed.model_dump(by_alias=True, mode="json", exclude_none=True)
            result = methods.serialize_server_result(request.method, request.version, dumped)
        else:
            called = await self._call(request, headers, caller)
            if called is None:
                return None
            result = called
        if request.version in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"
            result["_meta"] = {SERVER_INFO_META_KEY: self._stamp}  # the SDK's stamp (2026)
        envelope = {"jsonrpc": "2.0", "id": request.request_id, "result": result}
        return _ENCODER.encode(envelope).encode()

    async def _call(
        self, request: FastRequest, headers: Mapping[str, str], caller: Caller
    ) -> dict[str, Any] | None:
        version = requested_version(request.params.get("_meta"))
        tool = self.service.tool_for(request.params["name"], caller, version)
        if tool is None or tool.needs_confirmation or tool.task or self._declares_headers(tool):
            return None  # the SDK's path: an unknown-tool error, elicitation, tasks, headers
        if request.version not in MODERN_PROTOCOL_VERSIONS and _may_log(tool):
            return None  # 2025: its `ctx.log` lines go to every call, on the SDK's stream

        def about() -> McpRequest:
            return McpRequest(
                transport="http",
                tool=tool.name,
                protocol_version=request.version,
                headers=dict(headers),
                client=request.client,
                token=caller.token,
            )

        arguments = request.params.get("arguments")
        try:
            meta = request.params.get("_meta")
            result = await self.service.call(
                tool,
                arguments,
                about,
                call_id=None,
                meta=meta if isinstance(meta, dict) else None,
                caller=caller,
            )
        except ToolregError:  # a missing context: raised before the tool ran; the SDK's
            return None  # path raises it again and answers with its internal error
        return self.service.result(tool, result)

    def _declares_headers(self, tool: Tool) -> bool:
        """Whether the tool's schema maps arguments to `Mcp-Param-*` headers (the SDK then
        checks those headers; toolreg's own schemas never declare any)."""
        known = self._header_tools.get(tool.name)
        if known is None or known[0] is not tool:
            declares = "x-mcp-header" in json.dumps(tool.parameters, default=str)
            known = self._header_tools[tool.name] = (tool, declares)
        return known[1]


def _may_log(tool: Tool) -> bool:
    """Whether the tool gets a `ToolContext` (it may send log lines with `ctx.log`)."""
    return any(kind == "context" for _, kind in tool.plan.context)


@dataclass(frozen=True, slots=True)
class FastRequest:
    """A stateless request the fast path answers: valid by the SDK's own checks, asking for
    no notification stream."""

    request_id: int | str
    method: str  # "tools/call" or "tools/list"
    version: str
    params: dict[str, Any]
    client: dict[str, Any] | None = None


def fast_request(headers: Mapping[str, str], body: bytes) -> FastRequest | None:
    """The request in `body` if the fast path may answer it, else None (the SDK will).

    A single JSON-RPC `tools/call` or `tools/list` (first page) on a protocol version the
    SDK serves, that a client able to take either a JSON or an SSE answer sent as JSON,
    whose envelope (2026-07-28) and params pass the SDK's `classify_inbound_request` and
    `validate_client_request`, and that asks for no progress or log notifications.
    """
    return _fast_request(headers, _message(body))


_NOT_JSON = object()


def _message(body: bytes) -> object:
    """The request body parsed, or `_NOT_JSON`."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _fast_request(headers: Mapping[str, str], message: object) -> FastRequest | None:
    version = headers.get("mcp-protocol-version")
    if version is None or not _accepts(headers):
        return None
    if type(message) is not dict or message.get("jsonrpc") != "2.0":
        return None
    request_id, method, params = message.get("id"), message.get("method"), message.get("params")
    if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
        return None
    if method not in _FAST_METHODS:
        return None
    client = None
    if version in MODERN_PROTOCOL_VERSIONS:
        route = classify_inbound_request(message, headers=headers)
        if not isinstance(route, InboundModernRoute):
            return None
        client = route.client_info if isinstance(route.client_info, dict) else None
    elif version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    try:
        methods.validate_client_request(method, version, params)
    except Exception:  # malformed: the SDK answers with the right error
        return None
    params = params if type(params) is dict else {}
    meta = params.get("_meta") or {}
    if "progressToken" in meta or LOG_LEVEL_META_KEY in meta:
        return None  # the client wants notifications: the SDK streams them
    if method == "tools/list" and params.get("cursor") is not None:
        return None
    if method == "tools/call" and not _CALL_KEYS.issuperset(params):
        return None  # e.g. the answers of an elicitation (inputResponses)
    return FastRequest(request_id, method, version, params, client)


_ROUTING = frozenset({b"mcp-protocol-version", b"mcp-method", b"mcp-name"})
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower().encode()


def _read_headers(raw: Iterable[tuple[bytes, bytes]]) -> tuple[dict[str, str], bool]:
    """The request's headers (the first of repeated ones, as Starlette reads them), and
    whether any is unusual for the fast path: a repeated routing header (the SDK refuses
    it) or an `Mcp-Param-*` header (the SDK checks it against the tool's schema)."""
    headers: dict[str, str] = {}
    unusual = False
    for key, value in raw:
        name = key.decode("latin-1")
        if name in headers:
            unusual = unusual or key in _ROUTING
            continue
        headers[name] = value.decode("latin-1")
        if key.startswith(_PARAM_PREFIX):
            unusual = True
    return headers, unusual


async def _over_limit(
    buckets: Limiter, message: object, caller: Caller
) -> tuple[int, bytes, list[Any]] | None:
    """The 429 for a `tools/call` (`message`: the parsed body) over one of the caller's
    limits, the 503 when the limits cannot be checked (shared buckets), else None."""
    if type(message) is not dict or message.get("method") != "tools/call":
        return None  # not a call (or not JSON): the SDK answers it
    params = message.get("params")
    name = params.get("name") if type(params) is dict else None
    try:
        wait, which = await buckets.take(caller.identity, name if isinstance(name, str) else "")
    except RateLimitUnavailable:
        status, seconds = 503, 1
        text = "Rate limits cannot be checked right now (their store does not answer)"
    else:
        if not wait:
            return None
        status, seconds = 429, max(1, math.ceil(wait))
        text = f"Rate limit exceeded: {buckets.describe(which)}"
    request_id = message.get("id")
    error = {
        "code": RATE_LIMIT_CODE,
        "message": f"{text}; retry after {seconds} s.",
        "data": {"retryAfter": seconds},
    }
    shown_id = (
        request_id
        if isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
        else None
    )
    envelope = {"jsonrpc": "2.0", "id": shown_id, "error": error}
    headers = [*_JSON, (b"retry-after", str(seconds).encode())]
    return status, _ENCODER.encode(envelope).encode(), headers


def _accepts(headers: Mapping[str, str]) -> bool:
    """A JSON body, and a client that takes both JSON and SSE answers (the SDK's rule)."""
    content_type = headers.get("content-type", "").lower()
    accept = headers.get("accept", "")
    return (
        content_type.startswith("application/json")
        and "application/json" in accept
        and "text/event-stream" in accept
    )


def _allowed(value: str | None, patterns: tuple[str, ...]) -> bool:
    """The SDK's rule: an exact match, or `base:*` for `base` with any port."""
    if not value:
        return False
    for pattern in patterns:
        if value == pattern:
            return True
        if (
            pattern.endswith(":*")
            and value.startswith(pattern[:-1])
            and value[len(pattern) - 1 :].isdigit()
        ):
            return True
    return False


def _route_path(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


_GONE = object()


async def _unless_gone(work: Awaitable[bytes | None], receive: Receive) -> bytes | object | None:
    """`work`'s outcome, or `_GONE` once the client has disconnected (`work` is then
    cancelled; an async tool gets `CancelledError`). The request body has been read, so
    all `receive` can still say is `http.disconnect`."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:  # also when the server itself cancels us (shutdown)
        if not task.done():
            task.cancel()
        if not gone.done():
            gone.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    with contextlib.suppress(asyncio.CancelledError):
        await task  # the tool winds down (its finally blocks, its span ends)
    return _GONE


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _respond(send: Send, status: int, body: bytes, headers: list[Any] | None = None) -> None:
    start_headers = [*(headers or [(b"content-type", b"text/plain; charset=utf-8")])]
    start_headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})
