"""Running a toolset's MCP server: stdio, HTTP in the foreground, HTTP in a thread.

HTTP servers listen on a socket made here, with `TCP_NODELAY` set on it (Linux hands the
option down to every accepted connection) and created for the TCP protocol explicitly, so
that asyncio's own `TCP_NODELAY` on accepted sockets applies too. Uvicorn's
`--workers N` socket is made without either; there, each small response waits for the
client's delayed ACK (Nagle's algorithm), about 40 ms a call on loopback. The
`toolreg serve --workers N` path shares this socket with its workers and does not pay it.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import socket
import sys
import threading
from collections.abc import Iterable
from typing import Any, Literal

from mcp.server.stdio import stdio_server

from ..errors import UsageError
from ..toolsets import Toolset
from .cache import ResultCache
from .errors import McpConnectionError
from .http import LOOPBACK_HOSTS, McpApp, asgi_app
from .limits import RateLimit
from .server import DEFAULT_MAX_THREADS, ContextFactory, build_server
from .tasks import TaskOptions

__all__ = [
    "HttpServer",
    "allowed_hosts_for",
    "build_server",
    "listening_socket",
    "run_http",
    "serve",
    "serve_stdio",
]

_WILDCARDS = frozenset({"", "0.0.0.0", "::"})
_BACKLOG = 2048  # uvicorn's default


def serve(
    toolset: Toolset,
    transport: Literal["stdio", "http"] = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    token: str | None = None,
    context: ContextFactory | None = None,
    stateless: bool = True,
    allowed_hosts: Iterable[str] | None = None,
    name: str = "toolreg",
    max_threads: int = DEFAULT_MAX_THREADS,
    auth: Any = None,
    rate_limit: RateLimit | None = None,
    cache: ResultCache | None = None,
    tasks: TaskOptions | None = None,
) -> None:
    """Serve the toolset over MCP until interrupted (stdio: until the client closes it).

    The toolset is a `ToolRegistry`, a `Mount`, or a view: `serve(combined(registry,
    prefixed(Mount(a), "a_"), prefixed(Mount(b), "b_")))` re-exports two mounted servers
    beside local tools (open the mounts first; a name clash fails at `combined`).

    HTTP binds `host` (127.0.0.1 unless told otherwise) and serves at `path`; `token=`
    requires `Authorization: Bearer <token>`; the Host header must name this server
    (`allowed_hosts_for(host)`, or `allowed_hosts=`). Port 0 picks a free port (printed on
    stderr). At most `max_threads` sync tool calls run at once; more wait for a slot.
    HTTP only: `auth=` (an OAuth resource server, see `asgi_app`), `rate_limit=`, `cache=`.
    `tasks=TaskOptions(...)` bounds the tools registered `task=` run as MCP tasks.

    `transport` is `"stdio"` (what desktop clients start) or `"http"` (streamable HTTP).
    `context=` builds each call's `ToolContext.deps` from the `McpRequest`, as for
    `asgi_app`; `stateless=False` keeps SDK sessions between requests.

    Raises:
        UsageError: an unknown `transport`, a port out of range, a `host` that listens on
            every interface without `allowed_hosts=`, or what `asgi_app` refuses.

    Example:
        serve(registry, "http", port=8000, token=os.environ["TOOLREG_MCP_TOKEN"])
    """
    if transport == "stdio":
        server = build_server(
            toolset, name=name, context=context, max_threads=max_threads, tasks=tasks
        )
        serve_stdio(server)
    elif transport == "http":
        app = asgi_app(
            toolset,
            path=path,
            stateless=stateless,
            context=context,
            token=token,
            allowed_hosts=allowed_hosts_for(host) if allowed_hosts is None else allowed_hosts,
            name=name,
            max_threads=max_threads,
            auth=auth,
            rate_limit=rate_limit,
            cache=cache,
            tasks=tasks,
        )
        run_http(app, host=host, port=port, path=path)
    else:
        raise UsageError(f"transport={transport!r}: choose 'stdio' or 'http'")


def serve_stdio(server: Any) -> None:
    """Run an SDK `Server` on this process's stdin and stdout until the client closes them."""
    asyncio.run(_serve_stdio(server))


async def _serve_stdio(server: Any) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def allowed_hosts_for(host: str) -> list[str]:
    """The Host headers a server bound to `host` accepts: loopback names, and `host` itself.

    A wildcard bind (0.0.0.0, ::) has no name to check: pass `allowed_hosts=` (the names
    clients use, e.g. `["mcp.example.com:*"]`).
    """
    if host in _WILDCARDS:
        raise UsageError(
            f"host={host!r} listens on every interface, so the Host header cannot be checked "
            "against it; pass allowed_hosts=['your.server.name:*'] (the names clients use)"
        )
    shown = f"[{host}]" if _is_ipv6(host) else host
    hosts = list(LOOPBACK_HOSTS)
    if shown not in hosts:
        hosts += [f"{shown}:*", shown]
    return hosts


def _is_ipv6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound TCP socket whose accepted connections send small writes at once."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UsageError(f"port={port!r}: must be a whole number from 0 to 65535")
    infos = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(_BACKLOG)  # connections wait in the backlog until the server accepts
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket, path: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def run_http(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    workers: int = 1,
    factory: bool = False,
    log_level: str = "warning",
) -> None:
    """Run an ASGI app under uvicorn on `listening_socket(host, port)` until interrupted.

    With `workers` > 1, `app` must be an import string ("module:attribute"; a factory with
    `factory=True`): uvicorn starts that many processes that share the socket.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UsageError(f"workers={workers!r}: must be a whole number >= 1")
    if workers > 1 and not isinstance(app, str):
        raise UsageError("several workers need the app as an import string, 'module:attribute'")
    sock = listening_socket(host, port)
    config = uvicorn.Config(
        app, workers=workers, factory=factory, log_level=log_level, server_header=False
    )
    print(f"toolreg: serving MCP at {_url(sock, path)}", file=sys.stderr, flush=True)
    server = uvicorn.Server(config)
    if workers == 1:
        server.run(sockets=[sock])
    elif "target" in inspect.signature(Multiprocess).parameters:  # older uvicorn
        Multiprocess(config, target=server.run, sockets=[sock]).run()  # type: ignore[call-arg]
    else:
        Multiprocess(config, sockets=[sock]).run()


class HttpServer:
    """An ASGI app served in a background thread (for tests, demos, notebooks).

    ```python
    with HttpServer(asgi_app(registry)) as server:
        server.url  # http://127.0.0.1:<free port>/mcp
    ```

    Args:
        app: the ASGI app (what `asgi_app` returns, or any other).
        host: the address to bind, loopback by default.
        port: the port; 0 picks a free one (`url` says which).
    """

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        self._host = host
        self._port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self) -> HttpServer:
        import uvicorn

        if self._thread is not None:
            raise UsageError("this HttpServer is already running")
        sock = listening_socket(self._host, self._port)
        path = self.app.path if isinstance(self.app, McpApp) else ""
        self.url = _url(sock, path)
        config = uvicorn.Config(self.app, log_level="warning", server_header=False)
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="toolreg-mcp-http", daemon=True
        )
        self._thread.start()
        while not server.started:
            if not self._thread.is_alive():
                sock.close()
                raise McpConnectionError("the HTTP server stopped while starting (see its log)")
            self._thread.join(0.005)
        return self

    def close(self) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
