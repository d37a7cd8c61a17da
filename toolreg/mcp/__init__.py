"""MCP both ways: serve a registry (any toolset) to any MCP client, mount any MCP server.

Needs the `mcp` extra (`pip install 'toolreg[mcp]'`); `import toolreg` never loads it.

- `serve(toolset, "stdio" | "http", ...)`, `asgi_app(toolset, ...)` (stateless streamable
  HTTP, for uvicorn, Starlette or FastAPI), `build_server(toolset)` (the SDK's `Server`),
  `HttpServer(app)` (an app on a free port, in a background thread); the toolset is a
  `ToolRegistry`, a `Mount` or a view (`combined(registry, prefixed(Mount(url), "a"))`);
- `ResourceServer(JwtVerifier(...), resource=...)` for `auth=`: an OAuth 2.1 resource
  server (verified bearer tokens, per-tool `scopes=`; the `auth` extra for JWTs);
- `TaskOptions(...)` for `tasks=`: tools registered `task="optional" | "required"` run as
  MCP tasks (the tasks extension) for clients that support it;
- `mount(registry, url_or_command, ...)` -> `Mount`, a context manager (`with` or
  `async with`) that keeps the server's tools in the registry while it is open; with
  `pin="tools.lock"`, a tool that changed since it was pinned waits for `Mount.approve`;
  with `oauth=OAuth(...)`, a server that requires OAuth 2.1 (per user with `user=`).
"""

from __future__ import annotations

from .auth import JwtVerifier, ResourceServer
from .cache import ResultCache
from .context import McpRequest
from .errors import McpConnectionError
from .http import McpApp, asgi_app
from .limits import RateLimit
from .mount import Mount, RemoteResult, mount
from .oauth import AssertionRequest, AuthorizationRequest, OAuth
from .pinning import PendingTool
from .server import build_server
from .serving import HttpServer, serve
from .tasks import TaskOptions

__all__ = [
    "AssertionRequest",
    "AuthorizationRequest",
    "HttpServer",
    "JwtVerifier",
    "McpApp",
    "McpConnectionError",
    "McpRequest",
    "Mount",
    "OAuth",
    "PendingTool",
    "RateLimit",
    "RemoteResult",
    "ResourceServer",
    "ResultCache",
    "TaskOptions",
    "asgi_app",
    "build_server",
    "mount",
    "serve",
]
