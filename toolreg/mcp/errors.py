"""The MCP bridge's own error: a server that cannot be reached, started or listed."""

from __future__ import annotations

from ..errors import ToolregError

__all__ = ["McpConnectionError"]


class McpConnectionError(ToolregError, ConnectionError):
    """An MCP server could not be started, reached or listed (also a `ConnectionError`).

    Raised to the application (by `mount`, `HttpServer`), never to a model: a mounted
    tool whose server goes away answers its calls with an error result instead.
    """
