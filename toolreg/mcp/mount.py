"""Any MCP server's tools as a toolset: a `Mount` holds them, and writes nothing anywhere.

```python
with Mount("http://127.0.0.1:8000/mcp") as remote:
    tools = combined(registry, prefixed(remote, "remote"))   # a name clash fails here
    tools.dispatcher.dispatch_tool("remote_add", '{"a": 2, "b": 3}')  # checked here, run there
    Conversation(client, model, registry=tools)
```

A `Mount` is a `Toolset` (`toolreg.toolsets`): `tools()`, `get(name)`, `offer(step)`,
`search_tools(query)`, `revision` (it grows with every refresh that changes the tools) and
`dispatcher` (the default registry's dispatch settings; combined with a registry first,
that registry's). Several mounts at once, each prefixed its own way, combine like any
toolsets. `mount(registry, server, ...)` (or `Mount(registry, server, ...)`) is the older
form, kept as a thin compatibility path: the mount's tools are also registered in that
registry while it is open (a taken name fails the mount), follow each refresh there, and
are unregistered when it closes; its calls are dispatched under that registry's settings.

Each remote tool becomes a `Tool.from_schema` tool: exported to every format, offered by
`Conversation`, dispatched with every local step. Its arguments are validated against the
server's `inputSchema` (compiled like any schema, coerced like any call) before anything
is sent; its result is the server's text (`ToolResult.value` is a `RemoteResult` with the
structured content too); a result with `isError` is an `execution_error` with the server's
text, which the model reads under the registry's `errors=` like a local exception's message
(`results`); structured content against the tool's `outputSchema` fails that call alone;
the call is bounded by `timeout`; a server that dies mid-call gives an error result at once.
`readOnlyHint` and `destructiveHint` become `read_only` and `destructive` (MCP's default: a
tool that says nothing may destroy, so it needs `confirm=` like any local one).
A call that the server answers with an MCP task (the tasks extension, see `tasks`) is
polled to its end within the same `timeout`: the task's status messages are the call's
`ToolContext.report_progress` (so are an inline call's progress notifications), and a call
that times out or whose caller is cancelled sends `tasks/cancel`; it is never sent twice.
When a server asks to confirm a call of a tool that needs confirmation here (so the local
`confirm=` already approved every call of it that was sent), with toolreg's own question,
while such a call is on its way, the mount answers yes; any other elicitation it declines.

A `Mount` is a context manager both ways. `with` runs the connection on an event loop of its
own, in a background thread, so plain scripts and sync `dispatch_tool` work; `async with`
runs it on the caller's loop (dispatch with `adispatch_tool` there). On exit the mount
offers nothing more and the connection is closed. `notifications/tools/list_changed` (or,
on the 2026-07-28 protocol, a `subscriptions/listen` event) refreshes the mounted tools; a
tool whose definition did not change stays the same `Tool` (its schema is not compiled
again, and the search index only reads the tools that did change).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, TextIO

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..dispatch import DispatchSettings
from ..errors import ToolError, ToolregError, UsageError, exception_text
from ..idempotency import META_KEY
from ..params import ToolContext
from ..registry import ToolRegistry, default_registry
from ..sources.credentials import CredentialRequest, Credentials, as_credentials, scrub
from ..telemetry import inject, without_baggage
from ..tool import Tool
from ..toolsets import BaseToolset
from .errors import McpConnectionError
from .oauth import OAuth, OAuthAuth, OAuthUsers
from .pinning import PendingTool, PinFile, Pinning
from .remote_call import Progress, RemoteCalls, RemoteResult
from .remote_tools import RemoteTools
from .results import shown
from .server import asked_about
from .tasks import TasksClient, offers_tasks
from .users import Bearer, UserSessions, refusal, scrub_failure, scrubbed

__all__ = ["Mount", "RemoteResult", "mount"]

_log = logging.getLogger("toolreg.mcp")
_GRACE = 1.0  # the SDK's read timeout runs this much past dispatch's, which reports first
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's own: a response may stream long


class Mount(BaseToolset):
    """The tools of the MCP server `server`, a toolset while the mount is open; use it as
    `with Mount(server) as remote:` or `async with Mount(server) as remote:`.
    `Mount(registry, server, ...)` (and `mount`, the same class) also registers the tools in
    `registry` while open: the older form (see the module).

    `server` is a streamable-HTTP URL, or a stdio command as a list of strings
    (`["uvx", "mcp-server-time"]`; its environment is the SDK's safe default plus `env`).
    `prefix` goes before every remote name; `include` keeps only those remote names;
    `timeout` bounds every call and `connect_timeout` starting, connecting and listing, in
    seconds (a server that does not answer in time fails the mount then, its connection
    stopped at once); `headers` go with every HTTP request (e.g. `{"Authorization": "Bearer ..."}`);
    `errlog` is where a stdio server's stderr goes (a file with a descriptor; default: this
    process's stderr). When traced, each call sends the trace context; `baggage=True` also
    sends the application's OpenTelemetry baggage (off by default: the server is not yours).
    `pin` is a pin file (see `pinning`): a tool new or changed since it was pinned is held
    back (`pending`) until `approve`d; a pin file that does not exist yet pins every tool.

    `credentials` (a `toolreg.sources.Credentials`, HTTP only) calls the server as the user
    each call's `context=` names, with that user's bearer token, on a session of that user's
    own (at most `max_sessions` open; see `toolreg.mcp.users`).

    `oauth` (an `OAuth`, HTTP only) authorizes with a server that requires OAuth 2.1: the
    MCP SDK's flow, tokens kept in the `OAuth`'s store, the user's part in its `authorize`
    callback; with `OAuth(user=...)`, per user like `credentials` (see `toolreg.mcp.oauth`).
    Opening the mount (and a user's session) may then take `connect_timeout` plus the
    `OAuth`'s `authorize_timeout`.

    `trust_annotations` says whose `readOnlyHint` / `destructiveHint` to believe: False (the
    default: every remote tool needs `confirm=`), True (this server's), or a list of remote
    tool names.

    Raises:
        UsageError: an option is wrong (a `prefix` a provider would reject, `include` naming
            tools the server lacks, a `trust_annotations` that is not a bool or names), or
            the mount was already opened.
        McpConnectionError: the server cannot be started, reached or listed (credentials in
            its URL are redacted from the message).
        PinFileError: the pin file cannot be read, or was not written by toolreg, or was
            edited.
    """

    def __init__(
        self,
        where: ToolRegistry | str | Sequence[str],
        server: str | Sequence[str] | None = None,
        *,
        prefix: str = "",
        include: Iterable[str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        trust_annotations: bool | Iterable[str] = False,
        errlog: TextIO | None = None,
        baggage: bool = False,
        pin: str | os.PathLike[str] | None = None,
        credentials: Credentials | Callable[[CredentialRequest], Any] | None = None,
        max_sessions: int = 64,
        oauth: OAuth | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(baggage, bool):
            raise UsageError("baggage= must be True or False")
        self.baggage = baggage
        registry: ToolRegistry | None = None
        if server is None:  # Mount(server, ...): a toolset of its own
            if isinstance(where, ToolRegistry):
                raise UsageError("mount(registry, server): the server is missing")
            server = where
        elif isinstance(where, ToolRegistry):  # mount(registry, server, ...): also in it
            registry = where
        else:
            raise UsageError(
                f"mount(registry, server): the first of two arguments is a ToolRegistry, not "
                f"{type(where).__name__}; or give the server alone: Mount(server)"
            )
        self.timeout = _seconds("timeout", timeout)
        self.connect_timeout = _seconds("connect_timeout", connect_timeout)
        self._catalog = RemoteTools(
            prefix=prefix,
            include=include,
            trust_annotations=trust_annotations,
            timeout=self.timeout,
            label=self._label,
            caller=self._caller,
        )
        self._calls = RemoteCalls(self._label, self._answer_question, self._lost)
        self.registry = registry
        """The registry the tools are also registered in (`mount(registry, server)`), or None."""
        self.server = server
        self._url, self._command = _target(server, env)
        self._headers = None if headers is None else dict(headers)
        self._errlog = errlog
        self._mounted: dict[str, Tool] = {}  # local name -> the Tool this mount offers
        self._revision = 0
        self._client: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._refreshing: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._state = "new"
        if pin is not None and not isinstance(pin, (str, os.PathLike)):
            raise UsageError(f"pin={pin!r}: pass the path of a pin file, e.g. pin='tools.lock'")
        self._pinning = None if pin is None else Pinning(PinFile(pin), self._label)
        self._order: list[str] = []  # the local names of the last listing, held ones too
        self._oauth = self._check_oauth(oauth, credentials)
        self._own_auth: OAuthAuth | None = None  # the mount's own session's, with OAuth
        self._users = self._user_sessions(credentials, max_sessions)

    def __repr__(self) -> str:
        return f"<Mount {self.server!r} {self._state}: {', '.join(self.names) or 'no tools'}>"

    # -- the toolset ----------------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        """What goes before every remote name."""
        return self._catalog.prefix

    @property
    def include(self) -> tuple[str, ...] | None:
        """The remote names kept (None: all)."""
        return self._catalog.include

    @property
    def trust_annotations(self) -> bool | frozenset[str]:
        """Whose annotations are believed: none, all, or those remote tools'."""
        return self._catalog.trust_annotations

    @property
    def refused(self) -> dict[str, str]:
        """Remote tools not mounted, by name (control characters escaped): why."""
        return self._catalog.refused

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"the MCP server {self._label()}"

    @property
    def revision(self) -> int:
        return self._revision

    def tools(self) -> list[Tool]:
        """The mounted tools, in the server's order (none before open, nor after close)."""
        return list(self._mounted.values())

    def get(self, name: str) -> Tool | None:
        return self._mounted.get(name)

    def dispatch_settings(self) -> DispatchSettings:
        registry = self.registry
        return (registry if registry is not None else default_registry).settings

    def _offer(self, tools: dict[str, Tool]) -> None:
        """Offer `tools` from now on (and mirror them into `registry`, if there is one)."""
        registry = self.registry
        if registry is not None:
            for name, tool in self._mounted.items():
                if tools.get(name) is not tool and registry.get(name) is tool:
                    registry.unregister(name)
            for name, tool in tools.items():
                if registry.get(name) is not tool:
                    registry.add(tool, replace=True)
        if list(tools.items()) != list(self._mounted.items()):
            self._mounted = tools
            self._revision += 1

    @property
    def names(self) -> list[str]:
        """The local names of the mounted tools, in the server's order."""
        return list(self._mounted)

    @property
    def users(self) -> list[Any]:
        """The users (`Credentials.user_of` a call's context) with a session of their own open
        now, least recently used first; empty without `credentials=`."""
        return [] if self._users is None else self._users.open_users

    @property
    def connected(self) -> bool:
        return self._client is not None

    @property
    def tasks(self) -> bool:
        """Whether the server offers MCP tasks (the tasks extension, 2026-07-28): a call it
        answers with a task is polled to its end (see the module)."""
        client = self._client
        return client is not None and offers_tasks(client.session)

    @property
    def pending(self) -> dict[str, PendingTool]:
        """The tools a pin file holds back (new, or changed since pinned), by the server's
        name, each with what changed; empty without `pin=`."""
        return {} if self._pinning is None else dict(self._pinning.pending)

    def approve(self, *names: str) -> list[str]:
        """Pin the pending tools `names` (the server's names, as in `pending`) as they are
        now, updating the pin file, and offer them; `approve(*mount.pending)` approves every
        one. Returns their local names."""
        pinning = self._pinning
        if pinning is None:
            raise UsageError("approve() is for a mount with a pin file: mount(..., pin='x.lock')")
        if self._state != "open":
            raise UsageError(f"approve() needs an open mount (this one is {self._state})")
        if not names:
            raise UsageError("approve() needs the names of pending tools: approve(*mount.pending)")
        chosen = list(dict.fromkeys(names))
        loop = self._loop
        if self._thread is None or loop is None:  # on the caller's loop: no refresh runs now
            return self._approve(pinning, chosen)
        # on the mount's own loop, so that no refresh changes the tools meanwhile
        return asyncio.run_coroutine_threadsafe(self._aapprove(pinning, chosen), loop).result()

    async def _aapprove(self, pinning: Pinning, names: list[str]) -> list[str]:
        return self._approve(pinning, names)

    def _approve(self, pinning: Pinning, names: list[str]) -> list[str]:
        unknown = [n for n in names if not isinstance(n, str) or n not in pinning.pending]
        if unknown:
            have = ", ".join(map(repr, pinning.pending)) or "none"
            given = ", ".join(map(shown, unknown))
            raise UsageError(f"approve() got {given}, not pending; the pending tools are: {have}")
        taken = [pinning.pending[n].local for n in names if self._taken(pinning.pending[n].local)]
        if taken:
            raise UsageError(f"approve(): the registry has another tool named {taken[0]!r}")
        tools = {tool.name: tool for tool in pinning.approve(names)}
        order = [n for n in self._order if n in self._mounted or n in tools]
        self._offer({n: self._mounted.get(n) or tools[n] for n in order})
        return list(tools)

    # -- sync: a loop of its own in a background thread ------------------------------------
    def __enter__(self) -> Mount:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> Mount:
        """Connect and mount, from sync code (the connection lives in a background thread)."""
        self._begin()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="toolreg-mcp-mount", daemon=True)
        thread.start()
        self._thread = thread
        try:
            asyncio.run_coroutine_threadsafe(self._start(), loop).result()
        except BaseException:
            self._stop_thread(loop)
            raise
        return self

    def close(self) -> None:
        """Unmount and disconnect (sync); closing twice is harmless."""
        loop, thread = self._loop, self._thread
        if thread is None or loop is None:
            return
        if self._state != "closed":
            future = asyncio.run_coroutine_threadsafe(self._finish(), loop)
            with contextlib.suppress(Exception):
                future.result(self.connect_timeout + 10)
        self._stop_thread(loop)

    def _stop_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._thread = None
        if not loop.is_running():
            loop.close()

    # -- async: the caller's loop ------------------------------------------------------------
    async def __aenter__(self) -> Mount:
        await self.aopen()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aopen(self) -> Mount:
        """Connect and mount on the running event loop."""
        self._begin()
        await self._start()
        return self

    async def aclose(self) -> None:
        """Unmount and disconnect (async); closing twice is harmless."""
        if self._thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.close)
        elif self._state != "closed" and self._loop is not None:
            await self._finish()

    def _begin(self) -> None:
        if self._state != "new":
            raise UsageError("this Mount was already opened; call mount() again for a new one")
        self._state = "opening"

    # -- the connection: one task owns it, start to end --------------------------------------
    async def _start(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._refreshing = asyncio.Lock()
        ready: asyncio.Future[None] = loop.create_future()
        self._owner = loop.create_task(self._own(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self._opening_timeout())
        except BaseException as raised:
            await self._abandon(ready)
            exc = _innermost(raised)
            refused = self._authorization_failure()
            if refused is not None and not isinstance(raised, asyncio.CancelledError):
                raise McpConnectionError(
                    f"cannot mount the MCP server {self._label()}: {refused}"
                ) from None
            if isinstance(exc, ToolregError):
                raise exc from None
            if isinstance(raised, asyncio.CancelledError):
                raise
            if isinstance(raised, asyncio.TimeoutError):
                raise McpConnectionError(
                    f"the MCP server {self._label()} did not answer within "
                    f"{self._opening_timeout():g} s"
                ) from None
            raise McpConnectionError(
                f"cannot mount the MCP server {self._label()}: {self._scrubbed_text(_reason(exc))}"
            ) from exc
        self._state = "open"

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """Open the client, mount the tools, and keep both until `_stop` (or the server ends)."""
        assert self._stop is not None
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self._url is not None:
                    http = await stack.enter_async_context(self._http_client(None))
                    transport: Any = streamable_http_client(self._url, http_client=http)
                else:
                    assert self._command is not None
                    transport = stdio_client(self._command, errlog=self._errlog or _errlog(stack))
                client = await stack.enter_async_context(
                    Client(
                        transport,
                        read_timeout_seconds=max(self.timeout, self.connect_timeout) + _GRACE,
                        message_handler=self._on_message,
                        elicitation_callback=self._answer_elicitation,
                        extensions=[TasksClient()],
                    )
                )
                self._client = client
                await self._refresh(initial=True)
                if not ready.done():
                    ready.set_result(None)
                self._listen_for_changes(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                if isinstance(exc, asyncio.CancelledError):
                    ready.cancel()  # stopped while starting: `_start` has its own reason
                else:
                    ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                _log.warning("the MCP server %s went away: %s", self._label(), _reason(exc))
        finally:
            self._client = None
            for task in list(self._tasks):
                task.cancel()

    async def _abandon(self, ready: asyncio.Future[None]) -> None:
        """A mount that did not open in time (or failed): its owner is stopped at once,
        not given another `connect_timeout` to end (it is waiting on a server that does not
        answer), and no outcome is left unread for asyncio to log."""
        self._state = "closed"
        owner = self._owner
        if owner is not None and not owner.done():
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        if ready.done() and not ready.cancelled():
            ready.exception()  # read: `_start` reports it in its own words
        self._offer({})

    async def _finish(self) -> None:
        """Stop the owner task (the client closes, a stdio server ends) and unmount."""
        self._state = "closed"
        if self._users is not None:
            await self._users.close(self.connect_timeout)
        # the abandoned tasks' tasks/cancel go out before the connection ends
        await self._calls.settle(self.connect_timeout)
        if self._stop is not None:
            self._stop.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), self.connect_timeout)
            except BaseException:
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        self._offer({})

    def _label(self) -> str:
        return _safe_url(self._url) if self._url is not None else " ".join(self.server)

    # -- the tools ----------------------------------------------------------------------------
    async def _refresh(self, initial: bool) -> None:
        """(Re)list the server's tools and make the registry match."""
        client = self._client
        if client is None or self._refreshing is None:
            return
        async with self._refreshing:
            catalog = self._catalog
            remote = await catalog.listed(client, refresh=not initial)
            wanted = catalog.wanted(remote, strict=initial)
            built: dict[str, Tool] = {}
            listed: list[tuple[types.Tool, Tool]] = []
            # The schemas are the server's: checked and compiled in a thread, so that a big
            # one never stalls the event loop (the caller's own, under `async with`).
            for item, tool in await asyncio.to_thread(catalog.built, wanted):
                if self._taken(tool.name):
                    if initial and self.registry is not None:
                        self.registry.add(tool)  # raises DuplicateToolError, naming both
                    _log.warning("skipped the remote tool %r: the name is taken", item.name)
                    continue
                built[tool.name] = tool
                listed.append((item, tool))
            self._order = list(built)
            catalog.warn_of_instructions(listed)
            if self._pinning is not None:  # held back: new, or changed since pinned
                built = {tool.name: tool for tool in self._pinning.sort(listed)}
            self._offer(built)

    def _taken(self, name: str) -> bool:
        """Whether the registry this mount also registers in has another tool `name`."""
        existing = None if self.registry is None else self.registry.get(name)
        return existing is not None and self._mounted.get(name) is not existing

    def _caller(
        self, remote: str, local: str, context: str
    ) -> Callable[..., Awaitable[RemoteResult]]:
        # No return annotation a server would read as an output schema: served again
        # (`toolreg serve` of a toolset with this mount), the tool answers text.
        async def call_remote(**arguments: Any) -> Any:
            ctx: ToolContext[Any] = arguments.pop(context)
            key = ctx.idempotency_key
            return await self._call(remote, local, arguments, ctx.report_progress, ctx.deps, key)

        call_remote.__name__ = call_remote.__qualname__ = f"mcp:{remote}"
        return call_remote

    async def _call(
        self,
        remote: str,
        local: str,
        arguments: dict[str, Any],
        progress: Progress,
        deps: Any = None,
        key: str | None = None,
    ) -> RemoteResult:
        """Run on the mount's loop, from whichever loop dispatch runs the tool on. The
        call's idempotency key goes in the request's `_meta` (`idempotency.META_KEY`)."""
        loop = self._loop
        if self._client is None or loop is None or loop.is_closed():
            raise ToolError(f"Tool '{local}' failed: its MCP server is not connected.")
        meta: dict[str, Any] = {}
        inject(meta, baggage=self.baggage)  # the calling span, for the server to continue
        if key is not None:
            meta[META_KEY] = key
        users = self._users
        if users is None:
            call = self._remote_call(remote, local, arguments, meta or None, progress)
            if self._own_auth is not None:  # OAuth: its tokens out of what the model reads
                call = _scrubbing(call, self._own_auth, local)
        else:  # as the user the call's context names, on their own session (`users`)
            call = users.call(
                local,
                deps,
                lambda client: self._remote_call(
                    remote, local, arguments, meta or None, progress, client=client
                ),
            )
        coro = without_baggage(call, baggage=self.baggage)  # the SDK would inject it too
        if asyncio.get_running_loop() is loop:
            return await coro
        try:
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed meanwhile
            coro.close()
            raise ToolError(f"Tool '{local}' failed: its MCP server is not connected.") from None
        return await asyncio.wrap_future(future)

    async def _remote_call(
        self,
        remote: str,
        local: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None,
        progress: Progress,
        client: Client | None = None,
    ) -> RemoteResult:
        """One call, on `client` (a user's own session) or on the mount's own."""
        client = self._client if client is None else client
        if client is None:
            raise ToolError(f"Tool '{local}' failed: its MCP server is not connected.")
        mounted = self._mounted.get(local)
        confirmed = mounted is not None and mounted.needs_confirmation  # by confirm=, here
        return await self._calls.call(
            client, remote, local, arguments, meta=meta, progress=progress, confirmed=confirmed
        )

    async def _answer_question(self, params: Any) -> types.ElicitResult:
        """A task's `elicitation/create` input request: answered as a direct one is."""
        return await self._answer_elicitation(None, params)

    async def _answer_elicitation(self, context: Any, params: Any) -> types.ElicitResult:
        """Yes to toolreg's confirmation question about a tool whose calls were approved here
        (it needs confirmation here, and one of its calls is on its way); no to anything
        else, whoever asks and whatever for."""
        message = getattr(params, "message", "")
        tool = asked_about(message, getattr(params, "requested_schema", None))
        if tool is not None and self._calls.confirmed(tool):
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="decline")

    # -- per-user sessions (credentials=, see `users`) -------------------------------------------
    def _user_sessions(self, credentials: object, max_sessions: object) -> UserSessions | None:
        provider = as_credentials(credentials, "Mount")
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise UsageError(f"max_sessions={max_sessions!r}: a whole number >= 1")
        oauth = self._oauth
        if provider is None and (oauth is None or oauth.user is None):
            return None
        if self._url is None:
            raise UsageError("credentials= is for an MCP server over HTTP, not a stdio command")
        authority: Any = Bearer(provider) if provider is not None else None
        if oauth is not None:
            authority = OAuthUsers(oauth, self._url, self._label)
        return UserSessions(
            authority, self._user_client, self._label, max_sessions, self._opening_timeout()
        )

    def _http_client(self, auth: Any) -> httpx2.AsyncClient:
        if auth is None:  # the mount's own session
            if self._users is not None:
                auth = self._users.catalog_auth()
            elif self._oauth is not None and self._url is not None:
                auth = self._oauth.auth(self._url, self._label(), None)
            if isinstance(auth, OAuthAuth):
                self._own_auth = auth
        return httpx2.AsyncClient(headers=self._headers, timeout=_HTTP_TIMEOUT, auth=auth)

    @contextlib.asynccontextmanager
    async def _user_client(self, auth: Any) -> Any:
        """A connected client whose requests carry `auth` (one user's session)."""
        assert self._url is not None
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(self._http_client(auth))
            transport = streamable_http_client(self._url, http_client=http)
            yield await stack.enter_async_context(
                Client(
                    transport,
                    read_timeout_seconds=max(self.timeout, self.connect_timeout) + _GRACE,
                    elicitation_callback=self._answer_elicitation,
                    extensions=[TasksClient()],
                )
            )

    def _lost(self, client: Client) -> None:
        """`client`'s connection broke: the mount's own, or a user's session."""
        if client is self._client or self._users is None or not self._users.lost(client):
            self._client = None

    # -- OAuth (oauth=, see `oauth`) ------------------------------------------------------------
    def _check_oauth(self, oauth: object, credentials: object) -> OAuth | None:
        if oauth is None:
            return None
        if not isinstance(oauth, OAuth):
            raise UsageError(
                f"Mount(oauth=...): an OAuth(...), not {type(oauth).__name__}; e.g. "
                "oauth=OAuth(authorize, redirect_uri='http://127.0.0.1:8765/callback')"
            )
        if self._url is None:
            raise UsageError("oauth= is for an MCP server over HTTP, not a stdio command")
        if credentials is not None:
            raise UsageError(
                "Mount(credentials=..., oauth=...): one or the other (both would set the "
                "Authorization header); per-user OAuth is OAuth(..., user=...)"
            )
        if self._headers is not None and any(k.lower() == "authorization" for k in self._headers):
            raise UsageError("Mount(headers={'Authorization': ...}, oauth=...): OAuth sets it")
        return oauth

    def sign_in(self, context: Any = None) -> None:
        """Open the session of the user of `context` now, outside any call: with
        `OAuth(user=...)`, `authorize` is asked now if the user has no tokens, with
        `authorize_timeout` (a call's own time limit is shorter, `timeout`); their calls
        then find it open. Nothing to do without per-user sessions (the mount's own session
        was authorized when it opened). From sync code (`with Mount(...)`).

        Raises:
            McpConnectionError: the session could not be opened, saying why (the user did
                not authorize, the server refused them...).
            UsageError: the mount is not open, or runs on the caller's loop (`async with`:
                use `await mount.asign_in(context)`).
        """
        self._on_own_loop("sign_in", self._sign_in(context))

    async def asign_in(self, context: Any = None) -> None:
        """`sign_in`, from async code (either kind of mount)."""
        await self._on_any_loop("asign_in", self._sign_in(context))

    def sign_out(self, context: Any = None) -> bool:
        """Close the session of the user of `context` and, with OAuth, delete the tokens kept
        for them (their next call authorizes again); context None: the application's own
        tokens (used by the next mount). True if there was a session or tokens. From sync
        code; `asign_out` from async code."""
        return bool(self._on_own_loop("sign_out", self._sign_out(context)))

    async def asign_out(self, context: Any = None) -> bool:
        """`sign_out`, from async code (either kind of mount)."""
        return bool(await self._on_any_loop("asign_out", self._sign_out(context)))

    async def _sign_in(self, context: Any) -> None:
        if self._users is not None and context is not None:
            await self._users.sign_in(context)

    async def _sign_out(self, context: Any) -> bool:
        closed = self._users is not None and context is not None and self._users.sign_out(context)
        oauth, url = self._oauth, self._url
        forgotten = oauth is not None and url is not None and await oauth.forget(url, context)
        return closed or forgotten

    def _on_own_loop(self, verb: str, coro: Coroutine[Any, Any, Any]) -> Any:
        loop = self._loop
        if self._state != "open" or loop is None or self._thread is None:
            coro.close()
            if self._state == "open":
                raise UsageError(f"{verb}() is for `with Mount(...)`; here, await a{verb}()")
            raise UsageError(f"{verb}() needs an open mount (this one is {self._state})")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def _on_any_loop(self, verb: str, coro: Coroutine[Any, Any, Any]) -> Any:
        loop = self._loop
        if self._state != "open" or loop is None:
            coro.close()
            raise UsageError(f"{verb}() needs an open mount (this one is {self._state})")
        if self._thread is None:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def _opening_timeout(self) -> float:
        """How long opening a session may take: with OAuth, the user may be authorizing."""
        oauth = self._oauth
        return self.connect_timeout + (0.0 if oauth is None else oauth.authorize_timeout)

    def _authorization_failure(self) -> str | None:
        """Why the mount's own session could not be authorized (toolreg's words), if so."""
        auth = self._own_auth
        if auth is None:
            return None
        if auth.problem is not None:
            return auth.problem
        if auth.refused:
            return "the server refused the OAuth access token (HTTP 401)"
        return None

    def _scrubbed_text(self, text: str) -> str:
        auth = self._own_auth
        return text if auth is None else scrub(text, auth.used.values())

    # -- list changes -------------------------------------------------------------------------
    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._spawn(self._refresh(initial=False))

    def _listen_for_changes(self, client: Client) -> None:
        """On the 2026-07-28 protocol, changes come on a `subscriptions/listen` stream (each
        event also reaches `_on_message`); on the 2025 ones, as plain notifications."""
        tools = client.server_capabilities.tools
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS and tools and tools.list_changed:
            self._spawn(self._listen(client))

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _ in subscription:
                    pass  # each event is also delivered to _on_message
        except Exception as exc:
            _log.debug("stopped listening to %s for tool changes: %s", self._label(), _reason(exc))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.warning("refreshing the tools of %s failed: %s", self._label(), task.exception())


mount = Mount
"""`mount(registry, server, ...)`: the older verb, `Mount` itself (see the module)."""


async def _scrubbing(call: Awaitable[RemoteResult], auth: OAuthAuth, local: str) -> RemoteResult:
    """`call`'s result with the OAuth tokens of `auth` scrubbed from its text (and a failure
    to authorize, a step-up declined, told as such)."""
    try:
        result = await call
    except Exception as exc:
        refusal(auth, local)
        scrub_failure(exc, auth.used.values())
        raise
    cleaned: RemoteResult = scrubbed(result, auth.used.values())
    return cleaned


def _safe_url(url: str) -> str:
    """`url` for a message: no user info, and every query value hidden (tokens travel there)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            netloc += f":{parts.port}"
    except ValueError:
        return "(a URL that does not parse)"
    query = "&".join(f"{item.split('=', 1)[0]}=***" for item in parts.query.split("&") if item)
    return shown(urlunsplit((parts.scheme, netloc, parts.path, query, "")), 200)[1:-1]


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{name}={value!r}: must be a positive number of seconds")
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{name}={value!r}: must be a positive number of seconds")
    return float(value)


def _target(
    server: object, env: Mapping[str, str] | None
) -> tuple[str | None, StdioServerParameters | None]:
    if isinstance(server, str):
        if server.startswith(("http://", "https://")):
            return server, None
        raise UsageError(
            f"server={server!r}: pass a streamable-HTTP URL (http://...) or a command as a list "
            "of strings, e.g. ['uvx', 'mcp-server-time']"
        )
    if isinstance(server, Sequence) and server and all(isinstance(a, str) for a in server):
        argv = list(server)
        return None, StdioServerParameters(
            command=argv[0], args=argv[1:], env=None if env is None else dict(env)
        )
    raise UsageError(
        f"server={server!r}: pass a streamable-HTTP URL or a non-empty list of strings"
    )


def _errlog(stack: contextlib.AsyncExitStack) -> TextIO:
    """Where a stdio server's stderr goes: ours, if it is a real file (under a test runner's
    capture it may not be), else nowhere."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None and stream.fileno() >= 0:
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    devnull = open(os.devnull, "w")  # noqa: SIM115 - closed with the connection
    stack.callback(devnull.close)
    return devnull


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups; `exc` when it is none."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _reason(exc: BaseException) -> str:
    """One line about why a connection failed, from inside exception groups too."""
    exc = _innermost(exc)
    text = exception_text(exc, 300)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
