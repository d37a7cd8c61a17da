"""One mount, many users: a `Mount(url, credentials=...)` calls the server as the user each
call's context names, with that user's bearer token.

An MCP session belongs to one connection, and the SDK's HTTP transport sends a session's
requests from its own task, where nothing of the caller is seen; a server may also bind a
session to the user who opened it, and sends a session's notifications and questions to
that one user. So each user gets a session of their own (not a per-request header on a
shared one): opened on the user's first call, its HTTP client sending the user's token
with every request (`CredentialAuth`: the token `Credentials` keeps until it expires, a
fresh one asked for once when the server answers 401), kept while used, and closed when it
has been idle `IDLE_SECONDS`, or when `max_sessions` are open and another user calls (the
least recently used idle one goes). A session in use is never closed under its call.

The mount's own session (the one that lists the tools and hears of their changes) is
opened with the credential for no user (`context=None`: a service account's, or none).
A user whose provider answers None gets an observation saying so, and no session.

How a session authenticates is an `Authority`: `Bearer` (a `Credentials` provider's tokens,
above) or OAuth (`Mount(url, oauth=OAuth(..., user=...))`, `toolreg.mcp.oauth`: each
user's tokens from the authorization flow, kept in a store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Generator, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2

from ..errors import ToolError, ToolFailed
from ..sources.credentials import CredentialRequest, Credentials, Secret, scrub
from .errors import McpConnectionError

__all__ = ["IDLE_SECONDS", "Authority", "Bearer", "CredentialAuth", "SessionAuth", "UserSessions"]

_log = logging.getLogger("toolreg.mcp")

IDLE_SECONDS = 300.0
"""A user's session unused this long is closed (at the next call of anyone)."""
SCHEME = "mcp"
"""`CredentialRequest.scheme` of a mount's bearer token."""


class SessionAuth(Protocol):
    """The httpx authentication of one session, and what it learnt: `refused` (the server
    answered 401 to the freshest credential there was), `problem` (why this user cannot be
    authenticated, in words a model may read; None: no such problem), `used` (every secret
    sent or received, to scrub from what comes back)."""

    refused: bool
    problem: str | None

    @property
    def used(self) -> dict[str, Secret]: ...

    def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]: ...


class Authority(Protocol):
    """How the sessions of one mount's users are authenticated."""

    def user_of(self, context: Any) -> Hashable:
        """Who `context` is (the key of their session)."""
        ...

    async def admit(self, context: Any, local: str, server: str) -> None:
        """Raise `ToolFailed` when the user of `context` cannot call the tool `local` of
        `server` at all (no credential); before any session is opened."""
        ...

    def auth(self, context: Any) -> SessionAuth:
        """The authentication of a new session of the user of `context` (None: the mount's
        own session)."""
        ...


class Bearer:
    """`Authority` of `Mount(credentials=...)`: each user's bearer token from `credentials`."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def user_of(self, context: Any) -> Hashable:
        return self.credentials.user_of(context)

    async def admit(self, context: Any, local: str, server: str) -> None:
        secret = await self.credentials.aget(CredentialRequest(context, SCHEME, "bearer", local))
        if secret is None:
            raise ToolFailed(
                f"Tool '{local}' needs a credential for the MCP server {server} that the "
                "current user does not have: ask the user to sign in or connect the account first."
            )

    def auth(self, context: Any) -> CredentialAuth:
        return CredentialAuth(self.credentials, context)


class CredentialAuth(httpx2.Auth):
    """httpx authentication with the bearer token of the user `context` (see the module)."""

    def __init__(self, credentials: Credentials, context: Any) -> None:
        self.credentials = credentials
        self.context = context
        self.refused = False  # the server answered 401 to the freshest token there was
        self.problem: str | None = None  # (a bearer token has no other problem)
        self.used: dict[str, Secret] = {}  # every token sent, to scrub from what comes back

    def _header(self, request: httpx2.Request, secret: Secret | None) -> None:
        if secret is None:
            request.headers.pop("Authorization", None)
            return
        self.used.setdefault(secret.value, secret)
        request.headers["Authorization"] = f"Bearer {secret.value}"

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        ask = CredentialRequest(self.context, SCHEME, "bearer")
        secret = await self.credentials.aget(ask)
        self._header(request, secret)
        response = yield request
        if response.status_code == 401:
            fresh = await self.credentials.aget(
                CredentialRequest(self.context, SCHEME, "bearer", refresh=True)
            )
            if fresh is not None and (secret is None or fresh.value != secret.value):
                self._header(request, fresh)
                response = yield request
        self.refused = response.status_code == 401

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, Any, None]:
        raise RuntimeError("a mount's connections are async")  # pragma: no cover


@dataclass(eq=False)
class _Session:
    key: Hashable
    auth: SessionAuth
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    client: Any = None
    owner: asyncio.Task[None] | None = None
    busy: int = 0
    last_used: float = field(default_factory=time.monotonic)


Opener = Callable[[SessionAuth], contextlib.AbstractAsyncContextManager[Any]]
"""Opens a connected SDK `Client` whose HTTP requests carry `auth` (the mount knows how)."""


class UserSessions:
    """The per-user sessions of one mount (see the module); lives on the mount's loop."""

    def __init__(
        self,
        authority: Authority,
        open_client: Opener,
        label: Callable[[], str],
        max_sessions: int,
        connect_timeout: float,
    ) -> None:
        self.authority = authority
        self.max_sessions = max_sessions
        self._open_client = open_client
        self._label = label
        self._connect_timeout = connect_timeout
        self._sessions: OrderedDict[Hashable, _Session] = OrderedDict()
        self._opening: dict[Hashable, asyncio.Future[_Session]] = {}

    def catalog_auth(self) -> SessionAuth:
        """The authentication of the mount's own session (no user: `context=None`)."""
        return self.authority.auth(None)

    @property
    def open_users(self) -> list[Hashable]:
        """The users with a session open now, least recently used first."""
        return list(self._sessions)

    async def call(
        self,
        local: str,
        deps: Any,
        run: Callable[[Any], Any],
    ) -> Any:
        """`run(client)` on the session of the user `deps` (opened if need be): the result
        with every token of that user scrubbed from its text, and failures told as such."""
        key = self.authority.user_of(deps)
        await self.authority.admit(deps, local, self._label())
        self._close_idle()
        session = await self._session(key, deps, local)
        session.busy += 1
        try:
            result = await run(session.client)
        except Exception as exc:
            refusal(session.auth, local)  # even after a fresh token: the server's 401 says it
            scrub_failure(exc, session.auth.used.values())
            raise
        finally:
            session.busy -= 1
            session.last_used = time.monotonic()
        return scrubbed(result, session.auth.used.values())

    async def sign_in(self, deps: Any) -> None:
        """Open the session of the user `deps` now, outside any call (with OAuth, they
        authorize now if need be); `McpConnectionError` says why it could not be opened."""
        key = self.authority.user_of(deps)
        self._close_idle()
        await self._session(key, deps, None)

    def sign_out(self, deps: Any) -> bool:
        """Close the session of the user `deps` (when idle: else after its calls); True if
        there was one."""
        session = self._sessions.get(self.authority.user_of(deps))
        if session is None:
            return False
        self._close(session)
        return True

    def lost(self, client: Any) -> bool:
        """Forget the session whose `client` broke (the next call opens another); False when
        `client` is no user's."""
        for key, session in list(self._sessions.items()):
            if session.client is client:
                del self._sessions[key]
                session.stop.set()
                return True
        return False

    async def _session(self, key: Hashable, deps: Any, local: str | None) -> _Session:
        session = self._sessions.get(key)
        if session is not None and session.client is not None:
            self._sessions.move_to_end(key)
            return session
        opening = self._opening.get(key)
        if opening is not None:  # another call of this user is opening it
            return await asyncio.shield(opening)
        future: asyncio.Future[_Session] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            session = await self._open(key, deps, local)
            future.set_result(session)
            return session
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: whoever waits gets it too
            raise
        finally:
            del self._opening[key]

    async def _open(self, key: Hashable, deps: Any, local: str | None) -> _Session:
        """The user's session, open; what the call of `local` reads when it cannot be (or,
        for `sign_in`, `local=None`, an `McpConnectionError`)."""
        self._make_room()
        session = _Session(key, self.authority.auth(deps))
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        session.owner = asyncio.ensure_future(self._own(session, ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self._connect_timeout)
        except BaseException as exc:
            session.stop.set()
            session.owner.cancel()
            with contextlib.suppress(BaseException):
                await session.owner
            if isinstance(exc, asyncio.CancelledError):
                raise  # the call gave up (its time limit): it says so itself
            reason = type(exc).__name__
            if local is None:
                why = session.auth.problem or (
                    "the server refused this user's credential (HTTP 401)"
                    if session.auth.refused
                    else f"could not open a session ({reason})"
                )
                raise McpConnectionError(
                    f"cannot sign in to the MCP server {self._label()}: {why}"
                ) from None
            refusal(session.auth, local)
            raise ToolError(
                f"Tool '{local}' failed: could not open a session on the MCP server for this "
                f"user ({reason})."
            ) from None
        self._sessions[key] = session
        return session

    async def _own(self, session: _Session, ready: asyncio.Future[None]) -> None:
        """Open the user's client, and keep it until `stop` (the task that opened an anyio
        scope must be the one that closes it)."""
        try:
            async with self._open_client(session.auth) as client:
                session.client = client
                ready.set_result(None)
                await session.stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
                ready.exception()
            elif not isinstance(exc, asyncio.CancelledError):
                _log.info("a user's session on %s ended: %s", self._label(), type(exc).__name__)
        finally:
            session.client = None
            if self._sessions.get(session.key) is session:
                del self._sessions[session.key]

    def _make_room(self) -> None:
        """Close the least recently used idle sessions past `max_sessions - 1`."""
        idle = [s for s in self._sessions.values() if s.busy == 0]
        excess = len(self._sessions) + 1 - self.max_sessions
        for session in idle[: max(0, excess)]:
            self._close(session)

    def _close_idle(self) -> None:
        now = time.monotonic()
        for session in list(self._sessions.values()):
            if session.busy == 0 and now - session.last_used > IDLE_SECONDS:
                self._close(session)

    def _close(self, session: _Session) -> None:
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]
        session.stop.set()

    async def close(self, timeout: float) -> None:
        """Close every session (the mount is closing)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for session in sessions:
            session.stop.set()
        owners = [s.owner for s in sessions if s.owner is not None]
        if owners:
            _, pending = await asyncio.wait(owners, timeout=timeout)
            for task in pending:
                task.cancel()


def refusal(auth: SessionAuth, local: str) -> None:
    """Raise what the call of `local` tells the model when `auth` was refused (HTTP 401) or
    could not authenticate the user (`problem`); nothing when neither."""
    if auth.problem is not None:
        raise ToolFailed(f"Tool '{local}' failed: {auth.problem}") from None
    if auth.refused:
        raise ToolFailed(
            f"Tool '{local}' failed: the MCP server refused this user's credential (HTTP 401)."
        ) from None


def scrub_failure(exc: Exception, secrets: Any) -> None:
    """A call's failure with the user's tokens scrubbed from what the model reads of it (a
    `ToolError`'s message, a `RemoteFailure`'s server text)."""
    found = list(secrets)
    for attribute in ("message", "text"):
        text = getattr(exc, attribute, None)
        if isinstance(text, str):
            cleaned = scrub(text, found)
            if cleaned != text:
                setattr(exc, attribute, cleaned)
                exc.args = (cleaned,)


def scrubbed(result: Any, secrets: Any) -> Any:
    """A mounted tool's `RemoteResult` with the tokens in `secrets` scrubbed from its text
    (structured content and blocks too, as JSON text)."""
    import dataclasses
    import json

    found = list(secrets)
    text = getattr(result, "text", None)
    if not found or not isinstance(text, str):
        return result
    changes: dict[str, Any] = {"text": scrub(text, found)}
    for name in ("structured", "content"):
        value = getattr(result, name, None)
        if value is not None:
            dumped = json.dumps(value, ensure_ascii=False)
            cleaned = scrub(dumped, found)
            if cleaned != dumped:
                changes[name] = json.loads(cleaned)
                if name == "content":
                    changes[name] = tuple(changes[name])
    return dataclasses.replace(result, **changes)
